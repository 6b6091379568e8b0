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
            "each the lower p50 of two measurements on this shared 2-core VM, PyTorch on one "
            "thread",
            "the median spread of a row's two p50s (standard deviation over mean)",
            "scripts/predict-dataset --out data/predict/cpu.csv --repeat 2  # about 15 minutes"),
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
        *table("Latency, held-out families (AlexNet, RegNet, ResNeXt, ViT, Swin) against a fit "
               "on every training family", latency, "held_out_families"),
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


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default=str(ROOT / "build"))
    p.add_argument("--out", default=str(ROOT / "docs" / "prediction.md"))
    p.add_argument("--no-train", action="store_true", help="leave the shipped predictors as they are")
    args = p.parse_args()
    fp = os.path.join(args.build, "footprint")
    for device in DATASETS:
        if (DATA / f"{device}.csv").exists():
            block, lines = evaluation(fp, device, not args.no_train)
            write_block(args.out, block, "\n".join(lines))


if __name__ == "__main__":
    main()
