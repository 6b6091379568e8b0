"""Browser test of a profiled run in `footprint serve`'s web UI (docs/profiling.md, docs/serve.md):
a training loop run with `footprint run --profile torch:2` shows its trace as a link on the
run's page, the link downloads the file the run recorded (its size and SHA-256), and each
chart of the run marks the profiler window where its scope `profile:optimizer` lies.

Environment (set by CTest, tests/CMakeLists.txt): FOOTPRINT_BIN, NODE_PATH, CHROMIUM,
PYTHONPATH (the build's Python module: the --profile hook imports it).
"""
import hashlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from fp_helpers import FOOTPRINT, clean_env, describe, fp  # noqa: E402

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
NODE = shutil.which("node")

pytestmark = pytest.mark.skipif(
    not (NODE and os.access(CHROMIUM, os.X_OK) and os.path.exists("/usr/bin/python3")),
    reason=f"needs node, Chromium at {CHROMIUM} and Debian's python3 with torch")

# 30 optimizer steps of 20 ms or more: the window (5 waited, 1 warmed up, 2 recorded) lies
# well inside the run and spans samples of 20 ms.
TRAIN = """
import time
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(512, 64), torch.randn(512, 1)
for step in range(30):
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
    time.sleep(0.02)
"""


def test_a_profiled_run_links_its_trace_and_marks_its_window(tmp_path):
    if subprocess.run(["/usr/bin/python3", "-c", "import torch"]).returncode != 0:
        pytest.skip("Debian's python3-torch is not installed")
    db = str(tmp_path / "fp.db")
    (tmp_path / "tiny_train.py").write_text(TRAIN)
    ran = fp("run", "-q", "-o", db, "-i", "20ms", "--profile", "torch:2", "--",
             "/usr/bin/python3", str(tmp_path / "tiny_train.py"))
    assert ran.returncode == 0, describe(ran)
    shown = json.loads(fp("show", "-o", db, "last", "--json").stdout)
    run_id = shown["run"]["id"]
    (trace,) = shown["artifacts"]
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        window = con.execute("SELECT name, start_ns, end_ns FROM scopes WHERE run_id = ? AND "
                             "name LIKE 'profile:%'", (run_id,)).fetchall()
    con.close()
    assert [w[0] for w in window] == ["profile:optimizer"], window
    server = subprocess.Popen([FOOTPRINT, "serve", "-o", db, "--port", "0"], env=clean_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = re.search(r"http://\S+", server.stdout.readline()).group(0)
        config = tmp_path / "config.json"
        config.write_text(json.dumps({"url": url, "run": run_id, "out": str(tmp_path)}))
        check = subprocess.run([NODE, os.path.join(HERE, "check_profile.cjs"), str(config)],
                               capture_output=True, text=True, timeout=240)
        assert check.returncode == 0, describe(check)
    finally:
        server.terminate()
        server.wait(timeout=30)
    seen = json.loads(check.stdout)
    assert [link["text"] for link in seen["links"]] == [trace["name"]]
    assert seen["download"]["name"] == trace["name"]
    got = open(seen["download"]["file"], "rb").read()
    assert len(got) == trace["size"] and hashlib.sha256(got).hexdigest() == trace["sha256"]
    # Every chart of the run marks the window where its scope lies (times since the start, s).
    assert seen["windows"], seen
    for chart in seen["windows"]:
        (marked,) = chart["windows"]
        assert marked[0] == "profile:optimizer", chart
        assert marked[1] == pytest.approx(window[0][1] / 1e9, abs=1e-6), (chart, window)
        assert marked[2] == pytest.approx(window[0][2] / 1e9, abs=1e-6), (chart, window)
    assert [m for m in seen["console"] if m["type"] in ("error", "warning", "pageerror")] == []
