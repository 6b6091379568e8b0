"""Valued metrics from Python: trackers, logged values, latency/throughput and artifacts."""

from __future__ import annotations

import hashlib
import time
import warnings

import numpy as np
import pytest

import footprint as fp


def values_of(db, bm):
    return fp.load(db, runs=bm.run_id).values


def test_loss_tracker_scalars_and_sequences(db):
    with fp.Benchmark(db) as bm:
        tracker = fp.LossTracker(bm)
        with bm.scope("epoch"):
            tracker.track(np.float32(0.75), step=0)
        tracker.track(0.5, step=1)
        fp.LossTracker(bm, name="val_loss").track([0.9, 0.6, 0.4])
    v = values_of(db, bm)
    loss = v[v["name"] == "loss"].sort_values("step")
    assert list(loss["step"]) == [0, 1]
    assert list(loss["value"]) == [0.75, 0.5]
    assert list(loss["scope"].fillna("-")) == ["epoch", "-"]
    val = v[v["name"] == "val_loss"].sort_values("step")
    assert list(val["step"]) == [0, 1, 2]
    assert np.allclose(val["value"], [0.9, 0.6, 0.4])


def test_tta_tracker_records_time_to_accuracy_once(db):
    with fp.Benchmark(db) as bm:
        tta = fp.TTATracker(bm, target=0.8)
        start = bm.now()
        for epoch, acc in enumerate([0.5, 0.7]):
            tta.track(acc, step=epoch)
        assert not tta.reached
        time.sleep(0.05)
        tta.track(0.85, step=2)
        reached_at = bm.now()
        tta.track(0.9, step=3)  # reached before: no second time_to_accuracy
        fp.TTATracker(bm).track([0.1, 0.2])  # no target: accuracy only
    assert tta.reached and start < tta.time_to_accuracy <= reached_at
    v = values_of(db, bm)
    acc = v[v["name"] == "accuracy"]
    assert len(acc) == 6
    assert sorted(acc["value"]) == sorted([0.5, 0.7, 0.85, 0.9, 0.1, 0.2])
    ttas = v[v["name"] == "time_to_accuracy"]
    assert len(ttas) == 1
    row = ttas.iloc[0]
    assert row["step"] == 2
    assert row["data"] == {"target": 0.8, "accuracy": 0.85}
    # Seconds since the run started, on the same timeline as everything else.
    assert start + 0.05 <= row["value"] <= reached_at
    assert abs(row["value"] - row["t_s"]) < 0.01


def test_confusion_matrix_tracker_stores_labels_and_matrix(db):
    matrix = np.array([[5, 1, 0], [2, 7, 1], [0, 0, 9]])
    with fp.Benchmark(db) as bm:
        with bm.scope("evaluate"):
            fp.ConfusionMatrixTracker(bm).track(matrix, ["cat", "dog", "bird"])
        with pytest.raises(fp.FootprintError) as e:
            fp.ConfusionMatrixTracker(bm).track([[1, 2], [3, 4]], ["a", "b", "c"])
        assert e.value.code == "invalid_argument" and "3 labels" in str(e.value)
    v = values_of(db, bm)
    assert list(v["name"]) == ["confusion_matrix"]
    row = v.iloc[0]
    assert row["scope"] == "evaluate" and np.isnan(row["value"])
    assert row["data"] == {"kind": "confusion_matrix", "labels": ["cat", "dog", "bird"],
                           "matrix": matrix.tolist()}


def test_hyperparameter_tracker(db):
    with fp.Benchmark(db) as bm:
        with fp.HyperparameterTracker(bm, ["lr", "batch"], target="acc",
                                      low_means_good=False) as hp:
            hp.track({"lr": 0.1, "batch": 32, "acc": 0.81, "ignored": 1})
            hp.track({"lr": np.float64(0.01), "batch": 64, "acc": 0.9})
            with pytest.raises(KeyError, match="batch"):
                hp.track({"lr": 0.5, "acc": 0.1})
        assert hp.closed
        fp.HyperparameterTracker(bm, ["optimizer"], target="loss").track(
            {"optimizer": "adam", "loss": 0.3})
    v = values_of(db, bm)
    sets = v[v["name"] == "hyperparameters"].sort_values("id")
    assert list(sets["value"][:2]) == [0.81, 0.9]
    assert sets["data"].iloc[0] == {"kind": "hyperparameters", "params": {"lr": 0.1, "batch": 32},
                                    "target": "acc", "low_means_good": False}
    assert sets["data"].iloc[1]["params"] == {"lr": 0.01, "batch": 64}
    # Non-numeric parameters: the same document shape, and the target's value beside it.
    assert sets["value"].iloc[2] == 0.3
    assert sets["data"].iloc[2] == {"kind": "hyperparameters", "params": {"optimizer": "adam"},
                                    "target": "loss", "low_means_good": True}


def test_log_and_log_json_in_the_innermost_scope(db):
    with fp.Benchmark(db) as bm:
        bm.log("rows", 1000)
        with bm.scope("outer"):
            with bm.scope("inner"):
                bm.log("throughput", 12.5, step=7)
            bm.log_json("config", {"layers": np.array([1, 2]), "name": "x"}, step=1)
        with pytest.raises(fp.FootprintError):
            bm.log_json("bad", float("nan"))  # NaN is not JSON
    v = values_of(db, bm).set_index("name")
    assert v.loc["rows", "value"] == 1000 and v.loc["rows", "scope"] is None
    assert v.loc["throughput", "scope"] == "inner" and v.loc["throughput", "step"] == 7
    assert v.loc["config", "scope"] == "outer"
    assert v.loc["config", "data"] == {"layers": [1, 2], "name": "x"}


def test_latency_and_throughput_metrics(db):
    bm = fp.Benchmark(db)
    latency, throughput = fp.Latency(), fp.Throughput()

    @fp.supervise([latency, throughput, fp.Time()], bm, name="batch")
    def batch(n):
        time.sleep(0.02)
        latency.track(n)
        throughput.track(n)

    @fp.supervise([fp.Latency()], bm, name="untracked")
    def untracked():
        pass

    batch(10)
    batch(40)
    untracked()
    bm.close()
    data = fp.load(db, runs=bm.run_id)
    scopes = data.scopes.set_index("id")
    v = data.values
    lat = v[v["name"] == "latency"].sort_values("id")
    thr = v[v["name"] == "throughput"].sort_values("id")
    assert len(lat) == 2 and len(thr) == 2  # nothing for the untracked call
    for (_, l_row), (_, t_row), n in zip(lat.iterrows(), thr.iterrows(), (10, 40)):
        duration = scopes.loc[l_row["scope_id"], "duration_s"]
        assert l_row["scope"] == "batch"
        assert l_row["value"] == pytest.approx(duration / n, rel=0.2)
        assert t_row["value"] == pytest.approx(n / duration, rel=0.2)


def test_unmeasured_metrics_warn_and_record_nothing(db):
    with fp.Benchmark(db) as bm:
        with pytest.warns(fp.FootprintWarning, match="GPU utilisation is not measured per call"):
            @fp.supervise([fp.GPU(interval=0.1), fp.Energy(), fp.Time()], bm, name="gpu")
            def gpu():
                return 1
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert gpu() == 1
    data = fp.load(db, runs=bm.run_id)
    assert list(data.scopes["name"]) == ["gpu"]
    assert data.values.empty
    assert not data.samples["metric"].str.startswith(("gpu", "energy", "power")).any()


def test_artifact_path_hash_and_size(db, tmp_path):
    model = tmp_path / "model.bin"
    payload = bytes(range(256)) * 1000
    model.write_bytes(payload)
    with fp.Benchmark(db) as bm:
        bm.artifact("model", model)
        with bm.scope("busy"):  # the native writer works meanwhile
            bm.artifact("model", model)  # replaces
        with pytest.raises(FileNotFoundError):
            bm.artifact("missing", tmp_path / "nope")
    a = fp.load(db, runs=bm.run_id).artifacts
    assert len(a) == 1
    assert a.iloc[0]["path"] == str(model)
    assert a.iloc[0]["size"] == len(payload)
    assert a.iloc[0]["sha256"] == hashlib.sha256(payload).hexdigest()


def test_hostile_names_reach_exports_and_terminals_inert(db):
    """A value and a scope named to set a terminal's title and break a CSV record; the scope
    stays open over several samples, so that `show` also names it in its samples table."""
    from fp_python import run_footprint

    hostile = "esc\x1b]0;pwned\x07\nsecond, line\x9b31m"
    with fp.Benchmark(db, name=hostile, interval=0.01) as bm:
        with bm.scope(hostile):
            bm.log(hostile, 1.5, step=0)
            time.sleep(0.2)
    proc = run_footprint("export", "-o", str(db), "--format", "csv", "--out", "-")
    assert proc.returncode == 0, proc.stderr
    records = proc.stdout.splitlines()
    assert not any(c in proc.stdout for c in "\x1b\x07\x9b"), proc.stdout
    named = [r for r in records if "esc\\e]0;pwned\\x07\\nsecond, line\\x9b31m" in r]
    kinds = sorted(r.split(",")[1] for r in named)
    assert kinds == ["scope", "value"], records  # each one record, on one line
    for args in (["runs"], ["show"]):
        out = run_footprint(*args, "-o", str(db)).stdout
        assert not any(c in out for c in "\x1b\x07\x9b"), out
        assert "esc\\e]0;pwned" in out, out
    sampled_in_scope = [l for l in out.splitlines() if l.startswith("  memory ") and "pwned" in l]
    assert len(sampled_in_scope) == 1, out
