#!/usr/bin/python3
"""How well `footprint predict` predicts (issue "Predict a model's footprint before running
it"): every predictor on the committed dataset (data/predict/cpu.csv, scripts/predict-dataset),
leave-one-family-out over the training families, the random split reported apart, the held-out
families (never used in any fit) against a fit on the training ones, and the measurement's
noise floor. Writes the evaluation into docs/prediction.md (between the predict-eval markers)
and trains the shipped predictor (data/predict/cpu-predictor.json):

    /usr/bin/python3 bench/predict_bench.py --build build [--out -] [--no-train]
"""
import argparse
import json
import os
import pathlib
import subprocess

from doc_block import write_block

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATASET = ROOT / "data" / "predict" / "cpu.csv"
SHIPPED = ROOT / "data" / "predict" / "cpu-predictor.json"


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


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default=str(ROOT / "build"))
    p.add_argument("--out", default=str(ROOT / "docs" / "prediction.md"))
    p.add_argument("--no-train", action="store_true", help="leave the shipped predictor as it is")
    args = p.parse_args()
    fp = os.path.join(args.build, "footprint")
    report = json.loads(subprocess.run([fp, "predict", "--evaluate", str(DATASET), "--json"],
                                       check=True, capture_output=True, text=True).stdout)
    if not args.no_train:
        subprocess.run([fp, "predict", "--train", str(DATASET), "--out", str(SHIPPED)],
                       check=True)
    shipped = json.loads(SHIPPED.read_text())
    latency, memory = report["latency"], report["peak_memory"]
    lines = [
        f"Dataset: `data/predict/cpu.csv`, {report['rows']['train']} rows of the training "
        f"families and {report['rows']['held_out']} of the held-out ones, each the lower p50 "
        "of two measurements on this shared 2-core VM. Noise floor: the median spread of a "
        f"row's two p50s (standard deviation over mean) is "
        f"{report['noise_floor_latency_cv'] * 100:.0f} %; no prediction can be judged more "
        "exactly than that.", "",
        *table("Latency, leave-one-family-out (each family predicted by a fit on the others)",
               latency, "leave_one_family_out"),
        *families_table(latency),
        *table("Latency, held-out families (AlexNet, RegNet, ResNeXt, ViT, Swin) against a fit "
               "on every training family", latency, "held_out_families"),
        *table("Latency, random split (80 % / 20 %, the same families on both sides: DIPPM's "
               "setting, not comparable with the above)", latency, "random_split"),
        *table("Peak memory (the agent process's, measured by footprint)", memory,
               "leave_one_family_out"),
        *table("Peak memory, held-out families", memory, "held_out_families"),
        f"Shipped: `{shipped['latency']['predictor']['kind']}` for latency (the lowest mean "
        "error over held-out families) and `memory_linear` for peak memory, in "
        "`data/predict/cpu-predictor.json`.", "",
        "```sh",
        "scripts/predict-dataset --out data/predict/cpu.csv   # measure (about 12 minutes)",
        "/usr/bin/python3 bench/predict_bench.py              # this evaluation, the shipped predictor",
        "```"]
    write_block(args.out, "predict-eval", "\n".join(lines))


if __name__ == "__main__":
    main()
