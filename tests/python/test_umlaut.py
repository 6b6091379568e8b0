"""An UMLAUT script runs unchanged but for its import, and its data land in footprint's
database."""

from __future__ import annotations

import pytest

import footprint as fp
from fp_python import run_python, write_script

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
               mode="w")

bloat_metrics = {
    "memory": MemoryMetric('bloat memory', interval=0.1),
    "cpu": CPUMetric('bloat cpu', interval=0.1),
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


@BenchmarkSupervisor([GPUMetric('gpu util', interval=0.5)], bm)
def on_gpu():
    return 1


def main():
    bloat()
    bloat()
    infer(list(range(100)))
    on_gpu()
    LossTracker(bm).track([2.0, 1.0, 0.5], "training loss")
    TTATracker(bm).track([0.5, 0.8, 0.9], "training accuracy")
    timed = TimedTTATracker(bm, 0.75)
    for acc in (0.5, 0.8, 0.9):
        timed.track(acc, "timed accuracy")
    # UMLAUT: axis 0 is the prediction, axis 1 the true class.
    ConfusionMatrixTracker(bm).track([[5, 1], [2, 7]], ["cat", "dog"], "test matrix")
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
    assert list(acc.sort_values("step")["value"]) == [0.5, 0.8, 0.9]
    timed = v[(v["name"] == "accuracy") & (v["scope"] == "timed accuracy")]
    assert list(timed.sort_values("step")["value"]) == [0.5, 0.8, 0.9]
    tta = v[v["name"] == "time_to_accuracy"]
    assert len(tta) == 1 and tta.iloc[0]["step"] == 1
    assert tta.iloc[0]["data"] == {"target": 0.75, "accuracy": 0.8}
    matrix = v[v["name"] == "confusion_matrix"].iloc[0]
    assert matrix["scope"] == "test matrix"
    # Stored as footprint's matrix[true][predicted]: UMLAUT's transposed.
    assert matrix["data"]["matrix"] == [[5, 2], [1, 7]]
    assert matrix["data"]["labels"] == ["cat", "dog"]
    hp = v[v["name"] == "hyperparameters"].sort_values("id")
    assert list(hp["value"]) == [0.4, 0.2] and set(hp["scope"]) == {"grid search"}
    assert [d["params"] for d in hp["data"]] == [{"lr": 0.1, "batch_size": 32},
                                                {"lr": 0.01, "batch_size": 64}]
    assert all(d["low_means_good"] for d in hp["data"])
