"""The PyTorch agent (python3 -m footprint.agent) under `footprint load`: a real torchvision
model answers every query of the single and offline scenarios, joins the run (one
`inference` scope and one `batch_size` value per forward pass, the framework recorded), and
batches what is waiting in the offline scenario (the batch sizes add up to the samples)."""

from __future__ import annotations

import pytest

import footprint as fp
from fp_python import PYTHON, run_footprint

torch = pytest.importorskip("torch")
pytest.importorskip("torchvision")

AGENT = [PYTHON, "-m", "footprint.agent", "--model", "mobilenet_v3_small", "--resolution", "32",
         "--threads", "1"]


def batches(data):
    v = data.values
    return list(v[v["name"] == "batch_size"]["value"])


def test_single_stream_one_forward_pass_per_query(tmp_path):
    db = tmp_path / "single.db"
    result = run_footprint("load", "-o", str(db), "--no-git", "--scenario", "single",
                           "--duration", "1s", "--min-queries", "20", "--", *AGENT, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "load single: " in result.stderr
    data = fp.load(db)
    v = data.values
    latency = v[v["name"] == "load.latency"]
    assert len(latency) >= 20 and latency["value"].notna().all()
    assert batches(data) == [1.0] * len(latency)
    assert (data.scopes["name"] == "inference").sum() == len(latency)
    framework = v[v["name"] == "framework"].iloc[0]["data"]
    assert framework["name"] == "torch" and framework["version"] == torch.__version__
    assert framework["model"] == "mobilenet_v3_small" and framework["threads"] == 1


def test_offline_batches_what_is_waiting(tmp_path):
    db = tmp_path / "offline.db"
    result = run_footprint("load", "-o", str(db), "--no-git", "-q", "--scenario", "offline",
                           "--min-queries", "64", "--", *AGENT, "--max-batch", "16",
                           timeout=300)
    assert result.returncode == 0, result.stderr
    data = fp.load(db)
    sizes = batches(data)
    assert sum(sizes) == 64 and max(sizes) > 1 and max(sizes) <= 16
    latency = data.values[data.values["name"] == "load.latency"]
    assert len(latency) == 64 and latency["value"].notna().all()
