"""radT's plans and scripts run unchanged under footprint (radT 0.2.29 as published:
github.com/itu-rad/radt, examples/csv and examples/yaml): its CSV with Name, its YAML sweeps,
`import radt` with RADTBenchmark and the module-level log_metric, its working-folder rule,
its Status words and its single-run form."""

from __future__ import annotations

import csv
import subprocess

import pytest

import footprint as fp
from fp_python import PYTHON, child_env, run_footprint, write_script

# In the style of radT's examples/pytorch/cifar10_context.py: the context, metrics per epoch,
# MLflow's params, tags and artifacts through the context object, and radt.log_metric.
TRAIN = """
import argparse
import os
import radt

parser = argparse.ArgumentParser()
parser.add_argument("--batch-size", type=int, default=64)
parser.add_argument("--learning-rate", type=float, default=0.1)
parser.add_argument("--epochs", type=int, default=3)
args = parser.parse_args()

with radt.run.RADTBenchmark() as run:
    for epoch in range(args.epochs):
        run.log_metric("loss", args.learning_rate / (epoch + 1), epoch)
    run.log_metrics({"batch": args.batch_size}, epoch=0)
    run.log_param("batch_size", args.batch_size)
    run.set_tag("model", "tiny")
    with open("model.txt", "w") as f:  # radT runs the script in its own folder
        f.write(os.getcwd())
    run.log_artifact("model.txt")
radt.log_metric("accuracy", 0.9)
"""

HEADER = ["Experiment", "Workload", "Name", "Status", "Run", "Devices", "Collocation", "File",
          "Listeners", "Params"]


def plan_rows(path, rows, header=HEADER):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


@pytest.fixture
def scripts(tmp_path):
    folder = tmp_path / "pytorch"
    folder.mkdir()
    write_script(folder, TRAIN, "cifar10_context.py")
    return folder


def test_a_radt_csv_with_name_runs_its_radt_scripts(tmp_path, db, scripts):
    plan = tmp_path / "experiment_collocation.csv"
    plan_rows(plan, [
        ["0", "1", "no sharing", "", "", "-", "-", "pytorch/cifar10_context.py", "top+ps",
         "--batch-size 128 --learning-rate 0.01"],
        ["0", "1", "neighbour", "", "", "-", "-", "pytorch/cifar10_context.py", "none",
         "--batch-size 64"],
        ["0", "2", "profiled", "", "", "-", "-", "pytorch/cifar10_context.py", "iostat+nsys",
         "--epochs 2"],
    ])
    status = tmp_path / "status.csv"
    proc = run_footprint("experiment", "-o", str(db), str(plan), "--python", PYTHON,
                         "--write-status", str(status), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    # One note for the listener footprint does not use, said once.
    assert proc.stderr.count("radT listener 'nsys' is not used") == 1, proc.stderr
    data = fp.load(db)
    runs = data.runs.set_index("name")
    assert sorted(runs.index) == ["neighbour", "no sharing", "profiled"]
    assert set(runs["status"]) == {"ok"}
    assert set(runs["cwd"]) == {str(scripts)}  # the script's folder, as radT starts it
    v = data.values
    mine = v[v["run_id"] == runs.loc["no sharing", "id"]].set_index("name")
    loss = v[(v["run_id"] == runs.loc["no sharing", "id"]) & (v["name"] == "loss")]
    assert list(loss.sort_values("step")["value"]) == pytest.approx([0.01, 0.005, 0.01 / 3])
    assert list(loss.sort_values("step")["step"]) == [0, 1, 2]
    assert mine.loc["accuracy", "value"] == 0.9 and mine.loc["batch", "value"] == 128
    assert mine.loc["param.batch_size", "data"] == 128
    assert mine.loc["tag.model", "data"] == "tiny"
    artifact = data.artifacts[data.artifacts["run_id"] == runs.loc["no sharing", "id"]]
    assert list(artifact["name"]) == ["model.txt"]
    assert (scripts / "model.txt").read_text() == str(scripts)
    # The values lie on the run's timeline, between its start and its end.
    duration = runs.loc["no sharing", "duration_s"]
    assert ((loss["t_s"] >= 0) & (loss["t_s"] <= duration)).all()
    # radT's Status words, which radT reads back to skip finished workloads.
    with open(status, newline="") as f:
        written = list(csv.DictReader(f, skipinitialspace=True))
    assert [r["Status"] for r in written] == ["FINISHED"] * 3
    assert [r["Name"] for r in written] == ["no sharing", "neighbour", "profiled"]


def test_radt_yaml_sweeps_grid_and_random(tmp_path, db, scripts):
    sweep = """
        name: Sweep name
        experiment: 0
        collocation: "-"
        devices: "-"
        listeners: top
        file: pytorch/cifar10_context.py
        method: {method}
        {extra}
        parameters:
          batch-size:
            values: [8, 16, 32]
          learning-rate:
            values: [0.001, 0.002]
        """
    grid = write_script(tmp_path, sweep.format(method="grid", extra=""), "grid.yaml")
    dry = run_footprint("experiment", "-o", str(db), str(grid), "--dry-run", cwd=tmp_path)
    assert dry.returncode == 0, dry.stderr
    assert "6 workload(s), 6 run(s)" in dry.stdout
    commands = [line for line in dry.stdout.splitlines() if "cifar10_context.py" in line]
    assert "--batch-size 8 --learning-rate 0.001" in commands[0]  # radT's product order
    assert "--batch-size 32 --learning-rate 0.002" in commands[5]
    grid_db = tmp_path / "grid.db"
    proc = run_footprint("experiment", "-o", str(grid_db), str(grid), "--python", PYTHON,
                         cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    ran = fp.load(grid_db).runs.sort_values("started_at")
    assert list(ran["workload"]) == ["000", "001", "002", "003", "004", "005"]
    assert [(m["params"]["batch-size"], m["params"]["learning-rate"]) for m in ran["meta"]] == [
        (b, lr) for b in ("8", "16", "32") for lr in ("0.001", "0.002")]

    shuffled = sweep.format(method="random", extra="seed: 7\n        count: 4")
    random = write_script(tmp_path, shuffled, "random.yaml")
    orders = []
    for _ in range(2):
        proc = run_footprint("experiment", "-o", str(db), str(random), "--dry-run", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        orders.append([line.split()[-5:-1] for line in proc.stdout.splitlines()
                       if "cifar10_context.py" in line])
    assert len(orders[0]) == 4 and orders[0] == orders[1]  # the seed fixes the order
    proc = run_footprint("experiment", "-o", str(db), str(random), "--python", PYTHON,
                         cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = fp.load(db)
    assert len(data.runs) == 4 and set(data.runs["name"]) == {"Sweep name"}
    params = [(m["params"]["batch-size"], m["params"]["learning-rate"])
              for m in data.runs.sort_values("started_at")["meta"]]
    assert len(set(params)) == 4
    loss = data.values[data.values["name"] == "loss"]
    assert len(loss) == 4 * 3


def test_radt_single_run_form_and_plain_python(tmp_path, db, scripts):
    script = scripts / "cifar10_context.py"
    proc = subprocess.run(
        [PYTHON, "-m", "footprint.radt", "-e", "3", "-w", "7", "-n", "single", "-l", "top",
         str(script), "--epochs", "2"],
        env=child_env(FOOTPRINT_DB=str(db)), cwd=tmp_path, capture_output=True, text=True,
        timeout=180)
    assert proc.returncode == 0, proc.stderr
    data = fp.load(db)
    run = data.runs.iloc[0]
    assert run["name"] == "single" and run["experiment"] == "3" and run["workload"] == "7"
    assert len(data.values[data.values["name"] == "loss"]) == 2
    # `import radt` outside footprint: radT's calls do nothing, the script runs.
    plain = subprocess.run([PYTHON, str(script), "--epochs", "1"], env=child_env(),
                           cwd=scripts, capture_output=True, text=True, timeout=60)
    assert plain.returncode == 0, plain.stderr
    assert len(fp.load(db).runs) == 1
