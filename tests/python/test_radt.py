"""radT's plans and scripts run unchanged under footprint (radT 0.2.29 as published:
github.com/itu-rad/radt, examples/csv and examples/yaml): its CSV with Name, its YAML sweeps
(resumed by their parameters), `import radt` with RADTBenchmark, the module-level log_metric
and the MLflow calls radT passes through, its working-folder rule, its Status words written
back, its single-run form and its `radt` command."""

from __future__ import annotations

import csv
import hashlib
import os
import re
import subprocess
import textwrap
from pathlib import Path

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
    # nsys is not installed here: one line says so, and the run goes on unprofiled.
    assert proc.stderr.count("needs 'nsys', which is not on PATH") == 1, proc.stderr
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
    # The parameters keep their YAML types (radT's YAML is typed), in radT's product order.
    assert [(m["params"]["batch-size"], m["params"]["learning-rate"]) for m in ran["meta"]] == [
        (b, lr) for b in (8, 16, 32) for lr in (0.001, 0.002)]

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


SWEEP = """
    name: lr sweep
    experiment: 0
    collocation: "-"
    devices: "-"
    listeners: top
    file: pytorch/cifar10_context.py
    method: grid
    parameters:
      learning-rate:
        values: [{rates}]
      batch-size:
        values: [16]
      epochs:
        values: [1]
    """


def sweep_status(db, plan, cwd):
    """{learning rate: status} as footprint experiment --dry-run shows the sweep."""
    proc = run_footprint("experiment", "-o", str(db), plan, "--dry-run", cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return {m[1]: m[2] for m in re.finditer(r"--learning-rate (\S+) .*? (pending|ok) ",
                                            proc.stdout)}


def test_a_radt_sweep_extended_and_resumed_runs_only_its_new_combinations(tmp_path, db,
                                                                           scripts):
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(textwrap.dedent(SWEEP.format(rates="0.1, 0.2")))
    proc = run_footprint("experiment", "-o", str(db), "sweep.yaml", "--python", PYTHON,
                         cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    # A value added in front moves every combination to another workload number: radT knows
    # a combination by its parameters, and so does --resume. Resumed from another folder
    # through "..", the plan is the same file.
    sweep.write_text(textwrap.dedent(SWEEP.format(rates="0.05, 0.1, 0.2")))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert sweep_status(db, "../sweep.yaml", elsewhere) == {
        "0.05": "pending", "0.1": "ok", "0.2": "ok"}
    proc = run_footprint("experiment", "-o", str(db), "../sweep.yaml", "--resume", "--python",
                         PYTHON, cwd=elsewhere)
    assert proc.returncode == 0, proc.stderr
    assert "1 run(s) ran, 0 not ok, 2 already ok" in proc.stderr
    runs = fp.load(db).runs.sort_values("started_at")
    assert [m["params"]["learning-rate"] for m in runs["meta"]] == [0.1, 0.2, 0.05]
    assert {m["params"]["batch-size"] for m in runs["meta"]} == {16}  # YAML's int, kept
    # And from the plan's own folder: nothing is left to run.
    proc = run_footprint("experiment", "-o", str(db), "sweep.yaml", "--resume", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "0 run(s) ran, 0 not ok, 3 already ok" in proc.stderr
    assert len(fp.load(db).runs) == 3


# The MLflow calls radT passes through its benchmark object, as radT's users write them.
ARTIFACTS = """
import numpy as np
import radt


class Figure:  # what log_figure asks of a matplotlib figure
    def savefig(self, path, **kwargs):
        with open(path, "wb") as f:
            f.write(b"figure at dpi %d" % kwargs["dpi"])


with radt.run.RADTBenchmark() as run:
    run.log_text("radT's notes", "notes.txt")  # the user's own notes.txt is beside the script
    run.log_text("x", "logs/out.txt")          # and there is no logs/ folder here
    run.log_dict({"lr": 0.1}, "config.json")
    run.log_dict({"lr": 0.1}, "config.yaml")
    run.log_table({"epoch": [0, 1], "loss": [0.5, 0.25]}, "table.json")
    run.log_figure(Figure(), "plots/loss.png", save_kwargs={"dpi": 72})
    run.log_image(np.zeros((4, 4, 3)), "image.png")
    run.autolog()
    run.autolog()
    run.log_metric("loss", 0.25, 1)
"""


def sha256_tree(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_mlflow_calls_store_artifacts_with_the_run_and_touch_no_file_of_the_user(tmp_path,
                                                                                  scripts):
    write_script(scripts, ARTIFACTS, "artifacts.py")
    (scripts / "notes.txt").write_text("the user's notes\n")
    before = sha256_tree(scripts)
    db = tmp_path / "store" / "fp.db"
    db.parent.mkdir()
    proc = subprocess.run([PYTHON, "-m", "radt", "artifacts.py"],
                          env=child_env(FOOTPRINT_DB=str(db)), cwd=scripts,
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert sha256_tree(scripts) == before  # every file as it was, and none added
    assert proc.stderr.count("autolog() records nothing under footprint") == 1, proc.stderr
    data = fp.load(db)
    artifacts = data.artifacts.set_index("name")
    assert sorted(artifacts.index) == ["config.json", "config.yaml", "image.png",
                                       "logs/out.txt", "notes.txt", "plots/loss.png",
                                       "table.json"]
    run_id = data.runs["id"].iloc[0]
    folder = Path(f"{db}.artifacts") / run_id  # footprint's, beside the database
    assert set(artifacts["path"]) == {str(folder / name) for name in artifacts.index}
    content = {name: Path(path).read_bytes() for name, path in artifacts["path"].items()}
    assert content["notes.txt"] == b"radT's notes" and content["logs/out.txt"] == b"x"
    assert content["config.json"] == b'{\n  "lr": 0.1\n}'
    assert content["config.yaml"] == b"lr: 0.1\n"
    assert content["table.json"] == b'{"columns":["epoch","loss"],"data":[[0,0.5],[1,0.25]]}'
    assert content["plots/loss.png"] == b"figure at dpi 72"
    assert content["image.png"].startswith(b"\x89PNG")
    for name, sha in artifacts["sha256"].items():
        assert hashlib.sha256(content[name]).hexdigest() == sha
    assert list(data.values["name"]) == ["loss"]


def test_the_radt_command_and_python_m_radt_help_as_radts_readme_runs_them(tmp_path, db,
                                                                           scripts):
    binary = os.environ.get("FOOTPRINT_BIN")
    if not binary:
        pytest.skip("the radt command is installed from a build folder (FOOTPRINT_BIN)")
    stage = tmp_path / "stage"
    proc = subprocess.run(["cmake", "--install", os.path.dirname(os.path.abspath(binary)),
                           "--component", "radt"], env={**os.environ, "DESTDIR": str(stage)},
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    if "radT is installed" in proc.stdout:
        pytest.skip("radT itself is installed here: its radt command is left alone")
    [command] = stage.glob("**/bin/radt")
    env = child_env(FOOTPRINT_DB=str(db),
                    PATH=f"{command.parent}{os.pathsep}{os.environ['PATH']}")
    # radT's README: `radt train.py`, with its flags; -d cpu for a machine without a GPU.
    proc = subprocess.run(["radt", "-e", "5", "-n", "from radt", "-d", "cpu",
                           "cifar10_context.py", "--epochs", "2"],
                          env=env, cwd=scripts, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    run = fp.load(db).runs.iloc[0]
    assert run["name"] == "from radt" and run["experiment"] == "5"
    assert run["cwd"] == str(scripts)
    assert len(fp.load(db).values.query("name == 'loss'")) == 2
    for argv, prog in ((["radt", "-h"], "radt"), ([PYTHON, "-m", "radt", "-h"], "python3 -m radt")):
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr  # as radT's: help is no error
        assert proc.stdout.startswith(f"usage: {prog} [radT's flags]"), proc.stdout


@pytest.mark.parametrize("separator", [",", ", "])
def test_python_m_radt_writes_status_back_into_its_csv_plan(tmp_path, db, scripts, separator):
    # pandas writes radT's plans back unpadded; radT's examples are padded after each comma.
    rows = [HEADER,
            ["0", "1", "first", "", "", "-", "-", "pytorch/cifar10_context.py", "top",
             "--epochs 1"],
            ["0", "2", "second", "", "", "-", "-", "pytorch/cifar10_context.py", "top",
             "--epochs 1"]]
    plan = tmp_path / "plan.csv"
    plan.write_text("".join(separator.join(row) + "\n" for row in rows))
    proc = subprocess.run([PYTHON, "-m", "radt", "plan.csv"], env=child_env(FOOTPRINT_DB=str(db)),
                          cwd=tmp_path, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    ids = fp.load(db).runs.set_index("name")["id"]
    for row in rows[1:]:
        row[3:5] = ["FINISHED", ids[row[2]]]  # radT's Status word, the run
    assert plan.read_text() == "".join(separator.join(row) + "\n" for row in rows)


def test_python_m_radt_runs_a_profiler_listener_as_radt(tmp_path, db, scripts):
    """-l top+ncu: the script starts inside ncu with radT's flags (a stand-in ncu that refuses
    any other command line), and the report it writes is the run's artifact."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    ncu = bin_dir / "ncu"
    ncu.write_text('#!/bin/sh\n[ "$1 $3 $4 $5 $6" = "-o -f --nvtx --nvtx-include profile" ] '
                   '|| exit 64\nout=$2\nshift 6\n"$@"\nstatus=$?\n'
                   'printf report > "$out.ncu-rep"\nexit $status\n')
    ncu.chmod(0o755)
    env = child_env(FOOTPRINT_DB=str(db), PATH=f"{bin_dir}:{os.environ['PATH']}")
    proc = subprocess.run(
        [PYTHON, "-m", "radt", "-e", "3", "-w", "7", "-l", "top+ncu",
         str(scripts / "cifar10_context.py"), "--epochs", "1"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    data = fp.load(db)
    (artifact,) = data.artifacts[data.artifacts["name"].str.endswith(".ncu-rep")].itertuples()
    assert artifact.name == "ncu_3_7_-.ncu-rep" and artifact.size == len("report")
    assert len(data.values[data.values["name"] == "loss"]) == 1  # the script ran inside ncu
