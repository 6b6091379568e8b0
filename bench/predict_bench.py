#!/usr/bin/python3
"""How well `footprint predict` predicts (issue "Predict a model's footprint before running
it"): every predictor on each committed dataset (data/predict/DEVICE.csv, from
scripts/predict-dataset), leave-one-family-out over the training families, the random split
reported apart, the held-out families (never used in any fit) against a fit on the training
ones, and the measurement's noise floor. Writes each evaluation into docs/prediction.md
(between the predict-eval markers of its device) and trains the shipped predictors
(data/predict/DEVICE-predictor.json):

    /usr/bin/python3 bench/predict_bench.py --build build [--out -] [--no-train]
"""
import argparse
import csv
import json
import os
import pathlib
import subprocess

from doc_block import write_block

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / "data" / "predict"
# device: (the block in docs/prediction.md, how each row was measured, what the noise floor is,
# how to measure again)
DATASETS = {
    "cpu": ("predict-eval",
            "each the lowest p50 of two measurements (three for the 15 models whose two "
            "differed by over 12 %) on this shared 2-core VM (AMD EPYC, OpenBLAS's Cooperlake "
            "kernel), PyTorch and OpenBLAS on one thread, with other builds on the cores",
            "the median spread of a row's p50s (standard deviation over mean)",
            "scripts/predict-dataset --out data/predict/cpu.csv --repeat 2  # about 25 minutes\n"
            "scripts/predict-dataset --out data/predict/cpu.csv --repeat 3 --models M  "
            "# the noisiest again"),
    "h200-141gb": ("predict-eval-h200",
                   "each one run's p50 (2.5 s of queries) on one NVIDIA H200 (PyTorch 2.11, "
                   "CUDA 13, 16 cores), at 224x224 and batches 1 and 32",
                   "no run was repeated there: the median spread of single query latencies "
                   "within a run (standard deviation over mean), an upper bound for the p50's",
                   "scripts/predict-dataset --device cuda --measure-only --work W "
                   "--resolutions 224 --batches 1,32   # on the GPU machine\n"
                   "scripts/predict-dataset --device cuda --merge W/measurements.json "
                   "--resolutions 224 --batches 1,32 --out data/predict/h200-141gb.csv\n"
                   "scripts/predict-dataset --features-of data/predict/h200-141gb.csv "
                   "--out data/predict/h200-141gb.csv   # when the features change"),
    "h100-80gb": ("predict-eval-h100",
                  "each one run's p50 (2.5 s of queries) on one NVIDIA H100 80GB HBM3 (PyTorch "
                  "2.11, CUDA 13, 16 cores), at 224x224 and batches 1 and 32; ResNet-18 and "
                  "MobileNetV3-Large were measured twice (the lower p50 kept)",
                  "the median of the rows' spreads (standard deviation over mean): across the "
                  "two runs for the 4 rows measured twice, else the spread of single query "
                  "latencies within the run, an upper bound for the p50's",
                  "scripts/predict-dataset --device cuda --measure-only --work W "
                  "--resolutions 224 --batches 1,32 --models M   # on the GPU machine\n"
                  "scripts/predict-dataset --device cuda --merge W/measurements.json "
                  "--merge W2/measurements.json --resolutions 224 --batches 1,32 --models M "
                  "--out data/predict/h100-80gb.csv\n"
                  "scripts/predict-dataset --features-of data/predict/h100-80gb.csv "
                  "--out data/predict/h100-80gb.csv   # when the features change"),
}


def pct(x):
    return f"{x:.1f} %"


def row(name, e):
    return (f"| {name} | {pct(e['mean_family_mape_pct'])} | {pct(e['worst_family_mape_pct'])} "
            f"({e['worst_family']}) | {e['within_10pct'] * 100:.0f} % | {e['spearman']:.2f} | "
            f"{e['rows']} |")


def table(title, entries, key):
    out = [f"**{title}**", "",
           "| predictor | mean MAPE over families | worst family | within ±10 % | Spearman | rows |",
           "|---|---:|---:|---:|---:|---:|"]
    out += [row(name, e[key]) for name, e in entries.items() if key in e]
    return out + [""]


def families_table(entries):
    families = sorted(next(iter(entries.values()))["leave_one_family_out"]["family_mape_pct"])
    out = ["| family | " + " | ".join(entries) + " |", "|---|" + "---:|" * len(entries)]
    for f in families:
        out.append(f"| {f} | " + " | ".join(
            pct(e["leave_one_family_out"]["family_mape_pct"][f]) for e in entries.values()) + " |")
    return out + [""]


def coverage_table(entries):
    """How often the stated band held the truth: the band alone, widened by novelty, and nested
    (each family judged by the band and the widening fitted without it)."""
    out = ["**Latency band: how often it held the truth (stated: 80 % of families wholly "
           "inside)**", "",
           "| predictor | band | left-out families, band alone | widened by novelty | widening | "
           "nested | held-out families, band alone | widened by novelty |",
           "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, e in entries.items():
        lofo, outside = e["coverage"]["leave_one_family_out"], e["coverage"].get("held_out_families")
        band = e["leave_one_family_out"]["p80_relative_error"]
        cells = [f"{band * 100:.0f} %", f"{lofo['plain'] * 100:.0f} %",
                 f"{lofo['widened'] * 100:.0f} %", f"{lofo['widening']:.2f}",
                 f"{lofo['nested'] * 100:.0f} %"]
        cells += ([f"{outside['plain'] * 100:.0f} %", f"{outside['widened'] * 100:.0f} %"]
                  if outside else ["–", "–"])
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    return out + [""]


def held_out_names(dataset):
    """The held-out families of a dataset, in the order first met."""
    with open(dataset, newline="") as f:
        names = [r["family"] for r in csv.DictReader(f) if r["split"] == "held-out"]
    return ", ".join(dict.fromkeys(names))


def evaluation(fp, device, train):
    """The lines of one dataset's evaluation; trains its shipped predictor first if asked."""
    block, measured, noise, command = DATASETS[device]
    dataset, shipped = DATA / f"{device}.csv", DATA / f"{device}-predictor.json"
    report = json.loads(subprocess.run([fp, "predict", "--evaluate", str(dataset), "--json"],
                                       check=True, capture_output=True, text=True).stdout)
    if train:
        subprocess.run([fp, "predict", "--train", str(dataset), "--out", str(shipped)],
                       check=True)
    shipped_json = json.loads(shipped.read_text())
    latency, memory = report["latency"], report["peak_memory"]
    memory_what = "the agent process's" if device == "cpu" else "the process tree's GPU memory"
    lines = [
        f"Dataset: `data/predict/{device}.csv`, {report['rows']['train']} rows of the training "
        f"families and {report['rows']['held_out']} of the held-out ones, {measured}. Noise "
        f"floor: {noise}, is {report['noise_floor_latency_cv'] * 100:.0f} %; no prediction can "
        "be judged more "
        "exactly than that.", "",
        *table("Latency, leave-one-family-out (each family predicted by a fit on the others)",
               latency, "leave_one_family_out"),
        *families_table(latency),
        *table(f"Latency, held-out families ({held_out_names(dataset)}) against a fit on every "
               "training family", latency, "held_out_families"),
        *coverage_table(latency),
        *table("Latency, random split (80 % / 20 %, the same families on both sides: DIPPM's "
               "setting, not comparable with the above)", latency, "random_split"),
        *table(f"Peak memory ({memory_what}, measured by footprint)", memory,
               "leave_one_family_out"),
        *table("Peak memory, held-out families", memory, "held_out_families")]
    if "energy" in report:
        lines += [*table("Energy per query (the GPU's, over the load window), "
                         "leave-one-family-out", report["energy"], "leave_one_family_out"),
                  *table("Energy per query, held-out families", report["energy"],
                         "held_out_families")]
    energy = (f", `{shipped_json['energy']['predictor']['kind']}` for energy"
              if "energy" in shipped_json else "")
    lines += [
        f"Shipped: `{shipped_json['latency']['predictor']['kind']}` for latency (the lowest "
        f"mean error over held-out families){energy} and `memory_linear` for peak memory, in "
        f"`data/predict/{device}-predictor.json`.", "",
        "```sh", command,
        "/usr/bin/python3 bench/predict_bench.py   # these evaluations, the shipped predictors",
        "```"]
    return block, lines


# "Another machine" (issue 39): the shipped CPU predictor, fitted on another CPU with OpenBLAS's
# own kernel on one thread, tested in configurations CI can make on any x86 machine, before and
# after `footprint predict --calibrate` in that configuration. Models none of the calibration's
# references is (ResNet-18, MobileNetV3-small, a small ViT), at RESOLUTION and BATCHES.
CONFIGURATIONS = {
    "OpenBLAS on its SSE3 kernels (OPENBLAS_CORETYPE=Prescott), 1 thread":
        ({"OPENBLAS_CORETYPE": "Prescott"}, 1),
    "OpenBLAS on its own kernel, 2 threads (the predictor was fitted on 1)": ({}, 2),
}
MODELS = {"resnet34": "ResNet", "mobilenet_v2": "MobileNet", "efficientnet_b0": "EfficientNet",
          "squeezenet1_1": "SqueezeNet", "regnet_y_400mf": "RegNet", "densenet121": "DenseNet",
          "swin_t": "Swin", "vit_b_16": "ViT", "deit_tiny": "DeiT", "lstm": "LSTM"}
RESOLUTION, BATCHES = 128, (1, 8)
# The models, weights=None (nothing is downloaded): torchvision's at RESOLUTION (ViT-B/16 given
# that image size), DeiT-Ti's shape and the recurrent family (a 2-layer LSTM, 256 features in,
# 512 hidden, over 64 steps, then a classifier on the last step) as footprint.calibrate builds
# them for the datasets.
BUILD = """
import sys, torch, torchvision
from footprint.calibrate import recurrent_classifier, vision_transformer
def build(name, resolution):
    if name == "lstm":
        return recurrent_classifier(torch), (64, 256)
    if name == "deit_tiny":
        return vision_transformer(resolution, 12, 3, 192).eval(), (3, resolution, resolution)
    size = {"image_size": resolution} if name.startswith("vit") else {}
    model = getattr(torchvision.models, name)(weights=None, **size).eval()
    return model, (3, resolution, resolution)
"""
# The model timed by PyTorch as the agent runs it (threads, OpenBLAS pinned to them,
# inference_mode): the fastest of 5 repetitions of at least 0.2 s (on shared cores another
# process only slows a repetition; the calibration times its references the same way).
TIME_MODEL = BUILD + """
import time
from footprint.agent import _openblas
threads = int(sys.argv[4])
torch.set_num_threads(threads)
for blas in _openblas():
    blas.openblas_set_num_threads(threads)
name, resolution, batch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
model, shape = build(name, resolution)
x = torch.randn(batch, *shape)
with torch.inference_mode():
    start = time.perf_counter()
    model(x)
    calls = max(1, int(0.2 / (time.perf_counter() - start)))
    times = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(calls):
            model(x)
        times.append((time.perf_counter() - start) / calls)
print(min(times))
"""
EXPORT = BUILD + """
import warnings
warnings.simplefilter("ignore")  # the tracer's, about ViT's shape checks and the LSTM's batch
model, shape = build(sys.argv[1], int(sys.argv[2]))
torch.onnx.export(model, torch.randn(1, *shape), sys.argv[3], input_names=["input"],
                  output_names=["output"], dynamic_axes={"input": {0: "b"}, "output": {0: "b"}},
                  opset_version=13)
"""


def another_machine(fp, work):
    """The block: per configuration, the calibration's cost and band, and the errors per family
    of the shipped predictor before and of the calibrated one after."""
    env0 = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(pathlib.Path(fp).parent / "python"), os.environ.get("PYTHONPATH", "")]))
    onnx = {}
    for name in MODELS:
        onnx[name] = os.path.join(work, f"{name}-{RESOLUTION}.onnx")
        if not os.path.exists(onnx[name]):
            subprocess.run(["/usr/bin/python3", "-c", EXPORT, name, str(RESOLUTION),
                            onnx[name]], env=env0, check=True, capture_output=True)
    lines = []
    for title, (variables, threads) in CONFIGURATIONS.items():
        env = dict(env0, **variables)
        db = os.path.join(work, f"calibration-{threads}-{len(variables)}.db")
        if os.path.exists(db):
            os.remove(db)
        predict = lambda name, batch: json.loads(subprocess.run(
            [fp, "predict", "--json", onnx[name], "--batch", str(batch), "-o", db], env=env,
            check=True, capture_output=True, text=True).stdout)["latency_s"]["value"]
        timed = lambda name, batch: float(subprocess.run(
            ["/usr/bin/python3", "-c", TIME_MODEL, name, str(RESOLUTION), str(batch),
             str(threads)], env=env, check=True, capture_output=True, text=True).stdout)
        before = {(n, b): predict(n, b) for n in MODELS for b in BATCHES}
        # The truth, timed before the calibration and after it, the faster kept: other work on
        # shared cores can slow every repetition of one window.
        first = {(n, b): timed(n, b) for n in MODELS for b in BATCHES}
        cal = json.loads(subprocess.run(
            [fp, "predict", "--calibrate", "--json", "--threads", str(threads), "-o", db],
            env=env, check=True, capture_output=True, text=True).stdout)
        after = {(n, b): predict(n, b) for n in MODELS for b in BATCHES}
        measured = {k: min(first[k], timed(*k)) for k in first}
        lines += another_machine_table(title, cal, before, after, measured)
    return lines


def another_machine_table(title, cal, before, after, measured):
    def errors(predicted, batch):
        by_family = {MODELS[n]: 100 * abs(predicted[(n, b)] / measured[(n, b)] - 1)
                     for (n, b) in predicted if b == batch}
        return by_family
    refs = ", ".join(f"{e['model']} b{int(e['batch'])} {100 * e['relative_error']:+.0f} %"
                     for e in cal["errors"])
    lines = [f"**{title}**: calibrated in {cal['wall_s']:.0f} s ({cal['cpu_s']:.0f} s of CPU); "
             f"references (each against an overhead fitted on the others) {refs}: stated band "
             f"{100 * cal['band']:.0f} %.", "",
             "| family | " + " | ".join(f"batch {b} before | batch {b} after" for b in BATCHES)
             + " |", "|---|" + "---:|---:|" * len(BATCHES)]
    tables = {b: (errors(before, b), errors(after, b)) for b in BATCHES}
    band = cal["band"]
    for family in MODELS.values():
        cells = [f"{tables[b][i][family]:.0f} %" for b in BATCHES for i in (0, 1)]
        lines.append(f"| {family} | " + " | ".join(cells) + " |")
    for what, f in (("mean", lambda v: sum(v) / len(v)), ("worst", max)):
        cells = [f"**{f(list(tables[b][i].values())):.0f} %**" for b in BATCHES for i in (0, 1)]
        lines.append(f"| {what} | " + " | ".join(cells) + " |")
    inside = sum(abs(after[k] / measured[k] - 1) <= band for k in after)
    lines += ["", "Signed errors after: " + ", ".join(
        f"{n} b{b} {100 * (after[(n, b)] / measured[(n, b)] - 1):+.0f} %"
        for (n, b) in after) + f"; {inside} of {len(after)} "
        f"({100 * inside / len(after):.0f} %) within the stated band.", ""]
    return lines


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default=str(ROOT / "build"))
    p.add_argument("--out", default=str(ROOT / "docs" / "prediction.md"))
    p.add_argument("--no-train", action="store_true", help="leave the shipped predictors as they are")
    p.add_argument("--another-machine", metavar="WORK",
                   help="only the 'another machine' evaluation, in folder WORK (a few minutes)")
    args = p.parse_args()
    fp = os.path.join(args.build, "footprint")
    if args.another_machine:
        os.makedirs(args.another_machine, exist_ok=True)
        lines = another_machine(fp, args.another_machine)
        write_block(args.out, "predict-another-machine", "\n".join(lines))
        return
    for device in DATASETS:
        if (DATA / f"{device}.csv").exists():
            block, lines = evaluation(fp, device, not args.no_train)
            write_block(args.out, block, "\n".join(lines))


if __name__ == "__main__":
    main()
