"""Repetitions, group statistics and comparisons: `run -r N --warmup W`, `show group:...`,
`compare`. Statistics are checked against numpy and SciPy (Debian's python3-numpy and
python3-scipy), computed here independently of footprint, on real workloads and on synthetic
groups with known values."""
import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import time

import numpy as np
import pytest
from scipy import stats as sps

from fp_helpers import (
    FOOTPRINT,
    HIGH_PRIORITY,
    clean_env,
    describe,
    fp,
    run_ok,
    runs_json,
    show,
    single_error_line,
    wl,
)


def show_group(db, spec="group:last", *extra):
    proc = fp("show", "-o", db, "--json", spec, *extra)
    assert proc.returncode == 0, describe(proc)
    return json.loads(proc.stdout)


def compare(db, *args):
    proc = fp("compare", "-o", db, "--json", *args)
    assert proc.returncode == 0, describe(proc)
    return json.loads(proc.stdout)


def figure(comparison, name):
    found = [f for f in comparison["figures"] if f["name"] == name]
    assert len(found) == 1, comparison["figures"]
    return found[0]


def check_description(fig, values):
    """A figure of show --json against numpy/SciPy on the same values."""
    v = np.asarray(values, dtype=float)
    n = len(v)
    assert fig["n"] == n and fig["values"] == pytest.approx(list(v), rel=1e-12)
    assert fig["mean"] == pytest.approx(v.mean(), rel=1e-12)
    assert fig["median"] == pytest.approx(np.median(v), rel=1e-12)
    assert fig["min"] == v.min() and fig["max"] == v.max()
    q1, q3 = np.percentile(v, [25, 75])
    assert fig["q1"] == pytest.approx(q1, rel=1e-12, abs=1e-15)
    assert fig["q3"] == pytest.approx(q3, rel=1e-12, abs=1e-15)
    if n >= 2:
        assert fig["sd"] == pytest.approx(v.std(ddof=1), rel=1e-9, abs=1e-15)
        if v.std() > 0:
            lo, hi = sps.t.interval(0.95, n - 1, loc=v.mean(), scale=sps.sem(v))
            if (v >= 0).all():
                lo = max(lo, 0.0)  # a cost cannot be negative: the interval is cut at 0
            assert fig["ci95_low"] == pytest.approx(lo, rel=1e-9)
            assert fig["ci95_high"] == pytest.approx(hi, rel=1e-9)
    else:
        assert fig["sd"] is None and fig["ci95_low"] is None
    iqr = q3 - q1
    expected = [i for i, x in enumerate(v) if n >= 4 and (x < q1 - 1.5 * iqr or x > q3 + 1.5 * iqr)]
    assert [v.tolist().index(o["value"]) for o in fig["outliers"]] == expected


# ---------------------------------------------------------------------------------------
# Repetitions of a real workload


@pytest.fixture(scope="module")
def burn_group(tmp_path_factory):
    folder = tmp_path_factory.mktemp("group")
    db = folder / "fp.db"
    proc = run_ok(db, [wl("burn"), 1, 0.1], "-r", 3, "--warmup", 1, "--no-git", **HIGH_PRIORITY)
    return {"db": db, "runs": runs_json(db), "stderr": proc.stderr}


def test_repetitions_are_stored_as_one_group_with_marked_warmups(burn_group):
    runs = burn_group["runs"]
    assert len(runs) == 4
    groups = {r["group_id"] for r in runs}
    assert len(groups) == 1 and None not in groups
    assert [r["repetition"] for r in runs] == [-1, 1, 2, 3]  # warm-up first, then 1..N
    assert all(r["status"] == "ok" for r in runs)
    # footprint runs lists the group and each run's place in it.
    proc = fp("runs", "-o", burn_group["db"])
    lines = proc.stdout.splitlines()
    assert "GROUP" in lines[0]
    group8 = runs[0]["group_id"][:8]
    assert f"{group8} warm-up" in lines[1]
    assert [f"{group8} #{i}" in line for i, line in enumerate(lines[2:], 1)] == [True] * 3
    # Each run knows its group; a run shown alone says how to see the group.
    one = show(burn_group["db"], runs[2]["id"])
    assert one["run"]["group_id"] == runs[0]["group_id"] and one["run"]["repetition"] == 2
    assert one["meta"]["group"] == {"repetitions": 3, "warmups": 1}
    text = fp("show", "-o", burn_group["db"], runs[2]["id"]).stdout
    assert f"footprint show group:{group8}" in text


def test_group_statistics_match_numpy_and_leave_warmups_out(burn_group):
    db, runs = burn_group["db"], burn_group["runs"]
    g = show_group(db)
    assert g["group"]["id"] == runs[0]["group_id"]
    assert g["group"]["repetitions"] == 3 and g["group"]["warmups"] == 1
    assert g["group"]["counted"] == 3
    assert g["group"]["planned_repetitions"] == 3 and g["group"]["planned_warmups"] == 1
    assert [r["id"] for r in g["runs"]] == [r["id"] for r in runs[1:]]
    assert [r["id"] for r in g["warmups"]] == [runs[0]["id"]]
    totals = [show(db, r["id"])["totals"] for r in runs[1:]]
    for name in ("duration_s", "peak_memory_bytes", "cpu_user_s", "monitor_cpu_s"):
        check_description(g["figures"][name], [t[name] for t in totals])
    check_description(g["figures"]["cpu_s"],
                      [t["cpu_user_s"] + t["cpu_system_s"] for t in totals])
    assert g["order"][:3] == ["duration_s", "cpu_s", "peak_memory_bytes"]
    assert g["figures"]["duration_s"]["headline"] and g["figures"]["duration_s"]["unit"] == "s"
    # fp_burn 1 0.1: each repetition lasts about 0.1 s.
    assert 0.1 <= g["figures"]["duration_s"]["mean"] < 0.3
    # The same group, named by a run of it, its prefix, or --group.
    assert show_group(db, "group:" + runs[0]["group_id"][:6]) == g
    assert show_group(db, "group:" + runs[2]["id"]) == g
    assert show_group(db, runs[3]["id"], "--group") == g


def test_group_is_shown_as_a_table(burn_group):
    proc = fp("show", "-o", burn_group["db"], "group:last")
    assert proc.returncode == 0, describe(proc)
    out = proc.stdout
    for text in ("group", "warm-up", "statistics", "duration", "cpu time", "peak memory",
                 "95 % CI", "mean ± sd", " ms"):
        assert text in out, out
    assert "\x1b[" not in out and "▁" not in out  # not a terminal: no decoration


def test_footprint_cost_of_each_repetition_is_its_own(tmp_path):
    """run -r 12 -- true: footprint's CPU and memory of repetition k are what it spent during
    repetition k, so they stay flat (it once grew 23 -> 120 ms as earlier repetitions added up);
    ground truth: the first repetitions of the same group."""
    db = tmp_path / "reps.db"
    run_ok(db, ["true"], "-r", 12, "--no-git")
    figures = show_group(db)["figures"]
    cpu = figures["monitor_cpu_s"]["values"]
    rss = figures["monitor_peak_rss_bytes"]["values"]
    assert len(cpu) == 12 and len(rss) == 12
    # CPU time, not wall time: a busy machine stretches neither much. Slack for one scheduler
    # tick and page faults that land in a later repetition.
    assert max(cpu[-4:]) <= 2 * float(np.median(cpu[:4])) + 0.005, cpu
    assert max(rss[-4:]) <= 1.25 * float(np.median(rss[:4])), rss


def test_failing_repetition_stops_the_group_unless_keep_going(tmp_path):
    db = tmp_path / "fail.db"
    proc = run_ok(db, [wl("exit_with"), 3], "-r", 3, "--no-git", expect_rc=3)
    assert len(runs_json(db)) == 1
    assert "stopped after a failing run" in proc.stderr
    run_ok(db, [wl("exit_with"), 3], "-r", 3, "--keep-going", "--no-git", expect_rc=3)
    runs = runs_json(db)[1:]
    assert [r["repetition"] for r in runs] == [1, 2, 3]
    g = show_group(db)
    assert g["group"]["counted"] == 0 and g["figures"] == {}
    assert [r["counted"] for r in g["runs"]] == [False] * 3
    # A failing warm-up stops the group too.
    run_ok(db, [wl("exit_with"), 4], "-r", 2, "--warmup", 1, "--no-git", expect_rc=4)
    assert runs_json(db)[-1]["repetition"] == -1


def test_a_slow_first_repetition_is_warned_of(tmp_path):
    """As hyperfine does, from the durations' robust z-scores: the first repetition sleeps
    0.4 s and leaves a marker, the others find it and exit in milliseconds."""
    marker = tmp_path / "warm"
    proc = fp("run", "-o", tmp_path / "a.db", "--no-git", "-r", 5, "--",
              "sh", "-c", f"test -e {marker} || {{ sleep 0.4; touch {marker}; }}")
    assert proc.returncode == 0, describe(proc)
    warning = re.search(r"warning: the first repetition took (.+?), far longer than the rest "
                        r"\(median (.+?)\).*--warmup N runs the command N times", proc.stderr)
    assert warning, proc.stderr
    assert "lie far from the rest" not in proc.stderr  # the first is all that is said
    # The durations it names are the group's own: the first repetition's and the median (to
    # the two decimals they are written with).
    durations = [(r["ended_at_ns"] - r["started_at_ns"]) / 1e9 for r in runs_json(tmp_path / "a.db")]
    scale = {"ns": 1e-9, "µs": 1e-6, "ms": 1e-3, "s": 1.0}

    def seconds(text):
        number, unit = text.split()
        return float(number) * scale[unit]

    assert seconds(warning[1]) == pytest.approx(durations[0], rel=0.01), (warning[1], durations)
    assert seconds(warning[2]) == pytest.approx(float(np.median(durations)), rel=0.01), \
        (warning[2], durations)
    assert durations[0] >= 0.4  # the sleep


@pytest.mark.parametrize("bad", [["-r", "0"], ["--warmup", "-1"], ["-r", "x"]])
def test_bad_repetition_counts_are_refused(tmp_path, bad):
    proc = fp("run", "-o", tmp_path / "x.db", *bad, "--", "true")
    assert proc.returncode == 125, describe(proc)
    single_error_line(proc)
    assert not (tmp_path / "x.db").exists() or runs_json(tmp_path / "x.db") == []


def count_runs(db):
    """Runs in the database, 0 while footprint is still creating it."""
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
        try:
            return con.execute("SELECT count(*) FROM runs").fetchone()[0]
        finally:
            con.close()
    except sqlite3.OperationalError:
        return 0


def interrupt_group(db, command, delay, **popen):
    """Runs `footprint run -o DB -r ... COMMAND` in its own session, waits until its second
    repetition exists, then `delay` seconds, and sends SIGINT to the whole group as a
    terminal's Ctrl-C does; returns (exit code, stderr)."""
    proc = subprocess.Popen([FOOTPRINT, "run", "-o", db, "--no-git", *command],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, **popen)
    try:
        deadline = time.monotonic() + 60
        while count_runs(db) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(delay)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode, err


def test_ctrl_c_stops_the_group_cleanly(tmp_path):
    """SIGINT to the whole foreground process group, as a terminal's Ctrl-C: the running
    repetition ends, is stored, and no further repetition starts."""
    db = tmp_path / "int.db"
    rc, err = interrupt_group(db, ["-r", "20", "--", wl("burn"), "1", "0.3"], 0.1, env=clean_env())
    assert rc == 130, err
    assert "stopped by signal 2" in err, err
    runs = runs_json(db)
    assert 2 <= len(runs) < 20
    assert all(r["status"] in ("ok", "killed") for r in runs), runs  # none left running
    # Usually the interrupted repetition itself (killed); if the signal came just before its
    # command started, that repetition completes and none follows.
    assert runs[-1]["status"] == "killed" or runs[-1]["exit_code"] == 0, runs


def test_ctrl_c_at_any_moment_stops_the_group(tmp_path):
    """Ctrl-C at random moments of `run -r` of a command that lasts a few ms: footprint always
    stops the group with 130. Two moments failed before: a command killed at the gate made
    opening it raise SIGPIPE in footprint (exit -13, 3 times in 40 here), and a signal that
    came while a run was being stored was dropped, so the group went on."""
    rng = random.Random(20261125)
    for i in range(15):
        rc, err = interrupt_group(tmp_path / f"{i}.db", ["-q", "-r", "100000", "--", "true"],
                                  rng.uniform(0, 0.2))
        assert rc == 130, (i, rc, err)


# ---------------------------------------------------------------------------------------
# compare


@pytest.fixture(scope="module")
def fast_slow(tmp_path_factory):
    db = tmp_path_factory.mktemp("cmp") / "fp.db"
    run_ok(db, [wl("burn"), 1, 0.1], "-r", 4, "-n", "fast", "--no-git", **HIGH_PRIORITY)
    fast = runs_json(db)[-1]["group_id"]
    run_ok(db, [wl("burn"), 1, 0.3], "-r", 4, "-n", "slow", "--no-git", **HIGH_PRIORITY)
    slow = runs_json(db)[-1]["group_id"]
    return {"db": db, "fast": fast, "slow": slow}


def durations(db, group):
    return show_group(db, "group:" + group)["figures"]["duration_s"]["values"]


def test_clearly_slower_group_is_significant(fast_slow):
    db, fast, slow = fast_slow["db"], fast_slow["fast"], fast_slow["slow"]
    c = compare(db, "group:" + fast, "group:" + slow)
    assert c["test"] == "welch" and c["alpha"] == 0.05
    assert [s["kind"] for s in c["sets"]] == ["group", "group"]
    assert [s["n"] for s in c["sets"]] == [4, 4]
    d = figure(c, "duration_s")
    assert d["headline"] and d["changes"][0] is None
    ch = d["changes"][1]
    a, b = durations(db, fast), durations(db, slow)
    assert ch["relative"] == pytest.approx(np.mean(b) / np.mean(a) - 1, rel=1e-12)
    # 0.3 s against 0.1 s of wall-clock burning, each run plus footprint's and the process's
    # start and end, which a busy machine stretches alike in both groups.
    assert min(a) >= 0.1 and min(b) >= 0.3, (a, b)
    assert np.mean(b) - np.mean(a) == pytest.approx(0.2, abs=0.08), (a, b)
    ref = sps.ttest_ind(b, a, equal_var=False)
    assert ch["method"] == "welch" and ch["statistic"] == pytest.approx(ref.statistic, rel=1e-9)
    assert ch["p_value"] == pytest.approx(ref.pvalue, rel=1e-6, abs=1e-300)
    assert ch["significant"] is True
    # Mann-Whitney: 4 against 4 completely separated, exact two-sided p = 2/70.
    mw = figure(compare(db, "group:" + fast, "group:" + slow, "--test", "mann-whitney"),
                "duration_s")["changes"][1]
    ref = sps.mannwhitneyu(a, b)
    assert mw["method"] == "mann-whitney" and mw["exact"] is True
    assert mw["statistic"] == ref.statistic == 0
    assert mw["p_value"] == pytest.approx(ref.pvalue) == pytest.approx(2 / 70)
    assert mw["significant"] is True


def test_a_group_against_itself_is_not_significant(fast_slow):
    db, fast = fast_slow["db"], fast_slow["fast"]
    for test in ("welch", "mann-whitney"):
        c = compare(db, "group:" + fast, "--group", "group:" + fast, "--test", test)
        for f in c["figures"]:
            ch = f["changes"][1]
            # footprint's own cost is never significant, nor judged at all (compare.h: own).
            assert ch["p_value"] == 1, (test, f)
            assert ch["significant"] is (None if f.get("own") else False), (test, f)


def test_single_runs_compare_by_labelled_ratio(fast_slow):
    db = fast_slow["db"]
    runs = runs_json(db)
    c = compare(db, "group:" + fast_slow["fast"], runs[-1]["id"])
    assert [s["kind"] for s in c["sets"]] == ["group", "run"]
    ch = figure(c, "duration_s")["changes"][1]
    assert ch["method"] == "ratio" and ch["p_value"] is None and ch["significant"] is None
    assert ch["ratio"] == pytest.approx(
        show(db, runs[-1]["id"])["totals"]["duration_s"] / np.mean(durations(db, fast_slow["fast"])))
    fast_run = next(r["id"] for r in runs if r["name"] == "fast")
    text = fp("compare", "-o", db, fast_run, runs[-1]["id"]).stdout  # two single runs, by id
    assert "ratio, single run" in text and "baseline" in text and "duration" in text
    # No test ran: no verdict, and the footer names none.
    assert "verdict" not in text and "Welch" not in text, text


def test_names_mean_their_groups_with_a_one_line_verdict(fast_slow):
    """`compare fast slow` after `run -r 4 -n fast` and `-n slow` compares the groups (not
    their last runs), says so, and gives hyperfine's verdict: the ratio of the mean durations
    with its uncertainty from the two sample sds (numpy, ddof=1)."""
    db, fast, slow = fast_slow["db"], fast_slow["fast"], fast_slow["slow"]
    proc = fp("compare", "-o", db, "fast", "slow")
    assert proc.returncode == 0, describe(proc)
    assert proc.stderr.splitlines() == [
        f"footprint: note: '{name}' means group {gid[:8]} ({name}), the 4 repetition(s) of its "
        "latest run -r; give a run's id to take one run alone"
        for name, gid in (("fast", fast), ("slow", slow))
    ], proc.stderr
    a, b = np.array(durations(db, fast)), np.array(durations(db, slow))
    ratio = b.mean() / a.mean()
    ratio_sd = ratio * np.hypot(a.std(ddof=1) / a.mean(), b.std(ddof=1) / b.mean())
    verdict = f"'slow' ran {ratio:.2f} ± {ratio_sd:.2f} times slower than 'fast'"
    assert "\nverdict\n  " + verdict + "\n" in proc.stdout, proc.stdout
    c = compare(db, "fast", "slow")
    assert [s["kind"] for s in c["sets"]] == ["group", "group"]
    d = figure(c, "duration_s")
    assert d["verdicts"] == [None, verdict]
    assert d["changes"][1]["ratio_sd"] == pytest.approx(ratio_sd, rel=1e-9)
    # A figure the test finds unchanged says so: the same group against itself.
    same = figure(compare(db, "fast", "--group", "fast"), "cpu_s")["verdicts"][1]
    assert same == "cpu time: no significant difference between 'fast' and 'fast' (p=1.000)"
    # show takes the name the same way.
    shown = fp("show", "-o", db, "--json", "slow")
    assert json.loads(shown.stdout)["group"]["id"] == slow
    assert "means group " + slow[:8] in shown.stderr


def test_compare_text_names_the_sets_and_the_test(fast_slow):
    proc = fp("compare", "-o", fast_slow["db"], "group:" + fast_slow["fast"],
              "group:" + fast_slow["slow"])
    assert proc.returncode == 0, describe(proc)
    out = proc.stdout
    assert "A  group " + fast_slow["fast"][:8] in out and "(baseline)" in out
    assert "B  group " + fast_slow["slow"][:8] in out
    line = next(l for l in out.splitlines() if l.strip().startswith("duration"))
    assert "significant" in line and "+" in line and "%" in line
    assert "Welch's t-test" in out


@pytest.mark.parametrize("args, code", [
    (["last"], 2),                       # one set only
    (["last", "nosuchrun"], 4),
    (["group:zzzz", "last"], 4),
    (["last", "last", "--test", "anova"], 2),
    (["last", "last", "--alpha", "2"], 2),
])
def test_compare_errors(fast_slow, args, code):
    proc = fp("compare", "-o", fast_slow["db"], *args)
    assert proc.returncode == code, describe(proc)
    single_error_line(proc)


# ---------------------------------------------------------------------------------------
# Synthetic groups: known values, checked against numpy/SciPy


def synthetic_db(tmp_path, groups):
    """A footprint database holding, per name in `groups`, a group whose repetition i has
    the totals groups[name][i] (a dict); returns {name: group id}."""
    db = tmp_path / "syn.db"
    run_ok(db, ["true"], "--no-git")  # footprint creates the schema
    ids = {}
    con = sqlite3.connect(db)
    with con:
        for g, (name, reps) in enumerate(groups.items()):
            gid = f"{g + 1:08x}-0000-4000-8000-000000000000"
            ids[name] = gid
            for i, totals in enumerate(reps):
                rid = f"{g + 1:08x}-{i:04x}-4000-8000-000000000001"
                con.execute(
                    "INSERT INTO runs(id, name, group_id, repetition, command, started_at_ns, "
                    "ended_at_ns, status, exit_code, meta) VALUES (?, ?, ?, ?, '[\"x\"]', ?, ?, "
                    "'ok', 0, '{}')", (rid, name, gid, i + 1, 10**18 + g * 1000 + i, 10**18 + 10**9))
                con.executemany("INSERT INTO run_totals(run_id, name, value) VALUES (?, ?, ?)",
                                [(rid, k, v) for k, v in totals.items()])
    con.close()
    return db, ids


def test_statistics_and_tests_match_scipy_on_known_data(tmp_path):
    rng = np.random.default_rng(20261122)
    a = rng.normal(10.0, 0.5, 12)
    a[3] = 14.0  # an outlier
    b = rng.normal(10.6, 0.9, 9)
    energy_a = np.round(rng.uniform(100, 110, 12), 1)  # rounded: ties for Mann-Whitney
    energy_b = np.round(rng.uniform(103, 113, 9), 1)
    groups = {
        "a": [{"duration_s": x, "gpu_energy_j": e, "new_probe_count": 7} for x, e in
              zip(a, energy_a)],
        "b": [{"duration_s": x, "gpu_energy_j": e, "new_probe_count": 7,
               "io_write_bytes": 1e6 if i == 8 else 0} for i, (x, e) in
              enumerate(zip(b, energy_b))],
    }
    db, ids = synthetic_db(tmp_path, groups)
    ga = show_group(db, "group:" + ids["a"])
    check_description(ga["figures"]["duration_s"], a)
    check_description(ga["figures"]["gpu_energy_j"], energy_a)
    assert ga["figures"]["duration_s"]["outliers"][0]["repetition"] == 4
    # Energy joins the headline; a total footprint does not know is still summarized.
    assert ga["figures"]["gpu_energy_j"]["headline"] and ga["figures"]["gpu_energy_j"]["unit"] == "J"
    assert ga["order"][:2] == ["duration_s", "gpu_energy_j"]
    assert ga["figures"]["new_probe_count"]["sd"] == 0
    # One write of 1 MB in 9 repetitions: the t-interval reaches below 0 bytes, and is cut.
    writes = show_group(db, "group:" + ids["b"])["figures"]["io_write_bytes"]
    check_description(writes, [0] * 8 + [1e6])
    assert writes["ci95_low"] == 0

    for test in ("welch", "mann-whitney"):
        c = compare(tmp_path / "syn.db", "group:" + ids["a"], "group:" + ids["b"],
                    "--test", test)
        for name, x, y in (("duration_s", a, b), ("gpu_energy_j", energy_a, energy_b)):
            ch = figure(c, name)["changes"][1]
            if test == "welch":
                ref = sps.ttest_ind(y, x, equal_var=False)
                # Welch-Satterthwaite degrees of freedom, by hand.
                va, vb = x.var(ddof=1) / len(x), y.var(ddof=1) / len(y)
                df = (va + vb) ** 2 / (va**2 / (len(x) - 1) + vb**2 / (len(y) - 1))
                assert ch["df"] == pytest.approx(df, rel=1e-9)
            else:
                ref = sps.mannwhitneyu(x, y)
                assert ch["exact"] is False  # both sides hold more than 8: asymptotic
            assert ch["statistic"] == pytest.approx(ref.statistic, rel=1e-9)
            assert ch["p_value"] == pytest.approx(ref.pvalue, rel=1e-6), (test, name)
            assert ch["significant"] == (ref.pvalue < 0.05)
        same = figure(c, "new_probe_count")["changes"][1]
        assert same["p_value"] == 1 and same["significant"] is False


def test_identical_values_in_another_order_are_not_significant(tmp_path):
    values = [1.25, 1.5, 1.0, 1.75, 1.125]
    db, ids = synthetic_db(tmp_path, {"x": [{"duration_s": v} for v in values],
                                      "y": [{"duration_s": v} for v in reversed(values)]})
    for test in ("welch", "mann-whitney"):
        ch = figure(compare(db, "group:" + ids["x"], "group:" + ids["y"], "--test", test),
                    "duration_s")["changes"][1]
        assert ch["relative"] == 0 and ch["significant"] is False
        assert ch["p_value"] == pytest.approx(1)


def test_small_exact_mann_whitney_matches_scipy(tmp_path):
    x, y = [1.0, 2.5, 3.0, 4.5], [2.0, 5.0, 6.0, 7.5, 8.0]
    db, ids = synthetic_db(tmp_path, {"x": [{"duration_s": v} for v in x],
                                      "y": [{"duration_s": v} for v in y]})
    ch = figure(compare(db, "group:" + ids["x"], "group:" + ids["y"], "--test", "mwu"),
                "duration_s")["changes"][1]
    ref = sps.mannwhitneyu(x, y, method="exact")
    assert ch["exact"] is True
    assert ch["statistic"] == ref.statistic
    assert ch["p_value"] == pytest.approx(ref.pvalue, rel=1e-12)
