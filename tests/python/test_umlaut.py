"""An UMLAUT script runs unchanged but for its import, and its data land in footprint's
database."""

from __future__ import annotations

import os
import subprocess

import pytest

import footprint as fp
from footprint.umlaut import VisualizationBenchmark
from fp_python import PACKAGE_PATH, PYTHON, child_env, run_python, write_script

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


def csv_rows(path) -> list[dict]:
    import csv
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_umlaut_cli_csv_keeps_only_the_chosen_types_and_descriptions(umlaut_run, db, tmp_path):
    uuid, data = umlaut_run
    # -t loss: the three loss values, none of the run's other rows.
    proc = umlaut_cli(str(db), "-u", uuid, "-t", "loss", "-p", "csv", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = csv_rows(tmp_path / "umlaut_output.csv")
    assert [(r["kind"], r["name"], r["value"]) for r in rows] == [
        ("value", "loss", "2"), ("value", "loss", "1"), ("value", "loss", "0.5")]
    assert "wrote umlaut_output.csv: 3 row(s)" in proc.stdout
    # -t memory -d 'bloat memory': UMLAUT's memory series of bloat, the samples taken while a
    # call of bloat ran, and nothing else.
    proc = umlaut_cli(str(db), "-u", uuid, "-t", "memory", "-d", "bloat memory", "-p", "csv",
                      "--out", "bloat.csv", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = csv_rows(tmp_path / "bloat.csv")
    scopes = data.scopes[data.scopes["name"] == "bloat"]
    inside = sorted(t for scope_id in scopes["id"]
                    for t in data.during(int(scope_id), "memory")["t_ns"])
    assert len(inside) >= 4
    assert {(r["kind"], r["name"]) for r in rows} == {("sample", "memory")}
    assert sorted(int(r["t_ns"]) for r in rows) == inside
    # -t time -d 'bloat time': the calls of bloat, as scope rows.
    proc = umlaut_cli(str(db), "-u", uuid, "-t", "time", "-d", "bloat time", "-p", "csv",
                      cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = csv_rows(tmp_path / "umlaut_output.csv")
    assert [(r["kind"], r["name"]) for r in rows] == [("scope", "bloat")] * 2


# Written against UMLAUT's pipelines/custom_pipeline/run_script.py: each chosen metric is
# described by its own type's name, and the script ends with UMLAUT's call
# `umlaut-cli DB -u UUID -t TYPES -d TYPES -p plotly` (its exit status passed on here).
CUSTOM_PIPELINE = """
import argparse
import os
import subprocess
import umlaut

parser = argparse.ArgumentParser(description="Umlaut benchmark configs")
parser.add_argument("-cmd", "--command", type=str, required=True)
parser.add_argument("-folder", "--execution_folder", type=str, required=True)
parser.add_argument("-m", "--memory", action="store_true", default=False)
parser.add_argument("-t", "--time", action="store_true", default=False)
parser.add_argument("-c", "--cpu", action="store_true", default=False)
parser.add_argument("-mf", "--memoryfreq", type=float, default=0.1)
parser.add_argument("-cf", "--cpufreq", type=float, default=0.1)
config = vars(parser.parse_args())

metrics = []
types = []
if config["memory"]:
    metrics.append(umlaut.MemoryMetric('memory', interval=config["memoryfreq"]))
    types.append("memory")
if config["cpu"]:
    metrics.append(umlaut.CPUMetric('cpu', interval=config["cpufreq"]))
    types.append("cpu")
if config["time"] or len(metrics) == 0:
    metrics.append(umlaut.TimeMetric('time'))
    types.append("time")

bm = umlaut.Benchmark('custom_script.db', description="Benchmark custom scripts.")


@umlaut.BenchmarkSupervisor(metrics, bm)
def execute_command(command, dir):
    original_dir = os.getcwd()
    os.chdir(dir)
    process = subprocess.Popen(command.split(" "), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    stdout, stderr = process.communicate()
    os.chdir(original_dir)


execute_command(config["command"], config["execution_folder"])
uuid = bm.uuid
print("UUID", uuid)
bm.close()
cli = subprocess.run(["umlaut-cli", "custom_script.db", "-u", uuid, "-t"] + types + ["-d"] +
                     types + ["-p", "plotly"])
raise SystemExit(cli.returncode)
"""


def run_umlaut_script(path, *args: str) -> subprocess.CompletedProcess:
    """An UMLAUT script as its own shell scripts run it: in its folder, `import umlaut` finding
    footprint's, `umlaut-cli` on PATH (the link beside the footprint binary under test)."""
    binary = os.environ.get("FOOTPRINT_BIN")
    if not binary:
        pytest.skip("FOOTPRINT_BIN is not set (umlaut-cli is a link beside it)")
    env = child_env(PATH=os.path.dirname(os.path.abspath(binary)) + os.pathsep +
                    os.environ["PATH"])
    return subprocess.run([PYTHON, str(path), *args], env=env, cwd=path.parent,
                          capture_output=True, text=True, timeout=120)


def plot_data(page) -> dict:
    """The JSON document of a plot page (#fp-data)."""
    import json
    text = page.read_text()
    start = text.index('id="fp-data">') + len('id="fp-data">')
    return json.loads(text[start:text.index("</script>", start)])


def test_custom_pipeline_runs_unchanged_with_its_closing_call(tmp_path):
    script = write_script(tmp_path, CUSTOM_PIPELINE, "run_script.py")
    result = run_umlaut_script(script, "-cmd", "sleep 0.5", "-folder", ".", "-t", "-c", "-m")
    # Its closing call: -t memory cpu time -d memory cpu time.
    assert result.returncode == 0, result.stderr
    data = plot_data(tmp_path / "umlaut-plot.html")
    assert sorted(m["name"] for m in data["metrics"]) == ["cpu", "memory"]
    assert [s["name"] for s in data["scopes"]] == ["execute_command"]
    (duration,) = fp.load(tmp_path / "custom_script.db").scopes["duration_s"]
    assert data["scopes"][0]["runs"][0]["total_s"] == pytest.approx(duration)
    assert duration >= 0.5


# Written against UMLAUT's pipelines/meta_benchmark: the benchmark lives in a module of its
# own, several functions share one list of metric objects (so their descriptions), the order
# of operations is chosen on the command line, and the script ends with UMLAUT's call.
META_BENCHMARK_MODULE = """
import umlaut

bm = umlaut.Benchmark('benchmark.db', description="Benchmark for Meta Benchmarks.")
"""
META_BENCHMARK = """
import argparse
import subprocess
import time

import numpy as np
import umlaut as eb
from meta_benchmark import bm

parser = argparse.ArgumentParser(description="Umlaut benchmark configs")
parser.add_argument("-m", "--memory", action="store_true", default=False)
parser.add_argument("-t", "--time", action="store_true", default=False)
parser.add_argument("-c", "--cpu", action="store_true", default=False)
parser.add_argument("-mf", "--memoryfreq", type=float, default=0.1)
parser.add_argument("-cf", "--cpufreq", type=float, default=0.1)
parser.add_argument("-o", "--order", nargs="+", required=True)
config = vars(parser.parse_args())

metrics = []
types = []
if config["memory"]:
    metrics.append(eb.MemoryMetric('memory', interval=config["memoryfreq"]))
    types.append("memory")
if config["cpu"]:
    metrics.append(eb.CPUMetric('cpu', interval=config["cpufreq"]))
    types.append("cpu")
if config["time"] or len(metrics) == 0:
    metrics.append(eb.TimeMetric('time'))
    types.append("time")


@eb.BenchmarkSupervisor(metrics, bm)
def sorting():
    np.random.randint(low=0, high=1000, size=100000).sort()


@eb.BenchmarkSupervisor(metrics, bm)
def sleep():
    time.sleep(0.3)


@eb.BenchmarkSupervisor(metrics, bm)
def matrix_mult():
    np.matmul(np.random.random((100, 100)), np.random.random((100, 100)))


operation_dict = {"sleep": sleep, "sort": sorting, "mult": matrix_mult}
for operation in config["order"]:
    operation_dict[operation]()
uuid = bm.uuid
bm.close()
cli = subprocess.run(["umlaut-cli", "benchmark.db", "-u", uuid, "-t"] + types + ["-d"] + types +
                     ["-p", "plotly"])
raise SystemExit(cli.returncode)
"""


@pytest.mark.parametrize("flags", [["-t"], ["-t", "-c", "-m"]])
def test_meta_benchmark_description_shared_by_functions_names_those_that_ran(tmp_path, flags):
    write_script(tmp_path, META_BENCHMARK_MODULE, "meta_benchmark.py")
    script = write_script(tmp_path, META_BENCHMARK, "cpu_memory_power_measurements.py")
    result = run_umlaut_script(script, "-o", "sleep", "mult", "sleep", *flags)
    assert result.returncode == 0, result.stderr
    data = plot_data(tmp_path / "umlaut-plot.html")
    # 'time' describes the metric of sorting, sleep and matrix_mult; two of them ran.
    scopes = {s["name"]: s["runs"][0]["count"] for s in data["scopes"]}
    assert scopes == {"sleep": 2, "matrix_mult": 1}
    if "-m" in flags:  # -t memory cpu time: those two series, none of the run's others
        assert {m["name"] for m in data["metrics"]} == {"memory", "cpu"}
    else:  # -t time alone: the scopes' durations, no metric's chart
        assert data["metrics"] == []


def test_stock_market_pipeline_files_run_unchanged(tmp_path):
    """UMLAUT's pipelines/stock_market_pipeline: four files `import umlaut` (as eb, or names
    from it), share the Benchmark of benchmarking.py, and train.py opens a second one."""
    write_script(tmp_path, """
        import umlaut

        bm = umlaut.Benchmark('stock_market_benchmark.db', description="Stock Market Prediction")
        """, "benchmarking.py")
    write_script(tmp_path, """
        import umlaut as eb
        from benchmarking import bm


        @eb.BenchmarkSupervisor([eb.MemoryMetric('prep memory'), eb.TimeMetric('prep time'),
                                 eb.PowerMetric('prep power')], bm)
        def prepare_data():
            return list(range(740)), "model"
        """, "data_preparation.py")
    write_script(tmp_path, """
        from benchmarking import bm
        import umlaut as eb
        from umlaut import Benchmark, BenchmarkSupervisor, TimeMetric, MemoryMetric, \\
            PowerMetric, EnergyMetric, LatencyMetric, ThroughputMetric, TTATracker

        bm = Benchmark('stock_market.db')
        lat = LatencyMetric('stock market latency')
        thr = ThroughputMetric('stock market throughput')
        tta = TTATracker(bm)


        @BenchmarkSupervisor([TimeMetric('stock market time'),
                              MemoryMetric('stock market memory', interval=0.1),
                              PowerMetric('stock market power'),
                              EnergyMetric('stock market energy'), lat, thr], bm)
        def train(model, X_train, y_train, batch_size=32, epochs=3):
            lat.track(num_entries=len(X_train))
            thr.track(num_entries=len(X_train))
            tta.track(accuracies=[0.5, 0.7, 0.6], description="stock market TTA")
            return model
        """, "train.py")
    write_script(tmp_path, """
        import umlaut as eb
        from benchmarking import bm


        @eb.BenchmarkSupervisor([eb.MemoryMetric('test memory'), eb.TimeMetric('test time'),
                                 eb.PowerMetric('test power')], bm)
        def test(df, model, sc):
            return sum(df)
        """, "test.py")
    main = write_script(tmp_path, """
        import train
        import test
        import data_preparation
        from benchmarking import bm


        def main():
            df, model = data_preparation.prepare_data()
            model = train.train(model, df, df)
            test.test(df, model, None)
            bm.close()


        if __name__ == "__main__":
            main()
        """, "main.py")
    result = run_umlaut_script(main)
    assert result.returncode == 0, result.stderr
    pipeline = fp.load(tmp_path / "stock_market_benchmark.db")
    assert set(pipeline.scopes["name"]) == {"prepare_data", "test"}
    training = fp.load(tmp_path / "stock_market.db")
    v = training.values
    assert list(v[v["name"] == "accuracy"].sort_values("step")["value"]) == [0.5, 0.7, 0.7]
    assert set(v[v["name"].isin(["latency", "throughput"])]["scope"]) == {"train"}


def test_import_umlaut_says_which_interpreter_footprint_is_built_for(tmp_path):
    """UMLAUT's scripts call `python`: where that interpreter cannot load footprint's compiled
    module (another Python version), `import umlaut` says so and what to run instead."""
    import shutil
    shutil.copytree(os.path.join(PACKAGE_PATH, "umlaut"), tmp_path / "umlaut")
    # footprint as another Python sees it: the package, but no compiled module of its own.
    shutil.copytree(os.path.join(PACKAGE_PATH, "footprint"), tmp_path / "footprint",
                    ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    for statement in ("import umlaut", "import footprint"):
        # From tmp_path: `python -c` puts the current folder before PYTHONPATH, and the
        # build's own package folder may be where the tests run.
        result = subprocess.run([PYTHON, "-c", statement], capture_output=True, text=True,
                                env={"PATH": os.environ["PATH"], "PYTHONPATH": str(tmp_path)},
                                cwd=tmp_path, timeout=60)
        assert result.returncode == 1
        last = result.stderr.strip().splitlines()[-1]
        assert last.startswith("ImportError: footprint (and its umlaut and radt packages) does "
                               "not load in this Python"), last
        assert f"this Python ({PYTHON}" in last and "-DFOOTPRINT_PYTHON" in last


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


@pytest.mark.parametrize("journal", ["delete", "wal"])
def test_benchmark_on_umlauts_own_database_is_refused_and_changes_nothing(tmp_path, journal):
    """UMLAUT's github example opens Benchmark('hello_world.db'): pointed at a database UMLAUT
    wrote, footprint refuses before writing anything, the journal mode included."""
    import hashlib
    import sqlite3

    db = tmp_path / "hello_world.db"
    with sqlite3.connect(db) as conn:
        conn.execute(f"PRAGMA journal_mode={journal}")
        conn.execute("CREATE TABLE benchmark_metadata (uuid TEXT PRIMARY KEY, description TEXT, "
                     "start_time DATETIME)")
    conn.close()
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    from footprint.umlaut import Benchmark
    with pytest.raises(Exception, match="not a footprint one"):
        Benchmark(str(db), description="x")
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hello_world.db"]
