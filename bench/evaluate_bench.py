#!/usr/bin/python3
"""Real models through `footprint evaluate` (issue "Evaluate models the way MLModelScope and
MLPerf do"): torchvision ResNet-18 and MobileNetV3-Large, random weights, in MLPerf's four
scenarios on this machine's CPU, as examples/evaluate/*-cpu.yaml pin them. Writes the table
into docs/evaluation.md (between the evaluate-cpu markers) or prints it:

    /usr/bin/python3 bench/evaluate_bench.py --build build [--out -]
"""
import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

from doc_block import machine, write_block

ROOT = pathlib.Path(__file__).resolve().parent.parent
MANIFESTS = ["resnet18-cpu.yaml", "mobilenet_v3_large-cpu.yaml"]


def ms(seconds):
    return f"{seconds * 1e3:.1f} ms"


def rows(binary, db):
    runs = json.loads(subprocess.run([binary, "runs", "-o", db, "--json"], check=True,
                                     capture_output=True, text=True).stdout)
    for run in runs:
        shown = json.loads(subprocess.run([binary, "show", "-o", db, "--json", run["id"]],
                                          check=True, capture_output=True, text=True).stdout)
        yield shown


def table(shown_runs):
    out = ["| model | scenario | batch | queries | queries/s | samples/s | p50 | p90 | p99 | "
           "bound | CPU s / query | peak memory |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|"]
    framework = None
    for s in shown_runs:
        load, totals, ev = s["load"], s["totals"], s["meta"]["evaluation"]
        framework = ev["framework"]
        lat = load["latency_s"]
        scenario = load["scenario"] + (f" at {load['options']['qps']:g} qps"
                                       if load["scenario"] == "server" else "")
        if load["scenario"] == "multi":
            scenario += f" ({load['options']['samples_per_query']}/query)"
        bound = "-" if load["latency_bound_s"] is None else \
            f"{load['validity']} ({load['latency_bound_s'] * 1e3:g} ms)"
        cpu = load["cpu_s"] / max(load["queries"], 1)
        out.append(f"| {ev['model']['torchvision']} | {scenario} | {ev['batch']} | "
                   f"{load['queries']} | {load['qps']:.1f} | {load['samples_per_s']:.1f} | "
                   f"{ms(lat['p50'])} | {ms(lat['p90'])} | {ms(lat['p99'])} | {bound} | "
                   f"{cpu:.3f} | {totals['peak_memory_bytes'] / 2**20:.0f} MiB |")
    return out, framework


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default=str(ROOT / "build"))
    parser.add_argument("--out", default=str(ROOT / "docs" / "evaluation.md"))
    args = parser.parse_args()
    binary = os.path.join(args.build, "footprint")
    env = dict(os.environ, PYTHONPATH=os.path.join(args.build, "python"))
    tmp = tempfile.mkdtemp(prefix="evaluate-bench-")
    db = os.path.join(tmp, "evaluate.db")  # kept when the table cannot be made, for a look
    for manifest in MANIFESTS:
        subprocess.run([binary, "evaluate", "-o", db, "--no-git", "-q", "--python",
                        sys.executable, str(ROOT / "examples" / "evaluate" / manifest)],
                       check=True, env=env)
    lines, framework = table(list(rows(binary, db)))
    shutil.rmtree(tmp)
    text = "\n".join([
        "### A real model in the four scenarios", "",
        "ResNet-18 and MobileNetV3-Large (torchvision, `weights=None`, 224×224) through "
        "`footprint evaluate`, as `examples/evaluate/*-cpu.yaml` pin them, on the CPU of "
        f"{machine()}: {framework['framework']} {framework['version']}, "
        f"{framework['threads']} threads, BLAS `{framework.get('blas_library')}`. Each line is "
        "one run:", "", *lines, "",
        "- Offline latencies are long by definition: every query is scheduled at the start, "
        "and the last waits for the whole queue. Its figure of merit is samples/s, against "
        "the single stream's: batches of up to 16 amortise each forward pass.",
        "- The server's Poisson bursts queue behind forward passes of tens of milliseconds on "
        "two cores, which is what its p99 measures against the bound.",
        "- *CPU s / query* is the agent's CPU over its load's window (`load.cpu_s`, from the "
        "first query to the last answer) per answered query: one agent serves the four runs, "
        "and neither its start-up (model loading) nor the framework trace after the load is "
        "in it.",
        "- MLPerf's early stopping needs 662 answered queries for a p99 claim; `show` says on "
        "every p99 line whether a run has them.", "",
        "```sh",
        "footprint evaluate examples/evaluate/resnet18-cpu.yaml",
        "footprint evaluate examples/evaluate/mobilenet_v3_large-cpu.yaml",
        "footprint show resnet18-cpu-server-b4-q10      # the load, the evaluation, the operators",
        "/usr/bin/python3 bench/evaluate_bench.py       # this table",
        "```"])
    write_block(args.out, "evaluate-cpu", text)


if __name__ == "__main__":
    main()
