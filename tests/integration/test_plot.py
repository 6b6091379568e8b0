"""footprint plot: selection by options, defaults without a terminal, errors, and the
interactive menu driven with keystrokes in a pseudo-terminal."""
import os
import pty
import select
import signal
import sqlite3
import subprocess
import termios
import time

import pytest

import fp_helpers
from fp_helpers import describe, fp, plot_data, run_ok, single_error_line, wl

PIPELINE = os.path.join(os.environ.get("FP_EXAMPLES", ""), "fp_cpp_pipeline")

UP, DOWN, SPACE, ENTER, ESC = "\x1b[A", "\x1b[B", " ", "\r", "\x1b"


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    """Three runs, oldest first: burn-a and burn-b (samples only), then the C++ API pipeline
    (scopes load/transform/train epoch, loss, accuracy, a confusion matrix)."""
    if not os.access(PIPELINE, os.X_OK):
        pytest.fail(f"FP_EXAMPLES={os.environ.get('FP_EXAMPLES')!r} lacks fp_cpp_pipeline")
    d = tmp_path_factory.mktemp("plot")
    path = str(d / "fp.db")
    run_ok(path, [wl("burn"), "1", "0.3"], "-n", "burn-a", "-i", "20ms")
    run_ok(path, [wl("burn"), "2", "0.3"], "-n", "burn-b", "-i", "20ms")
    run_ok(path, [PIPELINE], "-n", "pipeline", "-i", "20ms", cwd=str(d))
    return path


def run_ids(db):
    return {r["name"]: r["id"] for r in fp_helpers.runs_json(db)}


def sampled(data):
    return {m["name"] for m in data["metrics"]}


def test_options_choose_runs_metrics_and_scopes(db, tmp_path):
    out = tmp_path / "p.html"
    proc = fp("plot", "-o", db, "-u", "burn-a", "pipeline", "-t", "cpu", "memory", "loss",
              "confusion", "-d", "train epoch", "--out", out)
    assert proc.returncode == 0, describe(proc)
    assert f"wrote {out}" in proc.stdout
    data = plot_data(out)
    ids = run_ids(db)
    assert [r["id"] for r in data["runs"]] == [ids["burn-a"], ids["pipeline"]]
    assert sampled(data) == {"cpu", "memory"}
    assert [c["name"] for c in data["curves"]] == ["loss"]
    assert [(c["name"], c["run"]) for c in data["confusion"]] == [("confusion", 1)]
    assert data["confusion"][0]["labels"] == ["neg", "pos"]
    assert data["hyperparameters"] == []
    assert [s["name"] for s in data["scopes"]] == ["train epoch"]
    bands = {b["run"]: b for b in data["bands"]}
    assert bands[0]["bands"] == []
    assert [b["name"] for b in bands[1]["bands"]] == ["train epoch"] * 5
    for b in bands[1]["bands"]:
        assert 0 <= b["start"] < b["end"] and not b["open"]
    # loss by step 0..4, one curve: the pipeline's
    (curve,) = data["curves"][0]["series"]
    assert data["curves"][0]["x"] == "step" and curve["x"] == [0, 1, 2, 3, 4]


def test_series_hold_every_sample_when_short(db, tmp_path):
    out = tmp_path / "p.html"
    proc = fp("plot", "-o", db, "-u", "burn-b", "-t", "cpu", "--out", out)
    assert proc.returncode == 0, describe(proc)
    (series,) = plot_data(out)["metrics"][0]["series"]
    raw = fp_helpers.raw_samples(db, run_ids(db)["burn-b"], "cpu")
    assert series["raw"] is True and series["count"] == len(raw) == len(series["t"])
    assert series["t"] == pytest.approx([t / 1e9 for t, _ in raw], abs=1e-6)
    assert series["v"] == pytest.approx([v for _, v in raw], rel=1e-9)


def test_long_series_are_downsampled_and_keep_raw_within_the_limit(db, tmp_path):
    out = tmp_path / "p.html"
    raw = fp_helpers.raw_samples(db, run_ids(db)["pipeline"], "memory")
    assert len(raw) > 8, "the pipeline run is too short for this test"
    proc = fp("plot", "-o", db, "-u", "pipeline", "-t", "memory", "--points", 5, "--out", out)
    assert proc.returncode == 0, describe(proc)
    (series,) = plot_data(out)["metrics"][0]["series"]
    assert len(series["t"]) <= 5 and series["count"] == len(raw)
    assert series["t"][0] == pytest.approx(raw[0][0] / 1e9, abs=1e-6)
    assert series["t"][-1] == pytest.approx(raw[-1][0] / 1e9, abs=1e-6)
    assert len(series["raw"]["t"]) == len(raw)
    # Beyond --raw-limit the page keeps only the drawn points, and says so.
    proc = fp("plot", "-o", db, "-u", "pipeline", "-t", "memory", "--points", 5,
              "--raw-limit", 3, "--out", out)
    assert proc.returncode == 0, describe(proc)
    assert "footprint export" in proc.stdout
    data = plot_data(out)
    assert data["metrics"][0]["series"][0]["raw"] is False and data["complete_csv"] is False


def test_without_a_terminal_the_last_run_and_everything_in_it(db, tmp_path):
    proc = fp("plot", "-o", db, cwd=tmp_path, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, describe(proc)
    data = plot_data(tmp_path / "footprint-plot.html")
    assert [r["name"] for r in data["runs"]] == ["pipeline"]
    with fp_helpers.connect(db) as con:
        metrics = {m for (m,) in con.execute(
            "SELECT DISTINCT metric FROM series WHERE run_id = ?", (data["runs"][0]["id"],))}
    assert sampled(data) == metrics
    assert {c["name"] for c in data["curves"]} >= {"loss", "accuracy"}
    assert [s["name"] for s in data["scopes"]] == ["load", "transform", "train epoch"]


def test_a_group_name_plots_its_repetitions(tmp_path):
    """-u NAME of a group (run -r) means its measured runs, warm-ups left out, as in show,
    compare and export; a note says so."""
    db = tmp_path / "group.db"
    run_ok(db, [wl("burn"), "1", "0.1"], "-n", "grp", "-r", 3, "--warmup", 1, "-i", "20ms")
    out = tmp_path / "p.html"
    proc = fp("plot", "-o", db, "-u", "grp", "-t", "cpu", "--out", out, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, describe(proc)
    assert "footprint: note: 'grp' means group" in proc.stderr, proc.stderr
    measured = [r["id"] for r in fp_helpers.runs_json(db) if r["repetition"] > 0]
    assert [r["id"] for r in plot_data(out)["runs"]] == measured and len(measured) == 3


@pytest.mark.parametrize("args,code,mentions", [
    (["-u", "nosuchrun"], 4, "no run 'nosuchrun'"),
    (["-t", "nosuchmetric"], 2, "no metric 'nosuchmetric'"),
    (["-d", "nosuchscope"], 2, "no scope 'nosuchscope'"),
    (["--points", "2"], 2, "--points"),
])
def test_bad_selections_fail_with_one_line_and_write_nothing(db, tmp_path, args, code, mentions):
    out = tmp_path / "p.html"
    proc = fp("plot", "-o", db, *args, "--out", out, stdin=subprocess.DEVNULL)
    assert proc.returncode == code, describe(proc)
    assert mentions in single_error_line(proc)
    assert os.listdir(tmp_path) == []


def test_missing_database_is_a_database_error(tmp_path):
    proc = fp("plot", "-o", tmp_path / "none.db", "--out", tmp_path / "p.html")
    assert proc.returncode == 3, describe(proc)
    single_error_line(proc)
    assert not (tmp_path / "p.html").exists()


# ---- the interactive menu, in a pseudo-terminal ------------------------------------------

class Terminal:
    """footprint plot with a pseudo-terminal as stdin, stdout and stderr."""

    def __init__(self, db, out, *args):
        self.master, self.slave = pty.openpty()
        self.proc = subprocess.Popen(
            [fp_helpers.FOOTPRINT, "plot", "-o", db, "--out", out, *args],
            stdin=self.slave, stdout=self.slave, stderr=self.slave,
            env=fp_helpers.clean_env(TERM="xterm"), start_new_session=True)
        self.screen = ""

    def expect(self, text, timeout=30):
        """Reads the terminal until TEXT appeared (after what was read so far)."""
        deadline = time.monotonic() + timeout
        while text not in self.screen:
            left = deadline - time.monotonic()
            assert left > 0, f"no {text!r} on the terminal:\n{self.screen}"
            ready, _, _ = select.select([self.master], [], [], left)
            if ready:
                try:
                    chunk = os.read(self.master, 65536).decode(errors="replace")
                except OSError:  # the slave closed: the process exited
                    chunk = ""
                if not chunk and self.proc.poll() is not None:
                    raise AssertionError(f"exited {self.proc.returncode} without {text!r}:\n"
                                         f"{self.screen}")
                self.screen += chunk
        found = self.screen
        self.screen = self.screen[self.screen.index(text) + len(text):]
        return found

    def keys(self, *keys):
        for k in keys:
            os.write(self.master, k.encode())
            time.sleep(0.15)  # one key per read, as a person types (Esc needs its pause)

    def finish(self, timeout=60):
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < deadline:
            ready, _, _ = select.select([self.master], [], [], 0.1)
            if ready:
                try:
                    self.screen += os.read(self.master, 65536).decode(errors="replace")
                except OSError:
                    pass
        assert self.proc.poll() is not None, f"footprint plot did not exit:\n{self.screen}"
        while select.select([self.master], [], [], 0.2)[0]:  # what it wrote before exiting
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                break
            if not chunk:
                break
            self.screen += chunk.decode(errors="replace")
        return self.proc.returncode

    def cooked(self):
        """Whether the terminal is back in its normal (canonical, echoing) mode."""
        lflag = termios.tcgetattr(self.slave)[3]
        return bool(lflag & termios.ICANON) and bool(lflag & termios.ECHO)

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        os.close(self.master)
        os.close(self.slave)


@pytest.fixture
def terminal():
    made = []

    def start(*args):
        t = Terminal(*args)
        made.append(t)
        return t

    yield start
    for t in made:
        t.close()


def test_menu_chooses_runs_metrics_and_scopes_with_keys(db, tmp_path, terminal):
    out = tmp_path / "menu.html"
    t = terminal(db, out)
    # Runs, newest first: pipeline, burn-b, burn-a. Tick pipeline and burn-a.
    t.expect("Runs to plot (newest first)")
    t.keys(SPACE, DOWN, DOWN, SPACE, ENTER)
    # Metrics of those runs, sampled ones first in order of appearance: cpu, memory, ...
    t.expect("Metrics to plot")
    menu = t.expect("up/down move")  # the first drawing of the metrics menu
    assert "[x]" not in menu and "> [ ] cpu" in menu
    t.keys(DOWN, SPACE, "j", "k", UP, SPACE, ENTER)  # memory, then cpu
    # Scopes: load, transform, train epoch. Enter with none ticked takes the highlighted one.
    t.expect("Scopes to show")
    t.keys(DOWN, DOWN, ENTER)
    assert t.finish() == 0, t.screen
    assert t.cooked()
    data = plot_data(out)
    ids = run_ids(db)
    assert [r["id"] for r in data["runs"]] == [ids["pipeline"], ids["burn-a"]]
    assert sampled(data) == {"cpu", "memory"}
    assert data["curves"] == [] and data["confusion"] == []
    assert [s["name"] for s in data["scopes"]] == ["train epoch"]


def test_menu_select_all_then_none(db, tmp_path, terminal):
    out = tmp_path / "all.html"
    t = terminal(db, out, "-u", "pipeline", "-d", "load")  # only metrics are asked
    t.expect("Metrics to plot")
    t.keys("a")
    t.expect("[x] cpu")
    t.keys("a")  # all ticked: 'a' ticks none
    t.expect("[ ] cpu")
    t.keys("a", ENTER)
    assert t.finish() == 0, t.screen
    with fp_helpers.connect(db) as con:
        metrics = {m for (m,) in con.execute(
            "SELECT DISTINCT metric FROM series WHERE run_id = ?", (run_ids(db)["pipeline"],))}
    data = plot_data(out)
    assert sampled(data) == metrics
    assert {c["name"] for c in data["curves"]} == {"loss", "accuracy", "time_to_accuracy"}
    assert [c["name"] for c in data["confusion"]] == ["confusion"]


@pytest.mark.parametrize("key", ["q", ESC, "\x03"])
def test_menu_cancel_writes_nothing_and_restores_the_terminal(db, tmp_path, terminal, key):
    out = tmp_path / "never.html"
    t = terminal(db, out)
    t.expect("Runs to plot")
    t.expect("up/down move")
    assert not t.cooked()
    t.keys(DOWN, key)
    assert t.finish() == 1, t.screen
    assert "cancelled" in t.screen
    assert t.cooked()
    assert not out.exists() and os.listdir(tmp_path) == []


def test_sigint_during_the_menu_restores_the_terminal(db, tmp_path, terminal):
    out = tmp_path / "never.html"
    t = terminal(db, out)
    t.expect("Runs to plot")
    t.expect("up/down move")
    assert not t.cooked()
    t.proc.send_signal(signal.SIGINT)
    assert t.finish() == -signal.SIGINT
    assert t.cooked()
    assert not out.exists()


def test_no_menu_flag_uses_defaults_on_a_terminal(db, tmp_path, terminal):
    out = tmp_path / "defaults.html"
    t = terminal(db, out, "--no-menu")
    assert t.finish() == 0, t.screen
    assert [r["name"] for r in plot_data(out)["runs"]] == ["pipeline"]


def test_names_cannot_break_out_of_the_page(tmp_path):
    db = str(tmp_path / "fp.db")
    name = '</script><script>alert(1)</script> & "quoted"'
    run_ok(db, [wl("exit_with"), "0"], "-n", name)
    out = tmp_path / "p.html"
    proc = fp("plot", "-o", db, "-u", "last", "--out", out)
    assert proc.returncode == 0, describe(proc)
    page = out.read_text()
    assert "<script>alert" not in page
    assert plot_data(out)["runs"][0]["name"] == name
    assert "<title>footprint: &lt;/script&gt;&lt;script&gt;alert(1)" in page


def test_totals_are_charted_in_their_own_units(tmp_path):
    # perf counts are counts, not seconds: they get a chart of their own.
    db = str(tmp_path / "fp.db")
    run_ok(db, [wl("burn"), "1", "0.2"], "-n", "counted", "-m", "cpu,perf.cycles",
           env=fp_helpers.clean_env(FOOTPRINT_PERF_EVENTS="perf.cycles=task-clock"))
    out = tmp_path / "page.html"
    proc = fp("plot", "-o", db, "--no-menu", "--out", out, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, describe(proc)
    units = {t["name"]: t["unit"] for t in plot_data(out)["totals"]}
    assert units["perf_cycles"] == "count"
    assert units["duration_s"] == "s" and units["peak_memory_bytes"] == "bytes"


def test_a_profiler_window_is_drawn_among_more_scopes_than_are_kept(tmp_path):
    """Beyond 300 scope instances the longest are drawn, profiler windows (profile:NAME) first
    whatever their length: the window must stay marked on the charts."""
    db = str(tmp_path / "fp.db")
    run_ok(db, ["/bin/true"], "-n", "steps")
    (run_id,) = [r["id"] for r in fp_helpers.runs_json(db)]
    ms = 1_000_000
    steps = [(run_id, "step", k * 3 * ms, k * 3 * ms + 2 * ms) for k in range(400)]
    window = (run_id, "profile:train", 30 * ms + ms // 2, 30 * ms + ms)  # the shortest of all
    with sqlite3.connect(db) as con:
        con.executemany("INSERT INTO scopes(run_id, name, start_ns, end_ns) VALUES (?, ?, ?, ?)",
                        steps + [window])
    con.close()
    out = tmp_path / "p.html"
    proc = fp("plot", "-o", db, "-u", "steps", "-t", "cpu", "--out", out)
    assert proc.returncode == 0, describe(proc)
    (bands,) = plot_data(out)["bands"]
    assert bands["total"] == 401 and len(bands["bands"]) == 300
    (marked,) = [b for b in bands["bands"] if b["name"] == "profile:train"]
    assert marked["start"] == pytest.approx(0.0305) and marked["end"] == pytest.approx(0.031)
