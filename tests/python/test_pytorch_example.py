"""The PyTorch example (examples/pytorch_cnn/train.py) under `footprint run`: its stages, loss
curve, accuracy and the process metrics are one run."""

from __future__ import annotations

import hashlib

import pytest

import footprint as fp
from fp_python import PYTHON, REPO, run_footprint

pytest.importorskip("torch")

EXAMPLE = REPO / "examples" / "pytorch_cnn" / "train.py"


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cnn")
    db, model = tmp / "cnn.db", tmp / "model.pt"
    result = run_footprint("run", "-o", str(db), "-n", "cnn", "-i", "20ms", "--", PYTHON,
                           str(EXAMPLE), "--epochs", "3", "--model-out", str(model),
                           cwd=tmp, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "test accuracy" in result.stdout
    return fp.load(db), model


def test_one_run_with_the_stages(trained):
    data, _ = trained
    assert len(data.runs) == 1
    run = data.runs.iloc[0]
    assert run["name"] == "cnn" and run["status"] == "ok" and run["exit_code"] == 0
    assert set(data.scopes["run_id"]) == set(data.values["run_id"]) == {run["id"]}
    s = data.scopes
    top = s[s["parent_id"].isna()].sort_values("start_s")
    assert list(top["name"]) == ["load", "train", "evaluate"]
    assert (top["end_s"].values[:-1] <= top["start_s"].values[1:]).all()
    assert (top["duration_s"] > 0).all()
    assert 0 < top["start_s"].min() and top["end_s"].max() < run["duration_s"]
    train = top.set_index("name").loc["train"]
    epochs = s[s["name"] == "epoch"]
    assert len(epochs) == 3 and (epochs["parent_id"] == train["id"]).all()
    validations = s[s["name"] == "validate"]
    assert len(validations) == 3 and set(validations["parent_id"]) == set(epochs["id"])
    assert epochs["duration_s"].sum() <= train["duration_s"]


def test_loss_curve_accuracy_and_time_to_accuracy(trained):
    data, _ = trained
    v, s = data.values, data.scopes.set_index("id")
    loss = v[v["name"] == "loss"].sort_values("step")
    assert list(loss["step"]) == [0, 1, 2]
    assert set(loss["scope"]) == {"epoch"}
    curve = list(loss["value"])
    assert curve[2] < curve[0] * 0.5  # it learns
    acc = v[v["name"] == "accuracy"].sort_values("step")
    assert list(acc["step"]) == [0, 1, 2] and acc["value"].iloc[-1] >= 0.9
    tta = v[v["name"] == "time_to_accuracy"]
    assert len(tta) == 1 and tta.iloc[0]["data"]["target"] == 0.9
    # Reached during training, on the run's clock: within the train stage.
    train = data.scopes[data.scopes["name"] == "train"].iloc[0]
    assert train["start_s"] < tta.iloc[0]["value"] <= train["end_s"]
    matrix = v[v["name"] == "confusion_matrix"].iloc[0]
    assert s.loc[matrix["scope_id"], "name"] == "evaluate"
    assert len(matrix["data"]["labels"]) == 10
    assert sum(map(sum, matrix["data"]["matrix"])) == 400  # the test split
    hp = v[v["name"] == "hyperparameters"].iloc[0]
    assert hp["data"]["params"] == {"lr": 0.01, "batch_size": 64.0, "epochs": 3.0}
    assert hp["value"] == pytest.approx(acc["value"].iloc[-1])


def test_process_metrics_in_the_same_run(trained):
    data, model = trained
    samples = data.samples
    assert {"cpu", "memory", "threads", "processes", "io.read"} <= set(samples["metric"])
    assert len(samples[samples["metric"] == "cpu"]) >= 10
    train = int(data.scopes[data.scopes["name"] == "train"].iloc[0]["id"])
    memory = data.during(train, "memory")
    cpu = data.during(train, "cpu")
    assert len(memory) >= 2 and memory["value"].min() > 50 * 2**20  # torch is loaded
    assert len(cpu) >= 2 and cpu["value"].max() > 20  # training keeps a core busy
    totals = data.totals.set_index("name")["value"]
    assert totals["peak_memory_bytes"] >= memory["value"].max()
    assert totals["cpu_user_s"] > 0.3
    artifact = data.artifacts.iloc[0]
    assert artifact["name"] == "model" and artifact["path"] == str(model)
    assert artifact["sha256"] == hashlib.sha256(model.read_bytes()).hexdigest()
