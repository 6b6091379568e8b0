"""Browser test of the queue of `footprint serve` (web/queue.js) in headless Chromium: an
evaluation of a small model launched from its manifest, its output followed, its result beside
an earlier evaluation of the same model with footprint compare's verdicts; a running plan
cancelled from the table, every process of its tree gone within 2 s and the job cancelled; a
read token's launch refused with 403 and nothing started; a job queued from the shell while no
serve ran is run by the next serve and seen done in the table.

Screenshots: OUT/queue-evaluation.png and OUT/queue-cancel.png (docs/serve.md shows copies:
FP_SCREENSHOTS=docs/images writes them there).

Environment (set by CTest, tests/CMakeLists.txt): FOOTPRINT_BIN, FP_WORKLOADS, NODE_PATH,
CHROMIUM, PYTHONPATH (the build's Python module: the evaluation's agent).
"""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from fp_helpers import FOOTPRINT, RADT_HEADER, TREE_SCRIPT, clean_env, fp  # noqa: E402

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
NODE = shutil.which("node")
PYTHON = "/usr/bin/python3"

pytestmark = pytest.mark.skipif(
    not (NODE and os.access(CHROMIUM, os.X_OK)),
    reason=f"needs node and Chromium at {CHROMIUM} (scripts/setup installs nodejs and chromium)")

MANIFEST = """name: tiny
model:
  torchvision: squeezenet1_1
  args: {num_classes: 10}
framework: {name: pytorch, threads: 1, device: cpu}
inputs:
  synthetic: {shape: [3, 64, 64], pool: 8, seed: 0}
batch_sizes: [1]
scenarios:
  single: {duration: 1s, min_queries: 20}
trace: [model, system]
"""
TOKENS = {"ann": ("run", "ann-0123456789abcdef"), "bob": ("read", "bob-0123456789abcdef")}


def serve(db, folder):
    proc = subprocess.Popen(
        [FOOTPRINT, "serve", "-o", db, "--port", "0", "--manifests", str(folder / "manifests"),
         "--plans", str(folder / "plans"), "--tokens", str(folder / "tokens"),
         "--python", PYTHON], env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    m = re.search(r"http://127\.0\.0\.1:(\d+)/", proc.stdout.readline())
    assert m, proc.stderr.read()
    return proc, f"http://127.0.0.1:{m.group(1)}/"


def check(config_path, config):
    config_path.write_text(json.dumps(config))
    done = subprocess.run([NODE, os.path.join(HERE, "check_queue.cjs"), str(config_path)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def seen(tmp_path_factory):
    d = tmp_path_factory.mktemp("queue-browser")
    db = str(d / "fp.db")
    (d / "manifests").mkdir()
    (d / "manifests" / "tiny.yaml").write_text(MANIFEST)
    (d / "plans").mkdir()
    (d / "plans" / "tree.sh").write_text(TREE_SCRIPT)
    (d / "plans" / "tree.sh").chmod(0o755)
    (d / "plans" / "tree.csv").write_text(RADT_HEADER + "q,tree,,,0,-,tree.sh,none,\n")
    (d / "plans" / "hello.csv").write_text(RADT_HEADER + "q,hello,,,0,-,/bin/echo,none,hello\n")
    (d / "tokens").write_text("".join(f"{r} {n} {t}\n" for n, (r, t) in TOKENS.items()))
    # The earlier evaluation of the same model, from the shell.
    earlier = fp("evaluate", "-o", db, "-q", "--python", PYTHON, str(d / "manifests" / "tiny.yaml"))
    assert earlier.returncode == 0, earlier.stderr
    out = os.environ.get("FP_SCREENSHOTS") or str(d)
    proc, url = serve(db, d)
    try:
        seen = check(d / "config.json", {
            "url": url + "?token=" + TOKENS["ann"][1], "read_url": url + "?token=" + TOKENS["bob"][1],
            "manifest": "tiny.yaml", "plan": "tree.csv", "out": out})
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
    seen["jobs_after"] = json.loads(fp("queue", "list", "-o", db, "--json").stdout)
    # A job queued while no serve runs, run by the next one.
    hello = fp("queue", "add", "-o", db, "--plans", str(d / "plans"), "plan", "hello.csv")
    assert hello.returncode == 0, hello.stderr
    proc, url = serve(db, d)
    try:
        seen["restart"] = check(d / "watch.json", {"url": url + "?token=" + TOKENS["ann"][1],
                                                   "watch": int(hello.stdout), "out": out})
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
    seen["runs"] = json.loads(fp("runs", "-o", db, "--json").stdout)
    seen["out"] = out
    seen["db"] = db
    return seen


def test_an_evaluation_launched_from_its_manifest_is_compared_with_an_earlier_one(seen):
    e = seen["evaluation"]
    assert e["state"] == "done", e
    assert "tiny-single-b1" in e["log"] and f"[job {e['job']} done" in e["log"], e["log"][-2000:]
    mine = [r for r in e["rows"] if r["mine"]]
    earlier = [r for r in e["rows"] if not r["mine"]]
    assert len(mine) == 1 and len(earlier) == 1, e["rows"]
    stored = {r["id"]: r for r in seen["runs"]}
    for row in mine + earlier:
        assert row["model"] == "squeezenet1_1" and row["scenario"] == "single", row
        assert row["device"] == "cpu" and row["batch"] == "1", row
        assert row["p50_s"] > 0 and row["p99_s"] >= row["p50_s"], row
        assert row["queries_per_s"] > 0 and row["peak_memory_bytes"] > 0, row
        assert stored[row["id"]]["status"] == "ok"
        # footprint load's judgement: enough queries for a p90 claim, or too few where a busy
        # machine answered fewer in the manifest's second; whichever this run earned.
        assert "for a p90 claim" in row["verdict"], row
    # The page shows what footprint compare says of the two runs: the ratio of their durations.
    durations = [json.loads(fp("show", "-o", seen["db"], r["id"], "--json").stdout)["totals"]
                 ["duration_s"] for r in (earlier[0], mine[0])]
    line = next(v for v in e["verdicts"] if v.startswith("duration:"))
    assert f"{durations[1] / durations[0]:#.3g} times" in line, (line, durations)
    assert e["table"][0][:2] == ["this job", mine[0]["name"]], e["table"]


def test_a_cancelled_plan_leaves_no_process_and_is_stored_cancelled(seen):
    c = seen["cancel"]
    assert len(c["pids"]) == 3 and c["alive_after"] == [], c
    assert c["gone_ms"] < 2000, c
    job = next(j for j in seen["jobs_after"] if j["id"] == c["job"])
    assert job["state"] == "cancelled" and job["reason"].startswith("cancelled:"), job
    run = next(r for r in seen["runs"] if r["name"] == "q/tree/1")
    assert run["status"] == "killed", run


def test_a_read_token_is_refused_and_nothing_starts(seen):
    refused = seen["refused"]
    assert refused["message"].startswith("not launched:") and "role read" in refused["message"]
    launched = [j for j in seen["jobs_after"] if j["owner"] == "bob"]
    assert launched == [], launched
    assert len(seen["jobs_after"]) == 2  # the evaluation and the plan, ann's


def test_a_restarted_serve_runs_what_was_queued(seen):
    watched = seen["restart"]["watched"]
    assert watched["state"] == "done" and watched["exit_code"] == 0, watched
    assert watched["owner"].endswith("(shell)")


def test_no_console_errors_and_nothing_fetched_elsewhere(seen):
    for log in (seen["log"], seen["restart"]["log"]):
        errors = [m for m in log["console"] if m["type"] in ("error", "pageerror")]
        # The read token's refused launch is a 403 the browser reports on its console.
        assert all("403" in m["text"] for m in errors), errors
        assert all(u.startswith("http://127.0.0.1:") for u in log["requests"]), log["requests"]


@pytest.mark.parametrize("name", ["queue-evaluation.png", "queue-cancel.png"])
def test_screenshots_have_content(seen, name):
    assert os.path.getsize(os.path.join(seen["out"], name)) > 10_000
