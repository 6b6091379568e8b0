"""footprint evaluate MANIFEST.yaml: a manifest's model through the PyTorch agent, one
`footprint load` run per scenario, batch size and rate, each stored with the manifest (and its
sha256), the model's checksum and the framework as the agent described it; a model file whose
checksum differs, a framework whose version does not satisfy the manifest, and manifests that
are wrong are refused with one line before anything runs."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3

import pytest

from fp_python import PYTHON, REPO, run_footprint

torch = pytest.importorskip("torch")
pytest.importorskip("torchvision")

BASE = f"""
model:
  torchvision: mobilenet_v3_small
  args: {{num_classes: 10}}
framework:
  name: pytorch
  version: ">=1.13"
  threads: 1
  python: {PYTHON}
inputs:
  synthetic: {{shape: [3, 32, 32], pool: 8}}
"""


def manifest(tmp_path, text, name="m.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def runs_of(db):
    with sqlite3.connect(db) as con:
        rows = con.execute("SELECT name, meta FROM runs ORDER BY started_at_ns").fetchall()
    return [(name, json.loads(meta), json.loads(meta)["params"]) for name, meta in rows]


def refused(proc):
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("footprint: "), proc.stderr
    return lines[0]


def test_each_scenario_and_batch_is_a_run_stored_with_its_manifest(tmp_path):
    path = manifest(tmp_path, "name: tiny\n" + BASE + """
postprocess: topk:2
batch_sizes: [1, 4]
scenarios:
  single: {duration: 0.3s, min_queries: 10}
  offline: {min_queries: 16}
trace: [framework, system]
trace_batches: 2
""")
    db = tmp_path / "ev.db"
    proc = run_footprint("evaluate", "-o", str(db), "--no-git", "-q", str(path), timeout=600)
    assert proc.returncode == 0, proc.stderr
    runs = runs_of(db)
    # A single stream's queries are one sample each: it runs at batch 1 only.
    assert [name for name, _, _ in runs] == ["tiny-single-b1", "tiny-offline-b1",
                                             "tiny-offline-b4"]
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    for name, meta, params in runs:
        ev = meta["evaluation"]
        assert ev["manifest_sha256"] == digest and ev["manifest"]["name"] == "tiny"
        assert ev["model"] == {"torchvision": "mobilenet_v3_small", "args": {"num_classes": 10}}
        assert ev["framework"]["version"] == torch.__version__
        assert ev["framework"]["threads"] == 1
        assert ev["trace"] == ["framework", "model", "system"]
        assert params["batch"] == str(ev["batch"]) and params["scenario"] == ev["scenario"]
        assert meta["load"]["queries"] == meta["load"]["issued"]
        assert meta["tags"] == {"evaluation": "tiny"}
    with sqlite3.connect(db) as con:
        sizes = [v for (v,) in con.execute(
            "SELECT v.value FROM run_values v JOIN runs r ON r.id = v.run_id "
            "WHERE r.name = 'tiny-offline-b4' AND v.name = 'batch_size'")]
        operators = con.execute("SELECT COUNT(*) FROM run_values WHERE name = "
                                "'framework.operators'").fetchone()[0]
    assert sum(sizes) == 16 and max(sizes) <= 4
    assert operators == 3  # the framework trace of every run
    table = [line for line in proc.stderr.splitlines() if line.startswith("footprint:   tiny-")]
    assert len(table) == 3


def counting_python(tmp_path):
    """An interpreter that logs each start (its arguments) and then is /usr/bin/python3."""
    log = tmp_path / "starts.log"
    wrapper = tmp_path / "python"
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec {PYTHON} "$@"\n')
    wrapper.chmod(0o755)
    return wrapper, log


@pytest.mark.parametrize("per_run", [False, True], ids=["one-agent", "agent-per-run"])
def test_one_agent_process_serves_every_batch_size(tmp_path, per_run):
    python, starts = counting_python(tmp_path)
    path = manifest(tmp_path, "name: bs\n" + BASE.replace(PYTHON, str(python)) + """
batch_sizes: [1, 2, 4]
scenarios:
  offline: {min_queries: 24}
""")
    db = tmp_path / "ev.db"
    proc = run_footprint("evaluate", "-o", str(db), "--no-git", "-q", str(path),
                         *(["--agent-per-run"] if per_run else []), timeout=600)
    assert proc.returncode == 0, proc.stderr
    agents = [line for line in starts.read_text().splitlines() if "--describe" not in line]
    runs = runs_of(db)
    assert [name for name, _, _ in runs] == ["bs-offline-b1", "bs-offline-b2", "bs-offline-b4"]
    if per_run:
        assert len(agents) == 3 and all("resident" not in meta for _, meta, _ in runs)
        return
    # Started once, at the largest batch, for the three runs.
    assert len(agents) == 1 and agents[0].endswith("--max-batch 4"), agents
    assert len({meta["resident"]["pid"] for _, meta, _ in runs}) == 1
    shown = run_footprint("show", "-o", str(db), "bs-offline-b2").stdout
    assert "serving several runs: its memory here is its RSS" in shown, shown
    with sqlite3.connect(db) as con:
        for name, meta, params in runs:
            run_id = con.execute("SELECT id FROM runs WHERE name = ?", (name,)).fetchone()[0]
            # The agent joined each run in turn, with that run's batch size.
            framework = [json.loads(d) for (d,) in con.execute(
                "SELECT data FROM run_values WHERE run_id = ? AND name = 'framework'",
                (run_id,))]
            assert [f["max_batch"] for f in framework] == [int(params["batch"])]
            sizes = [v for (v,) in con.execute(
                "SELECT value FROM run_values WHERE run_id = ? AND name = 'batch_size'",
                (run_id,))]
            assert sum(sizes) == 24 and max(sizes) <= int(params["batch"])
            # Each run's CPU is its own window's, the load's within it (each window against
            # the process's own getrusage(): tests/unit/resident_load_test.cc).
            load = meta["load"]
            assert load["cpu_source"] == "process"
            run_cpu = meta["accounting"]["resident_user_s"] + meta["accounting"]["resident_system_s"]
            assert 0 < load["cpu_s"] <= run_cpu + 0.02
            assert meta["resident"]["ready_s"] > 0


def test_an_agent_that_cannot_start_is_tried_once_then_each_run_starts_its_own(tmp_path):
    python, starts = counting_python(tmp_path)
    path = manifest(tmp_path, "name: bad\n" + BASE.replace(PYTHON, str(python)).replace(
        "mobilenet_v3_small", "no_such_model") + """
batch_sizes: [1, 2]
scenarios:
  offline: {min_queries: 4}
""")
    db = tmp_path / "ev.db"
    proc = run_footprint("evaluate", "-o", str(db), "--no-git", "-q", str(path), timeout=600)
    assert proc.returncode == 1, proc.stderr
    assert "each run starts the agent itself" in proc.stderr
    agents = [line for line in starts.read_text().splitlines() if "--describe" not in line]
    assert len(agents) == 3  # the resident one, then one per run
    runs = runs_of(db)
    assert [name for name, _, _ in runs] == ["bad-offline-b1", "bad-offline-b2"]
    for _, meta, _ in runs:  # each run stores why
        assert meta["load"]["ended_because"].endswith("before it said 'ready'")
        assert "resident" not in meta


def test_a_footprint_folder_where_evaluate_runs_is_not_imported_as_the_agent(tmp_path):
    # `python -m footprint.agent` puts the current folder first on sys.path: evaluating from a
    # checkout (or a build's python/) imported its footprint folder instead of the package the
    # interpreter has. A decoy there that raises must stay unread, by the describe step and by
    # the agent that serves the run.
    if not os.environ.get("FOOTPRINT_BIN"):
        pytest.skip("`python3 -m footprint` would import the decoy itself: set FOOTPRINT_BIN")
    checkout = tmp_path / "checkout"
    (checkout / "footprint").mkdir(parents=True)
    (checkout / "footprint" / "__init__.py").write_text(
        "raise SystemExit('footprint.agent: the current folder was imported')\n")
    path = manifest(tmp_path, "name: safe\n" + BASE + """
batch_sizes: [1]
scenarios:
  offline: {min_queries: 4}
""")
    db = tmp_path / "ev.db"
    proc = run_footprint("evaluate", "-o", str(db), "--no-git", "-q", str(path), timeout=300,
                         cwd=checkout)
    assert proc.returncode == 0, proc.stderr
    [(name, meta, _)] = runs_of(db)
    assert name == "safe-offline-b1"
    assert meta["evaluation"]["framework"]["version"] == torch.__version__
    assert meta["load"]["queries"] == 4 and meta["load"]["ended_because"] == "done", meta["load"]


def test_a_torchscript_file_is_checked_against_its_pinned_sha256(tmp_path):
    model = torch.jit.script(torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(48, 5)))
    model_path = tmp_path / "tiny.pt"
    model.save(str(model_path))
    digest = hashlib.sha256(model_path.read_bytes()).hexdigest()
    text = BASE.replace("  torchvision: mobilenet_v3_small\n  args: {num_classes: 10}\n",
                        "  file: tiny.pt\n  sha256: SHA\n").replace("[3, 32, 32]", "[3, 4, 4]")
    text += "scenarios:\n  single: {duration: 0.2s, min_queries: 5}\n"
    db = tmp_path / "ts.db"
    ok = manifest(tmp_path, text.replace("SHA", digest), "ok.yaml")
    proc = run_footprint("evaluate", "-o", str(db), "--no-git", "-q", str(ok), timeout=300)
    assert proc.returncode == 0, proc.stderr
    [(_, meta, _)] = runs_of(db)
    assert meta["evaluation"]["model"] == {"file": str(model_path), "sha256": digest}

    wrong = manifest(tmp_path, text.replace("SHA", "0" * 64), "wrong.yaml")
    line = refused(run_footprint("evaluate", "-o", str(tmp_path / "no.db"), str(wrong)))
    assert digest in line and "0" * 64 in line and "refusing" in line
    assert not (tmp_path / "no.db").exists()


def test_a_framework_that_does_not_satisfy_the_version_is_refused(tmp_path):
    path = manifest(tmp_path, BASE.replace('">=1.13"', '">=99, <100"') +
                    "scenarios:\n  single: {min_queries: 5}\n")
    line = refused(run_footprint("evaluate", "-o", str(tmp_path / "v.db"), str(path)))
    assert f"pytorch {torch.__version__} does not satisfy the manifest's '>=99, <100'" in line
    assert not (tmp_path / "v.db").exists()


@pytest.mark.parametrize("change, message", [
    (("scenarios:", "scenario:"), "unknown key 'manifest.scenario'"),
    (("args: {num_classes: 10}", "args: {weights: IMAGENET1K_V1}"), "must be null"),
    (("  synthetic:", "  synthetic: {}\n  folder: x\n  other:"), "unknown key"),
    (("single: {min_queries: 5}", "server: {min_queries: 5}"), "needs 'qps"),
    (("single: {min_queries: 5}", "single: {min_queries: none}"), "whole number"),
    (("single: {min_queries: 5}", "single: {duration: soon}"), "duration"),
    (('">=1.13"', '"~>1.13"'), "is no clause"),
    (("scenarios:", "trace: [kernel]\nscenarios:"), "unknown trace level 'kernel'"),
])
def test_a_wrong_manifest_is_one_line_with_its_place(tmp_path, change, message):
    text = (BASE + "scenarios:\n  single: {min_queries: 5}\n").replace(*change)
    line = refused(run_footprint("evaluate", "-o", str(tmp_path / "bad.db"),
                                 str(manifest(tmp_path, text))))
    assert message in line and "m.yaml: line " in line, line
    assert not (tmp_path / "bad.db").exists()


def test_dry_run_prints_the_agent_commands(tmp_path):
    (tmp_path / "images").mkdir()
    path = manifest(tmp_path, BASE.replace("  synthetic: {shape: [3, 32, 32], pool: 8}",
                                           "  folder: images") + """
preprocess: [{resize: 40}, {center_crop: 32}, to_tensor, {normalize: imagenet}]
batch_sizes: [2]
scenarios:
  multi: {min_queries: 4}
  server: {qps: [5, 10], latency_bound: 50ms}
""")
    proc = run_footprint("evaluate", "--dry-run", str(path))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == ["m-multi-b2", "m-server-b2-q5",
                                                      "m-server-b2-q10"]
    assert f"--inputs {tmp_path / 'images'}" in lines[0]
    assert """--preprocess '[{"resize":40},{"center_crop":32},"to_tensor",{"normalize":"imagenet"}]'""" \
        in lines[0]
    assert lines[0].endswith("--max-batch 2")


@pytest.mark.parametrize("example", sorted((REPO / "examples" / "evaluate").glob("*.yaml")),
                         ids=lambda p: p.name)
def test_the_example_manifests_plan_their_runs(example):
    proc = run_footprint("evaluate", "--dry-run", str(example))
    assert proc.returncode == 0, proc.stderr
    names = [line.split(":")[0] for line in proc.stdout.splitlines()]
    stem = example.stem
    assert names == [f"{stem}-single-b1", f"{stem}-multi-b4", f"{stem}-server-b4-q" +
                     ("10" if "resnet" in stem else "25"), f"{stem}-offline-b16"]
