"""Browser test of `footprint plot`: a page made from real runs opens in headless Chromium
(Debian's chromium, driven by playwright-core from the build's npm install; no browser is
downloaded), draws every requested series, logs nothing to the console, fetches nothing, saves
PNG/SVG/CSV, and its screenshot has content.

Environment (set by CTest, tests/CMakeLists.txt): FOOTPRINT_BIN, FP_WORKLOADS, PYTHONPATH (the
built Python package), NODE_PATH (the build's web/node_modules), CHROMIUM (/usr/bin/chromium).
"""
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
import fp_helpers  # noqa: E402
from fp_helpers import describe, fp, plot_data, run_ok, saved_chart, wl  # noqa: E402

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
NODE = shutil.which("node")

pytestmark = pytest.mark.skipif(
    not (NODE and os.access(CHROMIUM, os.X_OK)),
    reason=f"needs node and Chromium at {CHROMIUM} (scripts/setup installs nodejs and chromium)")


# The second run's name is markup that would run script if a tooltip used it as HTML.
HOSTILE = "train-b<img src=x onerror=\"window.__injected=true\">"


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    """Two instrumented runs (train-a and a hostile name) and the plot of both."""
    d = tmp_path_factory.mktemp("browser")
    db = str(d / "fp.db")
    env = fp_helpers.clean_env(PYTHONPATH=os.environ.get("PYTHONPATH", ""))
    for seed, name in enumerate(["train-a", HOSTILE]):
        run_ok(db, ["/usr/bin/python3", os.path.join(HERE, "workload.py"), wl("burn"), seed],
               "-n", name, "-i", "20ms", env=env)
    out = d / "page.html"
    proc = fp("plot", "-o", db, "-u", "train-a", HOSTILE, "--out", out,
              stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, describe(proc)
    shots = d / "shots"
    shots.mkdir()
    check = subprocess.run([NODE, os.path.join(HERE, "check_plot.cjs"), str(out), str(shots)],
                           capture_output=True, text=True, timeout=180)
    assert check.returncode == 0, describe(check)
    return {"db": db, "html": out, "data": plot_data(out), "shots": shots,
            "result": json.loads(check.stdout)}


def charts(page, kind):
    return [c for c in page["result"]["charts"] if c["kind"] == kind]


def labels(page):
    return [r["label"] for r in page["data"]["runs"]]


def test_every_sampled_metric_is_drawn_for_both_runs(page):
    with sqlite3.connect(page["db"]) as con:
        wanted = {(m, u) for m, u in con.execute("SELECT DISTINCT metric, unit FROM series")}
    drawn = {c["title"]: c for c in charts(page, "timeseries")}
    # A series that held one value throughout (io.read of a run that reads nothing) is a
    # number in the constants list, not a chart; every other metric is a chart.
    constant = {c["metric"] for c in page["result"]["constants"]}
    assert all(c["text"].endswith("(constant)") for c in page["result"]["constants"])
    assert set(drawn) == {f"{m} ({u})" for m, u in wanted if m not in constant}
    for title, chart in drawn.items():
        names = [s["name"] for s in chart["series"]]
        assert names == labels(page), title  # one series per run, named after it
        assert all(s["points"] > 0 and s["type"] == "line" for s in chart["series"]), title
        # Scope bands on each run's series: 1 'load data' + 6 'train epoch'.
        assert [s["bands"] for s in chart["series"]] == [7, 7], title


def test_own_and_machine_series_are_folded_last(page):
    """The program's charts come first; monitor.* and sys.* wait in a fold, drawn when it is
    opened (check_plot.cjs opens it before reading every chart)."""
    folded = page["result"]["folded"]
    own = ("monitor.", "sys.")
    assert folded["before"] and not [t for t in folded["before"] if t.startswith(own)]
    titles = [c["title"] for c in page["result"]["charts"]]
    assert titles[:len(folded["before"])] == folded["before"]
    later = titles[len(folded["before"]):]
    assert later and all(t.startswith(own) for t in later)
    assert all(t.split(" (")[0] in folded["fold"] for t in later)
    # The program's values and scopes before its sampled metrics.
    kinds = [c["kind"] for c in page["result"]["charts"]]
    assert kinds.index("curve") < kinds.index("scopes") < kinds.index("timeseries")


def test_each_axis_reads_in_one_unit(page):
    """The tick labels of a time, byte or other value axis share one unit, the one its largest
    value calls for ("0.50 s, 1.00 s", not "500.0 ms" beside "1.00 s"), as ECharts draws them."""
    time_axes = 0
    for c in page["result"]["charts"]:
        for axis, labels in c["axisLabels"].items():
            units = {label.split(" ", 1)[1] for label in labels if " " in label}
            assert len(units) <= 1, (c["title"], axis, labels)
            time_axes += c["kind"] == "timeseries" and axis == "x" and len(labels) >= 3
    assert time_axes > 0, page["result"]["charts"]


def test_loss_and_accuracy_curves_by_step(page):
    curves = {c["title"]: c for c in charts(page, "curve")}
    assert {"loss by step", "accuracy by step"} <= set(curves)
    for title in ("loss by step", "accuracy by step"):
        assert [(s["name"], s["points"]) for s in curves[title]["series"]] == \
            [(label, 6) for label in labels(page)]


def test_bars_heat_maps_and_parallel_coordinates(page):
    (scopes,) = charts(page, "scopes")
    assert [s["name"] for s in scopes["series"]] == labels(page)
    assert all(s["points"] == 2 for s in scopes["series"])  # load data, train epoch
    totals = charts(page, "totals")
    assert {c["title"] for c in totals} >= {"Run totals: time", "Run totals: memory and I/O"}
    confusion = charts(page, "confusion")
    assert len(confusion) == 2
    for c in confusion:
        assert c["series"][0]["type"] == "heatmap" and c["series"][0]["points"] == 9
    (hyper,) = charts(page, "hyperparameters")
    assert [(s["name"], s["type"], s["points"]) for s in hyper["series"]] == \
        [(label, "parallel", 1) for label in labels(page)]


def test_no_console_messages_and_nothing_fetched(page):
    result = page["result"]
    assert [m for m in result["console"] if m["type"] in ("error", "warning", "pageerror")] == []
    assert all(u.startswith(("file:", "data:", "blob:")) for u in result["requests"]), \
        result["requests"]


def test_legend_filtering_hides_a_series(page):
    selected = page["result"]["legend"]
    first, second = labels(page)
    assert selected[first] is False and selected.get(second, True) is True


def test_charts_save_as_png_svg_json_and_full_resolution_csv(page):
    downloads = page["result"]["downloads"]
    doc = saved_chart(downloads["png"]["file"], downloads["json"]["file"])
    first = page["result"]["charts"][0]
    assert doc["title"] == first["title"]
    assert [(s["name"], len(s["data"])) for s in doc["series"]] == \
        [(s["name"], s["points"]) for s in first["series"]]
    with open(downloads["svg"]["file"], encoding="utf-8") as f:
        svg = f.read()
    assert svg.startswith("<svg") and "<path" in svg
    with open(downloads["csv"]["file"], encoding="utf-8") as f:
        rows = f.read().splitlines()
    assert rows[0] == "run_id,run_name,metric,unit,entity,t_s,value"
    first = charts(page, "timeseries")[0]["title"].split(" (")[0]
    with sqlite3.connect(page["db"]) as con:
        (count,) = con.execute("SELECT count(*) FROM samples JOIN series ON series.id = "
                               "samples.series_id WHERE metric = ?", (first,)).fetchone()
    assert len(rows) - 1 == count  # every sample, both runs


def test_screenshot_has_content(page):
    from PIL import Image

    image = Image.open(page["shots"] / "page.png").convert("RGB")
    assert image.size == (1280, 1000)
    colours = image.getcolors(maxcolors=1 << 20)
    assert len(colours) > 200, "a page of charts has many colours (lines, bands, text)"
    background = max(colours)[0]
    assert background < 0.95 * image.size[0] * image.size[1], "not a blank page"


def test_names_in_tooltips_stay_text(page):
    result = page["result"]
    assert result["tooltips"], "the bar and heat-map charts show tooltips"
    assert result["injected"] is False
    shown = "".join(result["tooltips"])
    assert "<img" not in shown
    assert "train-b&lt;img" in shown  # the name is there, as text


def drawn_charts(tmp_path, db, *plot_args):
    """The charts `footprint plot -o DB PLOT_ARGS` draws in Chromium (check_plot.cjs)."""
    out = tmp_path / "plot.html"
    assert fp("plot", "-o", db, *plot_args, "--out", out,
              stdin=subprocess.DEVNULL).returncode == 0
    shots = tmp_path / "shots"
    shots.mkdir()
    check = subprocess.run([NODE, os.path.join(HERE, "check_plot.cjs"), str(out), str(shots)],
                           capture_output=True, text=True, timeout=180)
    assert check.returncode == 0, describe(check)
    return json.loads(check.stdout)["charts"]


def test_a_load_is_drawn_by_percentile(tmp_path):
    """A `footprint load` run gets a latency-by-percentile chart: every answered query once,
    on an axis where each nine takes the same room (p90, p99, p99.9), in seconds."""
    db = tmp_path / "load.db"
    proc = fp("load", "-o", db, "--no-git", "-q", "--scenario", "server", "--qps", 300,
              "--duration", "1s", "--min-queries", 200, "--", wl("sut"), "exp", 2, 2,
              tmp_path / "sut.log")
    assert proc.returncode == 0, describe(proc)
    queries = len((tmp_path / "sut.log").read_text().splitlines())
    (chart,) = [c for c in drawn_charts(tmp_path, db) if c["kind"] == "percentiles"]
    assert chart["title"] == "load.latency by percentile"
    assert [s["points"] for s in chart["series"]] == [queries]
    assert chart["axisLabels"]["x"][:3] == ["p0", "p90", "p99"]
    assert all(label.endswith(" ms") for label in chart["axisLabels"]["y"]), chart


def test_a_qps_sweep_is_drawn_as_a_throughput_latency_curve(tmp_path):
    """`footprint load --qps R,R,R` makes one run per rate; plotted together they get one chart
    of p50, p90 and p99 against the queries/s each achieved, a point per run, in rate order."""
    db = tmp_path / "sweep.db"
    proc = fp("load", "-o", db, "--no-git", "-q", "--scenario", "server", "--qps", "400,100,200",
              "--duration", "0.5s", "--min-queries", 50, "--", wl("sut"), "fixed", 2, 4,
              tmp_path / "sut.log")
    assert proc.returncode == 0, describe(proc)
    runs = [r["id"] for r in json.loads(fp("runs", "-o", db, "--json").stdout)]
    assert len(runs) == 3
    charts = drawn_charts(tmp_path, db, "-u", *runs, "--no-menu")
    (chart,) = [c for c in charts if c["kind"] == "throughput-latency"]
    assert chart["title"] == "load: latency by throughput"
    assert [(s["name"], s["points"]) for s in chart["series"]] == [("p50", 3), ("p90", 3),
                                                                   ("p99", 3)]
    # Seconds, in the unit their size calls for (ms here; s on a machine slow enough).
    assert all(re.fullmatch(r"[0-9.]+ (µs|ms|s)", label) for label in chart["axisLabels"]["y"]), \
        chart
