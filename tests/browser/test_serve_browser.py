"""Browser test of `footprint serve`: the web UI in headless Chromium (Debian's chromium,
driven by playwright-core from the build's npm install). Ticks two runs of an experiment and
sees both in every chart; the URL brings the same view back; a run named
<script>alert(1)</script> shows as text and runs nothing; a running run's chart grows while the
page polls for new samples only; two groups of repetitions ticked as two items are compared
as sets (Welch's p-values, a verdict matching the stored durations), warm-ups labelled and left
out; footprint's own and the machine's charts are folded until opened; a chart saves as PNG
and JSON; a run started while the page is open appears in the tree, running, then ok; no
console errors; nothing fetched from elsewhere; the screenshots have content.

Environment (set by CTest, tests/CMakeLists.txt): FOOTPRINT_BIN, FP_WORKLOADS, NODE_PATH,
CHROMIUM.
"""
import json
import os
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from fp_helpers import (FOOTPRINT, clean_env, describe, run_ok, saved_chart, wait_for,  # noqa: E402
                        wl)

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
    # Each "training" run burns a core for 0.3 s while its memory steps from 8 to 32 MiB: a
    # memory that held one value throughout would be folded into a number, not charted (2 runs
    # in 40 of a plain burn did, by the kernel's batched memory charges).
    touch = shlex.quote(wl("touch_memory"))
    grow = f'{touch} 8 0.15 && {touch} 32 0.15 & "$@"; wait'
    for name, lr in (("train-a", "0.1"), ("train-b", "0.01"), (XSS, "0.5")):
        run_ok(db, ["/bin/sh", "-c", grow, "sh", wl("burn"), "1", "0.3"], "-n", name, "-i", "20ms",
               "--param", f"lr={lr}")
    run_ok(db, ["/bin/false"], "-n", "broken", "--param", "lr=0.1", expect_rc=1)
    for name, seconds in (("fast", "0.05"), ("slow", "0.25")):
        run_ok(db, ["/bin/sleep", seconds], "-n", name, "-r", "4", "--warmup", "1", "-i", "20ms")
    with sqlite3.connect(db) as con:
        con.execute("UPDATE runs SET experiment = 'resnet', workload = 'train' "
                    "WHERE name LIKE 'train-%'")
        con.execute("UPDATE runs SET experiment = 'resnet', workload = 'broken' "
                    "WHERE name = 'broken'")
        ids = dict(con.execute("SELECT name, id FROM runs"))
        groups = dict(con.execute("SELECT name, group_id FROM runs WHERE group_id != ''"))
    con.close()
    env = clean_env()
    # The live run outlives the whole check however slow the machine (it is stopped below).
    live = subprocess.Popen([FOOTPRINT, "run", "-o", db, "-q", "-n", "live", "-i", "100ms", "--",
                             wl("burn"), "1", "300"], env=env, stdout=subprocess.DEVNULL,
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
        fresh = [FOOTPRINT, "run", "-o", db, "-q", "-n", "fresh", "-i", "100ms", "--",
                 wl("burn"), "1", "6"]
        config.write_text(json.dumps({"url": url, "pick": [ids["train-a"], ids["train-b"]],
                                      "xss": ids[XSS], "live": ids["live"],
                                      "groups": [groups["fast"], groups["slow"]],
                                      "broken": ids["broken"],
                                      "spawn": fresh, "out": str(shots)}))
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
            "still_running": still_running, "db": db, "groups": groups}


def timeseries(charts):
    return [c for c in charts if c["kind"] == "timeseries"]


def test_tree_lists_experiments_and_workloads(seen):
    tree = {e["experiment"]: e["workloads"] for e in seen["result"]["tree"]}
    assert tree == {"resnet": ["broken", "train"], "(no experiment)": [""]}


def test_two_runs_of_an_experiment_in_every_chart(seen):
    r, ids = seen["result"], seen["ids"]
    assert r["selected"] == [ids["train-a"], ids["train-b"]]
    # cpu and memory are read at every pass; per-process series such as threads come from reads
    # spaced by their cost, so a short run on a busy machine may have none, or one run only.
    charts = [c for c in timeseries(r["charts"]) if c["title"].split(" (")[0] in ("cpu", "memory")]
    assert len(charts) == 2, r["charts"]
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
    assert xss["injected"] == 0 and xss["scripts"] == 4  # echarts, charts.js, serve.js, queue.js
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


def group_runs(db, group):
    """The group's runs as (id, repetition, duration_s), by repetition (warm-ups first)."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        rows = con.execute("SELECT runs.id, repetition, value FROM runs JOIN run_totals ON "
                           "run_totals.run_id = runs.id AND run_totals.name = 'duration_s' "
                           "WHERE group_id = ? ORDER BY repetition", (group,)).fetchall()
    con.close()
    return rows


def test_groups_are_ticked_as_sets_and_compared_with_p_values(seen):
    g = seen["result"]["groups"]
    fast, slow = seen["groups"]["fast"], seen["groups"]["slow"]
    assert g["compared"] == ["group:" + fast[:8], "group:" + slow[:8]]
    measured = {name: [r for r in group_runs(seen["db"], gid) if r[1] > 0]
                for name, gid in seen["groups"].items()}
    # The measured runs, warm-ups left out, labelled with their repetition.
    assert g["selected"] == [r[0] for r in measured["fast"] + measured["slow"]]
    assert [label.split(" · ")[0] for label in g["runLabels"]] == \
        [f"{name} #{k}" for name in ("fast", "slow") for k in range(1, 5)]
    assert g["header"][1:] == [f"group {fast[:8]} (fast) (n=4)", f"group {slow[:8]} (slow) (n=4)",
                               "change"]
    (duration,) = [row for row in g["rows"] if row[0] == "duration"]
    p_value = float(re.search(r"\(p=([0-9.e-]+)\)", duration[3]).group(1))
    assert p_value < 0.05, duration  # 0.25 s against 0.05 s of sleep, 4 runs each
    # The verdict, its factor from the stored durations.
    mean = {name: sum(r[2] for r in rows) / len(rows) for name, rows in measured.items()}
    (verdict,) = [v for v in g["verdicts"] if " ran " in v]
    factor = float(re.search(r"ran ([0-9.]+) ± ", verdict).group(1))
    assert verdict.startswith(f"group {slow[:8]} (slow) ran ")
    assert verdict.endswith(f"times slower than group {fast[:8]} (fast)")
    assert factor == pytest.approx(mean["slow"] / mean["fast"], abs=0.006), (verdict, mean)


def test_tree_follows_the_url_selection(seen):
    """A URL without a selection leaves nothing ticked in the tree (it is drawn anew although
    the runs it lists did not change)."""
    assert seen["result"]["cleared_checked"] == 0


def test_tree_shows_groups_with_warmups_labelled(seen):
    for tree in seen["result"]["groups"]["tree"]:
        assert tree["runs"] == ["warm-up 1", "#1", "#2", "#3", "#4"]
        assert tree["warmups"] == 1
        assert "4 runs + 1 warm-up" in tree["summary"]


def test_own_and_machine_charts_are_folded_until_opened(seen):
    g = seen["result"]["groups"]
    own = ("monitor.", "sys.")
    assert g["before_unfold"] and not [t for t in g["before_unfold"] if t.startswith(own)]
    opened = [t for t in g["after_unfold"] if t.startswith(own)]
    assert opened and g["after_unfold"][:len(g["before_unfold"])] == g["before_unfold"]
    for title in opened:
        assert title.split(" (")[0] in g["fold"]


def test_a_chart_saves_as_png_and_json(seen):
    saved = seen["result"]["saved"]
    doc = saved_chart(saved["png"]["file"], saved["json"]["file"])
    assert doc["title"] == saved["json"]["title"] and saved["json"]["name"].endswith(".json")
    assert doc["series"] and all(s["data"] for s in doc["series"])
    assert {r["id"] for r in doc["runs"]} == set(seen["result"]["groups"]["selected"])


def test_tree_refreshes_live(seen):
    refresh = seen["result"]["refresh"]
    assert refresh["exit_code"] == 0
    assert refresh["marker"] == "tree page"  # no reload
    states = [s for s in refresh["seen"] if s is not None]
    assert states == ["running", "ok"], refresh  # appeared while running, then ended
    assert refresh["tree_after"] > refresh["tree_before"]


@pytest.mark.parametrize("name", ["selection.png", "live.png", "groups.png"])
def test_screenshots_have_content(seen, name):
    from PIL import Image

    image = Image.open(seen["shots"] / name).convert("RGB")
    assert image.size == (1400, 1000)
    colours = image.getcolors(maxcolors=1 << 20)
    assert len(colours) > 200, "charts, text and a tree have many colours"
    assert max(colours)[0] < 0.9 * image.size[0] * image.size[1], "not a blank page"


def test_runs_table_is_the_landing_view_with_status_in_colour(seen):
    t = seen["result"]["table"]
    assert t["headers"][:8] == ["status", "name", "started (UTC)", "duration", "CPU",
                                "peak memory", "energy", "GPU time"]
    assert t["rows"] >= 13 and "broken" in t["names"]
    colours = t["badge_colours"]
    assert colours["failed"] != colours["ok"] and colours["running"] not in (colours["ok"],
                                                                           colours["failed"])
    assert t["live_marked"], "the running run is marked live"


def test_runs_table_sorts_pages_and_keeps_its_state_in_the_url(seen):
    t = seen["result"]["table"]
    assert t["sorted_names"] == sorted(t["sorted_names"], key=str.lower)
    assert "sort=name" in t["sorted_url"] and "order=asc" in t["sorted_url"]
    assert t["restored_names"] == t["sorted_names"]
    assert t["restored_sorted"] == "asc"
    assert t["page2_url"].endswith("page=1") or "page=1" in t["page2_url"]
    assert t["page2_first"] not in t["sorted_names"][:1]


def test_param_and_status_filters_find_runs(seen):
    t = seen["result"]["table"]
    assert sorted(t["lr_filter"]) == sorted(["broken", "train-a"])
    assert t["status_filter"] == ["broken"]
    assert t["param_column"] == ["0.1", "0.1"]


def test_run_header_shows_everything_stored(seen):
    h = seen["result"]["header"]
    ids = seen["ids"]
    assert h["command"].endswith("burn 1 0.3") and h["working folder"]
    assert h["status"] == "ok, exit 0" and h["params"] == "lr=0.1"
    assert h["experiment"] == "resnet › train" and h["host"]
    assert "CPU" in h["footprint's own cost"] and "not your program" in h["footprint's own cost"]
    assert h["environment"] and h["versions"].startswith("footprint ")
    assert h["title"].endswith(ids["train-a"])


def test_selected_runs_get_a_param_diff(seen):
    assert seen["result"]["diff"] == [["lr", "true", "0.1", "0.01"]]


def test_a_failed_run_compared_with_ok_ones_is_warned_about(seen):
    w = seen["result"]["warning"]
    assert w["shown"] and "1 failed run" in w["text"] and "compared with 1 ok" in w["text"]
    assert not w["shown_for_ok_only"]


def test_no_experiment_no_workload_selects_only_those_runs(seen):
    r = seen["result"]
    with sqlite3.connect(f"file:{seen['db']}?mode=ro", uri=True) as con:
        named = {i for (i,) in con.execute("SELECT id FROM runs WHERE experiment != ''")}
    con.close()
    assert len(named) == 3  # train-a, train-b, broken: an empty parameter selected them too
    assert r["unnamed_workload"] and not set(r["unnamed_workload"]) & named


def test_groups_are_coloured_by_group_with_box_plots(seen):
    g = seen["result"]["groups"]
    assert g["totals"] and all(t["types"] == ["boxplot", "boxplot"] for t in g["totals"])
    assert len(set(g["line_colours"])) == 2  # 8 runs, 2 groups, 2 colours


def test_constant_series_are_folded_into_a_number(seen):
    g = seen["result"]["groups"]
    constants = {c["metric"]: c["text"] for c in g["constants"]}
    assert constants, "sleep's io.read is zero throughout"
    titles = [t.split(" (")[0] for t in g["before_unfold"]]
    assert not set(constants) & set(titles)
    assert all(t.endswith("(constant)") for t in constants.values())


def test_live_run_panels_update_in_place(seen):
    live = seen["result"]["live"]
    assert live["counts_after"]["refresh"] >= live["counts_before"]["refresh"] + 1, live
    assert live["duration_after"] != live["duration_before"], live
    assert live["live_marker"]
