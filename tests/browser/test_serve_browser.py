"""Browser test of `footprint serve`: the web UI in headless Chromium (Debian's chromium,
driven by playwright-core from the build's npm install). Ticks two runs of an experiment and
sees both in every chart; the URL brings the same view back; a run named
<script>alert(1)</script> shows as text and runs nothing; a running run's chart grows while the
page polls for new samples only; no console errors; nothing fetched from elsewhere; the
screenshots have content.

Environment (set by CTest, tests/CMakeLists.txt): FOOTPRINT_BIN, FP_WORKLOADS, NODE_PATH,
CHROMIUM.
"""
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from fp_helpers import FOOTPRINT, clean_env, describe, run_ok, wait_for, wl  # noqa: E402

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
NODE = shutil.which("node")
XSS = "<script>alert(1)</script>"

pytestmark = pytest.mark.skipif(
    not (NODE and os.access(CHROMIUM, os.X_OK)),
    reason=f"needs node and Chromium at {CHROMIUM} (scripts/setup installs nodejs and chromium)")


@pytest.fixture(scope="module")
def seen(tmp_path_factory):
    d = tmp_path_factory.mktemp("serve-browser")
    db = str(d / "fp.db")
    for name in ("train-a", "train-b", XSS):
        run_ok(db, [wl("burn"), "1", "0.3"], "-n", name, "-i", "20ms")
    with sqlite3.connect(db) as con:
        con.execute("UPDATE runs SET experiment = 'resnet', workload = 'train' "
                    "WHERE name LIKE 'train-%'")
        ids = dict(con.execute("SELECT name, id FROM runs"))
    con.close()
    env = clean_env()
    live = subprocess.Popen([FOOTPRINT, "run", "-o", db, "-q", "-n", "live", "-i", "100ms", "--",
                             wl("burn"), "1", "40"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    server = subprocess.Popen([FOOTPRINT, "serve", "-o", db, "--port", "0"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = re.search(r"http://\S+", server.stdout.readline()).group(0)

        def live_id():
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
                row = c.execute("SELECT id FROM runs WHERE name = 'live' AND EXISTS (SELECT 1 "
                                "FROM series JOIN samples ON samples.series_id = series.id "
                                "WHERE series.run_id = runs.id)").fetchone()
            c.close()
            return row and row[0]

        ids["live"] = wait_for(live_id, 30, "the live run's first samples")
        shots = d / "shots"
        shots.mkdir()
        config = d / "config.json"
        config.write_text(json.dumps({"url": url, "pick": [ids["train-a"], ids["train-b"]],
                                      "xss": ids[XSS], "live": ids["live"], "out": str(shots)}))
        check = subprocess.run([NODE, os.path.join(HERE, "check_serve.cjs"), str(config)],
                               capture_output=True, text=True, timeout=240)
        assert check.returncode == 0, describe(check)
        still_running = live.poll() is None
    finally:
        live.terminate()
        live.wait(timeout=30)
        server.terminate()
        server.wait(timeout=30)
    return {"result": json.loads(check.stdout), "ids": ids, "shots": shots, "url": url,
            "still_running": still_running}


def timeseries(charts):
    return [c for c in charts if c["kind"] == "timeseries"]


def test_tree_lists_experiments_and_workloads(seen):
    tree = {e["experiment"]: e["workloads"] for e in seen["result"]["tree"]}
    assert tree == {"resnet": ["train"], "(no experiment)": [""]}


def test_two_runs_of_an_experiment_in_every_chart(seen):
    r, ids = seen["result"], seen["ids"]
    assert r["selected"] == [ids["train-a"], ids["train-b"]]
    charts = timeseries(r["charts"])
    assert {c["title"].split(" (")[0] for c in charts} >= {"cpu", "memory", "threads"}
    for c in charts:
        names = [s["name"] for s in c["series"]]
        assert len(names) == 2 and names[0].startswith("train-a") and \
            names[1].startswith("train-b"), c
        assert all(s["points"] > 5 for s in c["series"]), c
    assert any(c["kind"] == "totals" for c in r["charts"])
    assert r["compare_rows"] > 3  # the comparison table: a header and the totals
    assert "run=" + ids["train-a"] in r["url"] and "run=" + ids["train-b"] in r["url"]


def test_fits_a_1366_pixel_window(seen):
    """With two runs' charts and their comparison, nothing reaches past the right edge of a
    1366 px window: no sideways scrolling."""
    width = seen["result"]["at_1366"]
    assert width["page"] <= width["window"] <= 1366, width
    assert width["widest"] <= width["window"] + 0.5, width


def test_the_url_restores_the_view(seen):
    r = seen["result"]
    restored = r["restored"]
    assert restored["selected"] == r["selected"]
    assert sorted(restored["checked"]) == sorted(r["selected"])
    assert [(c["title"], [s["name"] for s in c["series"]]) for c in restored["charts"]] == \
        [(c["title"], [s["name"] for s in c["series"]]) for c in r["charts"]]


def test_xss_run_name_is_inert_text(seen):
    xss = seen["result"]["xss"]
    assert xss["tree"] == XSS
    assert xss["table"].startswith(XSS)
    assert xss["injected"] == 0 and xss["scripts"] == 3  # echarts, charts.js, serve.js
    assert seen["result"]["dialogs"] == []


def test_live_run_grows_without_reloading(seen):
    live = seen["result"]["live"]
    assert seen["still_running"], "the live run ended before the check did"
    assert live["marker"] == "same page"
    assert live["after"] > live["before"] + 10, live  # 100 ms samples for 3 s
    assert live["counts_after"]["series"] >= live["counts_before"]["series"] + 2, live
    assert live["counts_after"]["plot"] == live["counts_before"]["plot"], live  # no redraw


def test_no_console_errors_and_nothing_fetched_elsewhere(seen):
    r = seen["result"]
    assert [m for m in r["console"] if m["type"] in ("error", "warning", "pageerror")] == []
    assert all(u.startswith((seen["url"].split("?")[0], "data:", "blob:")) for u in r["requests"])


@pytest.mark.parametrize("name", ["selection.png", "live.png"])
def test_screenshots_have_content(seen, name):
    from PIL import Image

    image = Image.open(seen["shots"] / name).convert("RGB")
    assert image.size == (1400, 1000)
    colours = image.getcolors(maxcolors=1 << 20)
    assert len(colours) > 200, "charts, text and a tree have many colours"
    assert max(colours)[0] < 0.9 * image.size[0] * image.size[1], "not a blank page"
