"""footprint runs / show: resolving runs, the metadata and totals stored with them, and
statistics that agree with the raw samples in the database."""
import json
import os
import pwd
import re
import shlex
import shutil
import socket
import sqlite3
import subprocess
import time

import pytest

import fp_helpers
from fp_helpers import (
    HIGH_PRIORITY,
    clean_env,
    cpu_total,
    describe,
    fp,
    metric,
    raw_samples,
    run_ok,
    runs_json,
    show,
    single_error_line,
    stats,
    wl,
)

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")

METRICS = {
    "cpu": ("%", "tree"),
    "memory": ("bytes", "tree"),
    "threads": ("count", "tree"),
    "processes": ("count", "tree"),
    "io.read": ("bytes/s", "tree"),
    "io.write": ("bytes/s", "tree"),
    "sys.cpu": ("%", "system"),
    "sys.memory": ("bytes", "system"),
    "monitor.sample_cost": ("us", "monitor"),
    "monitor.sample_delay": ("us", "monitor"),
}


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    """A database of four runs: alpha (burn 0.5 s, with tags/params/description), beta,
    alpha again, and one with the default name that exits 5."""
    folder = tmp_path_factory.mktemp("book")
    db = folder / "fp.db"
    before = time.time_ns()
    t0 = time.monotonic()
    truth = folder / "truth"
    truth.mkdir()
    run_ok(
        db,
        [wl("burn"), 1, 0.5],
        "-n", "alpha", "-d", "first run, with tags", "--tag", "team=ml", "--tag", "size=small",
        "--param", "lr=0.1", "--param", "epochs=3", "-i", "20ms", "--no-git",
        cwd=folder, env=clean_env(FP_WORKLOAD_REPORT=truth), **HIGH_PRIORITY,
    )
    wall = time.monotonic() - t0
    [report] = [json.loads(f.read_text()) for f in truth.iterdir()]
    run_ok(db, [wl("exit_with"), 0], "-n", "beta", "--no-git", cwd=folder)
    run_ok(db, [wl("exit_with"), 0], "-n", "alpha", "--no-git", cwd=folder)
    run_ok(db, [wl("exit_with"), 5], "--no-git", cwd=folder, expect_rc=5)
    after = time.time_ns()
    return {"db": db, "cwd": folder, "runs": runs_json(db), "before": before, "after": after,
            "wall": wall, "alive_s": report["alive_s"]}


def test_runs_lists_every_run_oldest_first(book):
    runs = book["runs"]
    assert [r["name"] for r in runs] == ["alpha", "beta", "alpha", "fp_exit_with"]
    assert [r["status"] for r in runs] == ["ok", "ok", "ok", "failed"]
    assert [r["exit_code"] for r in runs] == [0, 0, 0, 5]
    assert all(UUID.match(r["id"]) for r in runs), runs
    assert len({r["id"] for r in runs}) == 4
    starts = [r["started_at_ns"] for r in runs]
    assert starts == sorted(starts)
    assert all(book["before"] <= r["started_at_ns"] < r["ended_at_ns"] <= book["after"]
               for r in runs)
    assert runs[3]["command"] == [wl("exit_with"), "5"]

    proc = fp("runs", "-o", book["db"])
    assert proc.returncode == 0, describe(proc)
    lines = proc.stdout.splitlines()
    assert len(lines) == 1 + 4  # a header, then one line per run, in the same order
    for line, r in zip(lines[1:], runs):
        assert line.startswith(r["id"][:8]) and r["name"] in line, line


def test_runs_filter_since_and_limit(book):
    """--filter (name or command line), --since (started that long ago at most) and --limit
    (the latest N), in JSON and text alike; a filter that keeps nothing says so."""
    def ids(*args):
        proc = fp("runs", "-o", book["db"], "--json", *args)
        assert proc.returncode == 0, describe(proc)
        return [r["id"] for r in json.loads(proc.stdout)]
    every = [r["id"] for r in book["runs"]]
    assert ids("--filter", "alpha") == [every[0], every[2]]
    assert ids("--filter", "exit_with 5") == [every[3]]  # in the command line
    assert ids("--filter", "burn") == [every[0]]
    assert ids("--limit", "2") == every[2:]
    assert ids("--filter", "alpha", "--limit", "1") == [every[2]]
    assert ids("--since", "1d") == every
    assert ids("--since", "0s") == []
    text = fp("runs", "-o", book["db"], "--filter", "alpha").stdout.splitlines()
    assert len(text) == 3 and all("alpha" in line for line in text[1:]), text
    none = fp("runs", "-o", book["db"], "--filter", "no-such-thing")
    assert none.returncode == 0 and "none of the 4 runs" in none.stdout, describe(none)
    bad = fp("runs", "-o", book["db"], "--since", "yesterday")
    assert bad.returncode == 2, describe(bad)
    assert "'yesterday' is not a duration" in single_error_line(bad)


def unique_prefix(runs, run_id):
    for n in range(4, len(run_id) + 1):
        if sum(r["id"].startswith(run_id[:n]) for r in runs) == 1:
            return run_id[:n]


def test_run_is_found_by_id_prefix_name_and_last(book):
    db, runs = book["db"], book["runs"]
    ids = [r["id"] for r in runs]
    for run_id in ids:
        assert show(db, run_id)["run"]["id"] == run_id
        assert show(db, run_id[:8])["run"]["id"] == run_id
        assert show(db, unique_prefix(runs, run_id))["run"]["id"] == run_id
    assert show(db, "alpha")["run"]["id"] == ids[2]  # a name means its latest run
    assert show(db, "beta")["run"]["id"] == ids[1]
    assert show(db, "fp_exit_with")["run"]["id"] == ids[3]  # the command's base name
    assert show(db, "last")["run"]["id"] == ids[3]
    assert show(db)["run"]["id"] == ids[3]
    several = show(db, "beta", ids[0][:8], "last")
    assert isinstance(several, list)
    assert [s["run"]["id"] for s in several] == [ids[1], ids[0], ids[3]]
    # Fewer than 4 characters are no prefix.
    proc = fp("show", "-o", db, ids[0][:3])
    assert proc.returncode == 4, describe(proc)


def test_ambiguous_prefix_is_refused(book, tmp_path):
    db = tmp_path / "twin.db"
    shutil.copy(book["db"], db)
    first = book["runs"][0]["id"]
    twin = first[:9] + ("0000" if first[9:13] != "0000" else "1111") + first[13:]
    con = sqlite3.connect(db)
    con.execute(
        "INSERT INTO runs(id, name, command, started_at_ns, status, meta) "
        "VALUES (?, 'twin', '[\"true\"]', ?, 'ok', '{}')",
        (twin, book["runs"][0]["started_at_ns"] + 1),
    )
    con.commit()
    con.close()
    proc = fp("show", "-o", db, first[:8])
    assert proc.returncode == 2, describe(proc)
    line = single_error_line(proc)
    assert "ambiguous" in line and first in line and twin in line
    assert show(db, first)["run"]["id"] == first
    assert show(db, twin[:11])["run"]["id"] == twin


def test_description_tags_and_params_are_stored(book):
    s = show(book["db"], book["runs"][0]["id"])
    run = s["run"]
    assert run["name"] == "alpha"
    assert run["description"] == "first run, with tags"
    assert run["tags"] == {"team": "ml", "size": "small"}
    assert run["params"] == {"lr": "0.1", "epochs": "3"}
    assert s["meta"]["tags"] == run["tags"] and s["meta"]["params"] == run["params"]
    assert show(book["db"], "beta")["run"]["tags"] == {}

    proc = fp("show", "-o", book["db"], book["runs"][0]["id"])
    assert proc.returncode == 0, describe(proc)
    for text in ["alpha", book["runs"][0]["id"], "first run, with tags", "team=ml", "lr=0.1",
                 "totals", "cpu", "memory"]:
        assert text in proc.stdout, proc.stdout


def _cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()


def _mem_total_bytes():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024


def test_run_metadata_describes_where_and_what_ran(book):
    s = show(book["db"], book["runs"][0]["id"])
    run = s["run"]
    assert run["host"] == socket.gethostname()
    assert run["user"] == pwd.getpwuid(os.geteuid()).pw_name
    assert run["cwd"] == str(book["cwd"])
    assert run["command"] == [wl("burn"), "1", "0.5"]
    hw = s["meta"]["hardware"]
    assert hw["cpu_model"] == _cpu_model()
    assert hw["logical_cpus"] == os.sysconf("SC_NPROCESSORS_ONLN")
    assert hw["memory_bytes"] == _mem_total_bytes()
    assert "git" not in s["meta"]  # --no-git
    assert book["before"] <= run["started_at_ns"] <= book["after"]
    assert (run["ended_at_ns"] - run["started_at_ns"]) / 1e9 == pytest.approx(
        run["duration_s"], abs=1e-3
    )


def test_totals_are_consistent(book, cgroup_cpu):
    s = show(book["db"], book["runs"][0]["id"])
    t, acc = s["totals"], s["meta"]["accounting"]
    # fp_burn 1 0.5 keeps one thread busy for 0.5 s of wall time.
    assert 0.5 <= t["duration_s"] <= book["wall"]
    # ... and at least the workload's own life since exec, as it measured it (to 0.1 ms).
    assert t["duration_s"] >= book["alive_s"] - 1e-4, (t, book["alive_s"])
    assert s["run"]["duration_s"] == t["duration_s"]
    assert 0.4 <= cpu_total(s) <= t["duration_s"] * 1.05
    rusage = acc["rusage_user_s"] + acc["rusage_system_s"]
    if cgroup_cpu:
        cgroup = acc["cgroup_user_s"] + acc["cgroup_system_s"]
        assert cgroup == pytest.approx(rusage, rel=0.03), acc
        # The cgroup's exact total, split in the proportions of the per-process rusage.
        assert cpu_total(s) == pytest.approx(cgroup)
        assert t["cpu_user_s"] / cpu_total(s) == pytest.approx(acc["rusage_user_s"] / rusage)
    else:
        assert t["cpu_user_s"] == pytest.approx(acc["rusage_user_s"])
    assert t["peak_memory_bytes"] >= t["max_process_peak_bytes"] > 0
    # footprint's own cost, in seconds and bytes (not ms or KiB).
    assert 0 < t["monitor_cpu_s"] < t["duration_s"]
    assert 1 << 20 < t["monitor_peak_rss_bytes"] < 256 << 20
    assert t["io_read_bytes"] >= 0 and t["io_write_bytes"] >= 0
    # Unknown is null, never 0.
    assert t["gpu_energy_j"] is None and t["cpu_energy_j"] is None
    for key in ("cpu", "peak_memory", "io"):
        assert s["meta"]["sources"][key], s["meta"]["sources"]


def test_metric_statistics_match_the_raw_samples(book):
    run_id = book["runs"][0]["id"]
    s = show(book["db"], run_id)
    found = {m["metric"]: (m["unit"], m["entity"]) for m in s["metrics"]}
    assert len(found) == len(s["metrics"])  # one series per metric for a plain run
    assert {k: found.get(k) for k in METRICS} == METRICS
    # 0.5 s at 20 ms; a costly source may be read less often (docs/metrics.md: under a slow
    # build, the per-process files), but at least every 100 ms.
    missed = s["meta"]["monitor"]["sampler"]["missed_deadlines"]
    fewest = s["totals"]["duration_s"] / 0.1 - missed
    for m in s["metrics"]:
        assert m["scope"] is None
        rows = raw_samples(book["db"], run_id, m["metric"])
        assert len(rows) == m["count"] >= max(fewest - 1, 2), (m, s["meta"]["monitor"])
        expected = stats([v for _, v in rows])
        for key, value in expected.items():
            assert m[key] == pytest.approx(value, rel=1e-9, abs=1e-9), (m["metric"], key)
    assert metric(s, "threads")["max"] == 2  # main thread + one burner
    # The machine is busy at least as much as the tree (/proc/stat ticks are coarser). Each
    # sample is a rate since the one before: over the run, each counts for its interval (the
    # last pass, at the command's end, may follow the one before by a millisecond, and a tick
    # counted in so short an interval reads as hundreds of %).
    def busy(name):
        rows = raw_samples(book["db"], run_id, name)
        return sum(v * (t - prev) for (prev, _), (t, v) in zip([(0, 0)] + rows, rows)) / rows[-1][0]
    assert busy("sys.cpu") >= 0.8 * busy("cpu")
    assert s["scopes"] == [] and s["values"] == []


def test_per_metric_interval_overrides_the_default(tmp_path):
    db = tmp_path / "iv.db"
    run_ok(db, ["sleep", "2"], "--interval", "memory=10ms", "-i", "100ms", "--no-git")
    s = show(db)
    iv = s["meta"]["intervals_ns"]
    assert iv["memory"] == 10_000_000
    assert all(ns == 100_000_000 for name, ns in iv.items() if name != "memory"), iv
    run_id = s["run"]["id"]
    mem = [t for t, _ in raw_samples(db, run_id, "memory")]
    cpu = [t for t, _ in raw_samples(db, run_id, "cpu")]
    duration = s["totals"]["duration_s"]
    # Every 10 ms deadline is a memory sample or one the sampler counted as missed (a busy
    # machine delays some passes); cpu has one deadline in ten.
    missed = s["meta"]["monitor"]["sampler"]["missed_deadlines"]
    assert len(mem) + missed >= 0.95 * duration / 0.010 - 2, (len(mem), missed, duration)
    assert 8 <= (len(mem) + missed) / len(cpu) <= 12.5, (len(mem), missed, len(cpu))
    # Absolute deadlines: the typical step is the interval itself.
    steps = lambda ts: sorted(b - a for a, b in zip(ts, ts[1:]))
    assert steps(mem)[len(mem) // 2] == pytest.approx(10e6, abs=1e6)
    assert steps(cpu)[len(cpu) // 2] == pytest.approx(100e6, abs=1e6)


def test_metric_selection_limits_the_series(tmp_path):
    db = tmp_path / "sel.db"
    run_ok(db, ["sleep", "0.3"], "-m", "cpu, memory", "-i", "20ms", "--no-git")
    s = show(db)
    assert sorted(m["metric"] for m in s["metrics"]) == ["cpu", "memory"]
    assert sorted(s["meta"]["intervals_ns"]) == ["cpu", "memory"]


def test_show_names_a_series_sampled_below_the_asked_rate(tmp_path, cgroup_cpu):
    """At 1 ms a cgroup's per-process reads (threads, processes) are spaced out by their cost:
    the run records each metric's achieved interval and `show` says which fell behind, why."""
    if not cgroup_cpu:
        pytest.skip("no cgroup here: every pass walks the tree")
    db = tmp_path / "rate.db"
    run_ok(db, [wl("spawn_tree"), 1, 20, 0.6], "-i", "1ms", "--cpu-sampler", "timer", "--no-git")
    s = show(db)
    achieved = s["meta"]["achieved_intervals_ns"]
    assert achieved["processes"] > 1.25e6, achieved
    assert "spaced out" in s["meta"]["below_asked_rate"]["processes"], s["meta"]
    text = fp("show", "-o", db).stdout
    line = next(l for l in text.splitlines() if "below rate" in l and "processes" in l)
    assert "asked 1.00 ms" in line and "spaced out" in line, line

    # The default 100 ms: every series keeps up. Over 2 s, so that one pass made late (once
    # under ASan, in 0.5 s of 5 passes) does not set a series' mean gap on its own.
    run_ok(db, ["sleep", "2"], "--no-git")
    s = show(db)
    assert "below_asked_rate" not in s["meta"], s["meta"]
    assert set(s["meta"]["achieved_intervals_ns"]) >= {"cpu", "memory"}, s["meta"]
    assert "below rate" not in fp("show", "-o", db).stdout


def _git(repo, *args):
    return subprocess.run(
        ["git", "-C", repo, "-c", "user.name=fp", "-c", "user.email=fp@example.com", *args],
        check=True, capture_output=True, text=True,
    ).stdout.strip()


def test_git_commit_and_dirty_flag_are_recorded(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    _git(repo, "init", "-q")
    (repo / "data.txt").write_text("one\n")
    _git(repo, "add", "data.txt")
    _git(repo, "commit", "-q", "-m", "first")
    head = _git(repo, "rev-parse", "HEAD")
    branch = _git(repo, "rev-parse", "--abbrev-ref", "HEAD")
    db = tmp_path / "git.db"

    run_ok(db, ["true"], cwd=repo)
    git = show(db)["meta"]["git"]
    assert git["commit"] == head and git["dirty"] is False and git["branch"] == branch

    (repo / "untracked.txt").write_text("x")  # not part of the commit's content
    run_ok(db, ["true"], cwd=repo / "sub")
    git = show(db)["meta"]["git"]
    assert git["commit"] == head and git["dirty"] is False

    (repo / "data.txt").write_text("two\n")
    run_ok(db, ["true"], cwd=repo)
    git = show(db)["meta"]["git"]
    assert git["commit"] == head and git["dirty"] is True

    run_ok(db, ["true"], "--no-git", cwd=repo)
    assert "git" not in show(db)["meta"]

    plain = tmp_path / "plain"
    plain.mkdir()
    run_ok(db, ["true"], cwd=plain)
    assert "git" not in show(db)["meta"]


def test_arguments_and_names_that_are_not_utf8(tmp_path):
    # A Latin-1 file name is a valid argument and a valid run name: nothing may stop on it.
    db = tmp_path / "fp.db"
    latin1 = "caf\udce9"  # b"caf\xe9" once encoded (surrogateescape)
    proc = fp("run", "-o", db, "-q", "--no-git", "-n", latin1, "--", "true", latin1)
    assert proc.returncode == 0, describe(proc)
    s = show(db)
    assert s["run"]["name"] == "caf\ufffd" and s["run"]["command"] == ["true", "caf\ufffd"]
    # The text view shows the byte that is not UTF-8 as an escape (it could be half of a
    # terminal's control sequence).
    text = subprocess.run([fp_helpers.FOOTPRINT, "show", "-o", str(db)], capture_output=True,
                          env=fp_helpers.clean_env())
    assert text.returncode == 0 and b"caf\\xe9" in text.stdout
    assert fp("runs", "-o", db, "--json").returncode == 0
    export = fp("export", "-o", db, "--format", "json", "--out", "-")
    assert export.returncode == 0 and "caf" in export.stdout, describe(export)
    page = tmp_path / "page.html"
    assert fp("plot", "-o", db, "--no-menu", "--out", page).returncode == 0


def test_runs_prints_commands_a_shell_reads_back_and_names_scripts(tmp_path):
    """`runs` quotes each command so that a POSIX shell (shlex, and sh itself) reads back the
    very argv that ran; a script run by an interpreter is named after the script."""
    db = tmp_path / "q.db"
    script = tmp_path / "train.py"
    script.write_text("import sys\n")
    argv = ["/usr/bin/python3", str(script), "it's", 'a "b" $HOME `x`', "", "*.txt;|&", "plain-1.0"]
    run_ok(db, argv, "--no-git")
    proc = fp("runs", "-o", db)
    assert proc.returncode == 0, describe(proc)
    header, line = proc.stdout.splitlines()
    assert line.split()[1] == "train.py", line
    printed = line[header.index("COMMAND"):]
    assert shlex.split(printed) == argv, printed
    echoed = subprocess.run(["sh", "-c", "printf '%s\\n' " + printed.split(" ", 1)[1]],
                            capture_output=True, text=True, check=True).stdout
    assert echoed.split("\n")[:-1] == argv[1:], echoed
