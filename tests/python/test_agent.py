"""The PyTorch agent (python3 -m footprint.agent) under `footprint load`: a real torchvision
model answers every query of the single and offline scenarios, joins the run (one
`inference` scope and one `batch_size` value per forward pass, the framework recorded), and
batches what is waiting in the offline scenario (the batch sizes add up to the samples).
Its options for `footprint evaluate`: --describe, a folder of images (--inputs, --preprocess),
a TorchScript model (--model-file), --postprocess, --trace-framework, and the refusals before
`ready` (exit status 2, one line on stderr)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import footprint as fp
from fp_python import PYTHON, child_env, run_footprint

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")
Image = pytest.importorskip("PIL.Image")

BASE = [PYTHON, "-m", "footprint.agent", "--threads", "1"]
AGENT = BASE + ["--model", "mobilenet_v3_small", "--resolution", "32"]
SMALL_PREPROCESS = '[{"resize": 36}, {"center_crop": 32}, "to_tensor", {"normalize": "imagenet"}]'


def batches(data):
    v = data.values
    return list(v[v["name"] == "batch_size"]["value"])


def record(data, name):
    v = data.values
    return v[v["name"] == name].iloc[0]["data"]


def run_agent(*args: str, queries: str = "") -> subprocess.CompletedProcess:
    """The agent alone, outside footprint: `queries` on its stdin, which then closes."""
    return subprocess.run(list(args), input=queries, env=child_env(), capture_output=True,
                          text=True, timeout=120)


SINGLE = ("--scenario", "single", "--duration", "1s", "--min-queries", "10")


def load_agent(db: Path, *agent: str, scenario: tuple = SINGLE) -> fp.Data:
    """A load of `agent` into `db`, every query answered."""
    result = run_footprint("load", "-o", str(db), "--no-git", "-q", *scenario, "--", *agent,
                           timeout=300)
    assert result.returncode == 0, result.stderr
    data = fp.load(db)
    latency = data.values[data.values["name"] == "load.latency"]
    assert len(latency) >= 8 and latency["value"].notna().all()
    return data


def images(folder: Path, sizes=((40, 30), (50, 64), (33, 33), (64, 50), (30, 40))) -> Path:
    folder.mkdir()
    for i, size in enumerate(sizes):
        Image.new("RGB", size, (40 * i, 100, 200 - 30 * i)).save(folder / f"image{i}.png")
    return folder


def refused(result: subprocess.CompletedProcess) -> str:
    """The one line of an agent that refused before `ready`."""
    assert result.returncode == 2, result.stderr
    assert "ready" not in result.stdout
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("footprint.agent: "), result.stderr
    return lines[0]


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
    framework = record(data, "framework")
    assert framework["framework"] == "pytorch" and framework["version"] == torch.__version__
    assert framework["model"] == "mobilenet_v3_small" and framework["threads"] == 1
    assert framework["shape"] == [3, 32, 32] and framework["inputs"] is None
    assert isinstance(framework["blas"], list)


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


def test_describe_prints_one_line_of_json():
    result = run_agent(*BASE, "--describe")
    assert result.returncode == 0, result.stderr
    [line] = result.stdout.splitlines()
    described = json.loads(line)
    assert described["framework"] == "pytorch" and described["version"] == torch.__version__
    assert described["torchvision"] == torchvision.__version__
    assert described["threads"] == 1 and described["device"] == "cpu"
    assert isinstance(described["blas"], list) and "cuda" in described
    assert described["cores"] >= 1 and isinstance(described["isa"], list)
    if described["blas_kernel"] is not None:  # OpenBLAS: pinned to torch's one thread
        assert described["blas_threads"] == 1 and described["blas_config"].startswith("OpenBLAS")


def test_a_folder_of_images_is_preprocessed_into_the_inputs(tmp_path):
    folder = images(tmp_path / "images")
    data = load_agent(tmp_path / "images.db", *BASE, "--model", "mobilenet_v3_small",
                       "--inputs", str(folder), "--preprocess", SMALL_PREPROCESS)
    framework = record(data, "framework")
    assert framework["inputs"] == str(folder) and framework["pool"] == 5
    assert framework["shape"] == [3, 32, 32]
    assert framework["preprocess"] == json.loads(SMALL_PREPROCESS)


def test_a_file_that_is_no_image_is_refused_before_ready(tmp_path):
    folder = images(tmp_path / "images", sizes=((40, 30),))
    (folder / "notes.txt").write_text("not an image\n")
    line = refused(run_agent(*BASE, "--model", "mobilenet_v3_small", "--inputs", str(folder),
                             "--preprocess", SMALL_PREPROCESS))
    assert str(folder / "notes.txt") in line


def test_a_torchscript_file_answers_queries(tmp_path):
    tiny = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.AdaptiveAvgPool2d(1),
                               torch.nn.Flatten(), torch.nn.Linear(4, 10))
    path = tmp_path / "tiny.pt"
    torch.jit.script(tiny).save(str(path))
    data = load_agent(tmp_path / "script.db", *BASE, "--model-file", str(path),
                       "--shape", "3,16,16")
    framework = record(data, "framework")
    assert framework["model"] is None and framework["model_file"] == str(path)
    assert framework["shape"] == [3, 16, 16]


def test_postprocess_topk_answers_the_best_classes_first():
    queries = "".join(f"{i}\t{i}\n" for i in range(4))
    topk = run_agent(*AGENT, "--postprocess", "topk:3", queries=queries)
    assert topk.returncode == 0, topk.stderr
    lines = topk.stdout.splitlines()
    assert lines[0] == "ready" and len(lines) == 5
    answers = dict(line.split("\t") for line in lines[1:])
    assert sorted(answers) == ["0", "1", "2", "3"]
    for classes in answers.values():
        indices = [int(c) for c in classes.split(",")]
        assert len(indices) == 3 and len(set(indices)) == 3
    # Same seed, same weights and inputs: softmax's class is topk's first.
    softmax = run_agent(*AGENT, "--postprocess", "softmax", queries=queries)
    for line in softmax.stdout.splitlines()[1:]:
        qid, result = line.split("\t")
        best, probability = result.split(":")
        assert best == answers[qid].split(",")[0] and 0 < float(probability) <= 1


def test_trace_framework_stores_the_operators(tmp_path):
    # Few batches: the profiler's summary costs about 0.1 s per batch of this model. They run
    # after the load, so that no query pays for the profiler: every forward pass of the load
    # is still an `inference` scope, the profiled ones are not.
    data = load_agent(tmp_path / "trace.db", *AGENT, "--trace-framework", "--trace-batches", "3",
                      "--max-batch", "2",
                      scenario=("--scenario", "offline", "--min-queries", "8"))
    report = record(data, "framework.operators")
    assert report["sort"] == "self_cpu_time" and report["profiled_batches"] == 3
    assert sum(batches(data)) == 8
    # The same convolutions in each profiled batch. Which of the convolution operators (the
    # aten::convolution wrapper, the mkldnn kernel under it) make the top 30 by self time
    # depends on the machine: any that does.
    convolutions = [op for op in report["operators"] if op["name"].endswith("convolution")]
    assert convolutions and all(op["calls"] % 3 == 0 for op in convolutions), \
        report["operators"]
    operators = report["operators"]
    assert 0 < len(operators) <= 30
    assert any(op["name"].startswith("aten::") and op["calls"] > 0 and op["self_cpu_s"] > 0
               for op in operators)
    self_times = [op["self_cpu_s"] for op in operators]
    assert self_times == sorted(self_times, reverse=True)


def test_pretrained_weights_are_refused():
    line = refused(run_agent(*AGENT, "--model-args", '{"weights": "IMAGENET1K_V1"}'))
    assert line == "footprint.agent: weights must be null: nothing can be downloaded"
