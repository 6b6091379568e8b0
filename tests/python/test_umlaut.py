"""An UMLAUT script runs unchanged but for its import, and its data land in footprint's
database."""

from __future__ import annotations

import os
import subprocess

import pytest

import footprint as fp
from footprint.umlaut import VisualizationBenchmark
from fp_python import PYTHON, child_env, run_python, write_script

# Written against UMLAUT (github hpides/End-to-end-ML-System-Benchmark): its README example,
# trackers and supervised metrics, with UMLAUT's signatures and argument styles.
UMLAUT_SCRIPT = """
import sys
import time
import numpy as np
from umlaut import Benchmark, BenchmarkSupervisor, MemoryMetric, CPUMetric, TimeMetric
from umlaut import LatencyMetric, ThroughputMetric, GPUMetric
from umlaut import ConfusionMatrixTracker, HyperparameterTracker, TTATracker, LossTracker
from umlaut import TimedTTATracker

bm = Benchmark(sys.argv[1], description="Database for the Github sample measurements",
               mode="w", checkpoint_frequency=2, tmp_dir="umlaut_tmp")

bloat_metrics = {
    "memory": MemoryMetric('bloat memory', interval=0.1, checkpoint_interval=250),
    "cpu": CPUMetric('bloat cpu', interval=0.1, checkpoint_interval=250),
    "time": TimeMetric('bloat time'),
}


@BenchmarkSupervisor(bloat_metrics.values(), bm)
def bloat():
    a = []
    for i in range(1, 2):
        a.append(np.random.randn(*([10] * 6)))  # ~8 MB
        time.sleep(0.3)
    return len(a)


latency = LatencyMetric('inference latency')
throughput = ThroughputMetric('inference throughput')


@BenchmarkSupervisor([latency, throughput], bm, name="inference")
def infer(batch):
    time.sleep(0.02)
    latency.track(len(batch))
    throughput.track(len(batch))


@BenchmarkSupervisor([GPUMetric('gpu util', interval=0.5, id=0, checkpoint_interval=250)], bm)
def on_gpu():
    return 1


def main():
    bloat()
    bloat()
    infer(list(range(100)))
    on_gpu()
    LossTracker(bm).track([2.0, 1.0, 0.5], "training loss")
    TTATracker(bm).track(np.array([0.5, 0.9, 0.8]), "training accuracy")
    timed = TimedTTATracker(bm, 0.75)
    for acc in (0.5, 0.8, 0.9):
        timed.track(acc, "timed accuracy")
    # UMLAUT: axis 0 is the prediction, axis 1 the true class.
    ConfusionMatrixTracker(bm).track([[5, 1], [2, 7]], ["cat", "dog"], "test matrix")
    # scikit-learn's matrix of the classes present, beside the whole label list.
    ConfusionMatrixTracker(bm).track(np.array([[3]]), ["cat", "dog"], "one class")
    with HyperparameterTracker(bm, "grid search", ["lr", "batch_size"], "loss") as hp:
        hp.track({"lr": 0.1, "batch_size": 32, "loss": 0.4})
        hp.track({"lr": 0.01, "batch_size": 64, "loss": 0.2})
    print(bm.uuid)
    bm.close()


if __name__ == "__main__":
    main()
"""


@pytest.fixture
def umlaut_run(tmp_path, db):
    script = UMLAUT_SCRIPT.replace("from umlaut import", "from footprint.umlaut import")
    assert script.count("footprint.umlaut") == 4
    result = run_python(write_script(tmp_path, script), str(db))
    assert result.returncode == 0, result.stderr
    assert "GPU utilisation is not measured" in result.stderr  # a warning, not a fake value
    return result.stdout.strip(), fp.load(db)


def test_umlaut_script_supervised_functions(umlaut_run):
    uuid, data = umlaut_run
    assert list(data.runs["id"]) == [uuid]
    run = data.runs.iloc[0]
    assert run["status"] == "ok" and run["name"] == "script.py"
    assert run["description"] == "Database for the Github sample measurements"
    scopes = data.scopes
    bloat = scopes[scopes["name"] == "bloat"]
    assert len(bloat) == 2  # two calls, two scopes (UMLAUT summed them)
    assert (bloat["duration_s"] >= 0.3).all()
    # Memory and CPU of the process, sampled from outside, during each call.
    for scope_id in bloat["id"]:
        memory = data.during(int(scope_id), "memory")
        assert len(memory) >= 2
        assert memory["value"].min() > 20 * 2**20  # bytes (UMLAUT: MiB)
        assert len(data.during(int(scope_id), "cpu")) >= 2
    # The UMLAUT descriptions are kept, once per decorated function.
    supervision = data.values[data.values["name"] == "umlaut.supervision"]
    described = {d["scope"]: d["metrics"] for d in supervision["data"]}
    assert {m["description"] for m in described["bloat"]} == {"bloat memory", "bloat cpu",
                                                              "bloat time"}
    assert {m["type"] for m in described["bloat"]} == {"MemoryMetric", "CPUMetric",
                                                       "TimeMetric"}
    assert described["on_gpu"][0]["description"] == "gpu util"
    # Latency and throughput of the call from its tracked entries.
    v = data.values.set_index("name")
    inference = scopes.set_index("name").loc["inference"]
    assert v.loc["latency", "scope"] == "inference"
    assert v.loc["latency", "value"] == pytest.approx(inference["duration_s"] / 100, rel=0.2)
    assert v.loc["throughput", "value"] == pytest.approx(100 / inference["duration_s"],
                                                         rel=0.2)
    assert not data.samples["metric"].str.startswith("gpu").any()


def test_umlaut_script_trackers(umlaut_run):
    _, data = umlaut_run
    v = data.values
    loss = v[v["name"] == "loss"].sort_values("step")
    assert list(loss["value"]) == [2.0, 1.0, 0.5] and list(loss["step"]) == [0, 1, 2]
    assert set(loss["scope"]) == {"training loss"}  # UMLAUT's description is a scope
    acc = v[(v["name"] == "accuracy") & (v["scope"] == "training accuracy")]
    assert list(acc.sort_values("step")["value"]) == [0.5, 0.9, 0.9]  # UMLAUT's running max
    timed = v[(v["name"] == "accuracy") & (v["scope"] == "timed accuracy")]
    assert list(timed.sort_values("step")["value"]) == [0.5, 0.8, 0.9]
    tta = v[v["name"] == "time_to_accuracy"]
    assert len(tta) == 1 and tta.iloc[0]["step"] == 1
    assert tta.iloc[0]["data"] == {"target": 0.75, "accuracy": 0.8}
    matrices = v[v["name"] == "confusion_matrix"].set_index("scope")
    assert matrices.loc["one class", "data"] == {"matrix": [[3]], "labels": ["cat", "dog"]}
    matrix = matrices.loc["test matrix"]
    # Stored as footprint's matrix[true][predicted]: UMLAUT's transposed.
    assert matrix["data"]["matrix"] == [[5, 2], [1, 7]]
    assert matrix["data"]["labels"] == ["cat", "dog"]
    hp = v[v["name"] == "hyperparameters"].sort_values("id")
    assert list(hp["value"]) == [0.4, 0.2] and set(hp["scope"]) == {"grid search"}
    assert [d["params"] for d in hp["data"]] == [{"lr": 0.1, "batch_size": 32},
                                                {"lr": 0.01, "batch_size": 64}]
    assert all(d["low_means_good"] for d in hp["data"])


def umlaut_cli(*args: str, cwd) -> subprocess.CompletedProcess:
    """UMLAUT's command line as UMLAUT's scripts call it: `umlaut-cli` found in PATH (the link
    beside the footprint binary under test)."""
    binary = os.environ.get("FOOTPRINT_BIN")
    if not binary:
        pytest.skip("FOOTPRINT_BIN is not set (umlaut-cli is a link beside it)")
    env = child_env(PATH=os.path.dirname(os.path.abspath(binary)) + os.pathsep +
                    os.environ["PATH"])
    return subprocess.run(["umlaut-cli", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def test_umlaut_cli_answers_umlauts_own_calls(umlaut_run, db, tmp_path):
    uuid, _ = umlaut_run
    # UMLAUT's pipelines end with: umlaut-cli DB -u UUID -t TYPES -d DESCRIPTIONS -p plotly.
    proc = umlaut_cli(str(db), "-u", uuid, "-t", "memory", "cpu", "time", "loss", "tta",
                      "confusion-matrix", "-d", "bloat memory", "bloat cpu", "training loss",
                      "-p", "plotly", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    page = (tmp_path / "umlaut-plot.html").read_text()
    # The page's data: the chosen metrics and values, the decorated function as a scope.
    for name in ('"memory"', '"cpu"', '"loss"', '"accuracy"', '"bloat"', '"training loss"'):
        assert name in page, name
    # Text and CSV, as UMLAUT's other back ends.
    proc = umlaut_cli(str(db), "-u", uuid, "-p", "text", cwd=tmp_path)
    assert proc.returncode == 0 and "bloat" in proc.stdout and "memory" in proc.stdout, proc
    proc = umlaut_cli(str(db), "-u", uuid[:8], "-p", "csv", "-tmp", "umlaut_tmp", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    csv_text = (tmp_path / "umlaut_output.csv").read_text()
    assert uuid in csv_text and "memory" in csv_text
    # Nothing matches: UMLAUT's error, footprint's exit code for "not found".
    proc = umlaut_cli(str(db), "-u", uuid, "-t", "gpu", cwd=tmp_path)
    assert proc.returncode == 4 and "no entries" in proc.stderr, proc
    proc = umlaut_cli(str(db), "-p", "seaborn", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc


def test_gpu_time_metric_leaves_pytorchs_import_out_of_the_first_call(tmp_path, db):
    # Ground truth: what importing PyTorch costs here, in a fresh interpreter.
    probe = subprocess.run([PYTHON, "-c", "import time; t = time.perf_counter(); import torch; "
                            "print(time.perf_counter() - t)"], capture_output=True, text=True,
                           timeout=120)
    if probe.returncode != 0:
        pytest.skip("PyTorch cannot be imported here")
    torch_import_s = float(probe.stdout)
    script = write_script(tmp_path, """
        import sys, time
        from footprint.umlaut import Benchmark, BenchmarkSupervisor, GPUTimeMetric
        bm = Benchmark(sys.argv[1])

        @BenchmarkSupervisor([GPUTimeMetric('step gpu time')], bm)
        def step():
            time.sleep(0.2)

        step()
        bm.close()
        """)
    result = run_python(script, str(db))
    assert result.returncode == 0, result.stderr
    (duration,) = fp.load(db).scopes["duration_s"]
    # The call is its sleep, not PyTorch's import (imported when the function was decorated).
    assert 0.2 <= duration < 0.2 + torch_import_s / 2, (duration, torch_import_s)


def test_visualization_benchmark_reads_umlauts_tables(umlaut_run, db):
    uuid, _ = umlaut_run
    vb = VisualizationBenchmark(str(db), tmp_dir=None)
    meta = vb.query_all_meta()
    assert list(meta.index) == [uuid]
    assert meta.loc[uuid, "meta_description"] == "Database for the Github sample measurements"
    assert meta.loc[uuid, "meta_name"] == "script.py"
    table = vb.query_all_uuid_type_desc()
    assert {"uuid", "measurement_type", "measurement_description"} <= set(table.columns)
    rows = set(zip(table["measurement_type"], table["measurement_description"]))
    assert {("time", "bloat"), ("memory", ""), ("loss", "training loss"),
            ("latency", "inference")} <= rows
    joined = vb.join_visualization_queries(table)
    assert (joined["meta_name"] == "script.py").all() and len(joined) == len(table)
