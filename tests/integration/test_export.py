"""footprint export: CSV, JSON and Chrome Trace Event output of real runs, checked against the
database (the exact formats are pinned by the golden files of tests/unit/export_test.cc)."""
import csv
import io
import json
import os
import re
import sqlite3
import subprocess
import time

import numpy as np
import pytest

from fp_helpers import (
    HIGH_PRIORITY,
    clean_env,
    connect,
    describe,
    fp,
    on_pty,
    run_ok,
    runs_json,
    single_error_line,
    wl,
)


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    folder = tmp_path_factory.mktemp("export")
    db = folder / "fp.db"
    run_ok(db, [wl("burn"), 1, 0.3], "-i", "20ms", "--no-git")
    run_ok(db, ["true"], "-r", 2, "--warmup", 1, "--no-git")
    return {"db": db, "folder": folder, "runs": runs_json(db)}


def samples_in_db(db, run_id):
    with connect(db) as con:
        rows = con.execute(
            "SELECT r.metric, r.entity, s.t_ns, s.value FROM samples s JOIN series r "
            "ON r.id = s.series_id WHERE r.run_id = ? ORDER BY r.id, s.t_ns", (run_id,)).fetchall()
    con.close()
    return rows


def export(db, *args):
    proc = fp("export", "-o", db, *args, "--out", "-")
    assert proc.returncode == 0, describe(proc)
    return proc.stdout


def test_csv_holds_every_sample_and_total(book):
    run = book["runs"][0]
    rows = list(csv.DictReader(io.StringIO(export(book["db"], "-u", run["id"], "--format", "csv"))))
    assert set(rows[0]) == {"run_id", "kind", "name", "unit", "entity", "scope_id", "parent_id",
                            "step", "t_ns", "end_ns", "value", "data"}
    assert {r["run_id"] for r in rows} == {run["id"]}
    samples = [(r["name"], r["entity"], int(r["t_ns"]), float(r["value"]))
               for r in rows if r["kind"] == "sample"]
    assert samples == samples_in_db(book["db"], run["id"])
    totals = {r["name"]: float(r["value"]) for r in rows if r["kind"] == "total"}
    with connect(book["db"]) as con:
        expected = dict(con.execute("SELECT name, value FROM run_totals WHERE run_id = ?",
                                    (run["id"],)).fetchall())
    con.close()
    assert totals == expected


def test_json_and_file_output(book):
    out = book["folder"] / "all.json"
    proc = fp("export", "-o", book["db"], "-u", "group:last", "-u", book["runs"][0]["id"][:8],
              "--format", "json", "--out", out)
    assert proc.returncode == 0, describe(proc)
    # One line says what was written (on standard output, the data alone).
    size = out.stat().st_size
    m = re.fullmatch(r"wrote (.+): 4 run\(s\) as json, ([\d.]+) (B|KiB|MiB)\n", proc.stdout)
    assert m and m[1] == str(out), proc.stdout
    assert float(m[2]) * {"B": 1, "KiB": 1024, "MiB": 1 << 20}[m[3]] == pytest.approx(size, rel=0.01)
    doc = json.loads(out.read_text())
    assert doc["format"] == "footprint-export" and doc["version"] == 1
    # A group exports all of its runs, warm-ups included, then the run asked for.
    ids = [r["run"]["id"] for r in doc["runs"]]
    assert ids == [r["id"] for r in book["runs"][1:]] + [book["runs"][0]["id"]]
    assert [r["run"]["repetition"] for r in doc["runs"][:3]] == [-1, 1, 2]
    burn = doc["runs"][3]
    exported = [(s["metric"], s["entity"], t, v) for s in burn["series"] for t, v in s["samples"]]
    assert exported == samples_in_db(book["db"], book["runs"][0]["id"])
    assert burn["totals"]["duration_s"] > 0.3 and burn["run"]["meta"]["sources"]


def test_trace_opens_as_chrome_trace_events(book):
    run = book["runs"][0]
    doc = json.loads(export(book["db"], "-u", run["id"], "--format", "trace"))
    events = doc["traceEvents"]
    assert {e["ph"] for e in events} == {"M", "C"}
    names = {e["name"]: e["args"] for e in events if e["ph"] == "M"}
    assert names["process_name"]["name"] == f"fp_burn {run['id'][:8]}"
    counters = [e for e in events if e["ph"] == "C"]
    assert len(counters) == len(samples_in_db(book["db"], run["id"]))
    cpu = [e for e in counters if e["name"] == "cpu [%]"]
    assert cpu and all(set(e["args"]) == {"tree"} and e["pid"] == 1 for e in cpu)
    ts = [e["ts"] for e in cpu]
    assert ts == sorted(ts) and ts[-1] < 1e6 * 1.5  # µs since the run's start


@pytest.mark.parametrize("args, code", [
    (["--format", "xml", "--out", "-"], 2),
    (["--format", "csv"], 2),                              # --out is required
    (["-u", "nosuchrun", "--format", "csv", "--out", "-"], 4),
    (["--format", "csv", "--out", "/nonexistent-folder/x.csv"], 1),
])
def test_export_errors(book, args, code):
    proc = fp("export", "-o", book["db"], *args)
    assert proc.returncode == code, describe(proc)
    single_error_line(proc)


@pytest.fixture(scope="module")
def versus_hyperfine(tmp_path_factory):
    """The same two commands measured by hyperfine (Debian's) and by footprint, one after the
    other, both at the raised priority of the suite's CPU checks (fp_burn keeps a thread busy
    for 0.1 s and 0.2 s of wall time: its CPU time is what the machine gives it, and on a busy
    machine a command at normal priority gets less)."""
    folder = tmp_path_factory.mktemp("hyperfine")
    db = folder / "fp.db"
    commands = [[wl("burn"), "1", "0.1"], [wl("burn"), "1", "0.2"]]
    hf = folder / "hf.json"
    proc = subprocess.run(["hyperfine", "-N", "-r", "3", "-w", "1", "--export-json", hf,
                           *(" ".join(c) for c in commands)], capture_output=True, text=True,
                          **HIGH_PRIORITY)
    assert proc.returncode == 0, proc.stderr
    own_maxrss = []  # each footprint run's own high-water mark, as the workload measured it
    for n, command in zip(["short", "long"], commands):
        truth = folder / n
        truth.mkdir()
        run_ok(db, command, "-r", 3, "--warmup", 1, "-n", n, "--param", f"seconds={command[2]}",
               "--no-git", env=clean_env(FP_WORKLOAD_REPORT=truth), **HIGH_PRIORITY)
        own_maxrss.append([json.loads(f.read_text())["maxrss_bytes"] for f in truth.iterdir()])
    mine = json.loads(export(db, "-u", "short", "-u", "long", "--format", "hyperfine"))
    return {"db": db, "hyperfine": json.loads(hf.read_text())["results"],
            "footprint": mine["results"], "commands": commands, "own_maxrss": own_maxrss}


def test_hyperfine_json_has_hyperfines_fields_and_types(versus_hyperfine):
    theirs, mine = versus_hyperfine["hyperfine"], versus_hyperfine["footprint"]
    assert len(mine) == len(theirs) == 2
    for t, m, command, own_maxrss in zip(theirs, mine, versus_hyperfine["commands"],
                                         versus_hyperfine["own_maxrss"]):
        # Every field hyperfine writes, of the same JSON type; beyond them only the one newer
        # hyperfines add (memory_usage_byte) and `parameters`, which hyperfine writes for -P/-L.
        assert set(t) <= set(m), (t.keys(), m.keys())
        assert set(m) - set(t) <= {"memory_usage_byte", "parameters"}, m.keys()
        for key in t:
            assert type(m[key]) is type(t[key]) or {type(m[key]), type(t[key])} <= {int, float}, key
        assert m["command"] == t["command"] == " ".join(command)
        assert len(m["times"]) == len(m["exit_codes"]) == len(m["memory_usage_byte"]) == 3
        assert m["exit_codes"] == [0, 0, 0]
        assert m["parameters"] == {"seconds": command[2]}
        times = np.array(m["times"])
        assert m["mean"] == pytest.approx(times.mean())
        assert m["stddev"] == pytest.approx(times.std(ddof=1))
        assert m["median"] == pytest.approx(np.median(times))
        assert (m["min"], m["max"]) == (times.min(), times.max())
        # Both measure the same wall-clock life of the same command; footprint from its gate to
        # its reaping, hyperfine from its spawn to its wait: they differ by start-up costs of a
        # few milliseconds, and a busy machine stretches each sitting differently.
        assert m["mean"] == pytest.approx(t["mean"], rel=0.25), (m, t)
        assert m["user"] + m["system"] == pytest.approx(t["user"] + t["system"], rel=0.25,
                                                        abs=0.02), (m, t)
        # memory_usage_byte is each run's largest high-water mark, as wait4 reports it to
        # hyperfine: fp_burn's own getrusage just before it writes its report (4 runs: the
        # warm-up's is not exported), plus the pages that writing the report touches (stdio,
        # and the locale printf of a double loads: /usr/bin/time -f %M says 208 KiB more with
        # the report than without; 140-320 KiB more than the report says in 6 runs). The
        # kernel's mark includes what the process held between its fork and its exec, so it
        # differs from build to build of footprint (under ASan, far more).
        for b in m["memory_usage_byte"]:
            assert any(own <= b <= own + (512 << 10) for own in own_maxrss), (b, own_maxrss)


def test_markdown_table_is_hyperfines_with_footprints_figures(versus_hyperfine):
    table = export(versus_hyperfine["db"], "-u", "short", "-u", "long", "--format", "markdown")
    lines = table.splitlines()
    assert lines[0] == ("| Run | Command | Runs | Mean [ms] | Min [ms] | Max [ms] | Relative | "
                        "User [ms] | System [ms] | Peak memory [MiB] |")
    assert lines[1] == "| :--- | :--- |" + " ---: |" * 8
    assert len(lines) == 4
    short, long = ([c.strip() for c in line.strip("|").split("|")] for line in lines[2:])
    mine = versus_hyperfine["footprint"]
    assert short[0].startswith("group ") and short[0].endswith("(short)")
    assert short[1] == f"`{mine[0]['command']}`" and short[2] == "3"
    assert short[3] == f"{mine[0]['mean'] * 1e3:.1f} ± {mine[0]['stddev'] * 1e3:.1f}"
    assert short[6] == "1.00"  # the fastest is the reference
    ratio, sd = (float(x) for x in long[6].split(" ± "))
    assert ratio == pytest.approx(mine[1]["mean"] / mine[0]["mean"], abs=0.005)
    assert 0 <= sd < ratio


def test_a_group_without_an_ok_run_is_not_exported_as_a_benchmark(tmp_path):
    db = tmp_path / "fp.db"
    run_ok(db, [wl("exit_with"), 3], "-r", 2, "--keep-going", "-n", "bad", "--no-git",
           expect_rc=3)
    proc = fp("export", "-o", db, "-u", "group:last", "--format", "hyperfine", "--out", "-")
    assert proc.returncode == 2, describe(proc)
    assert "has no run to count" in single_error_line(proc)


def test_a_long_export_shows_progress_on_a_terminal_and_a_quick_one_none(tmp_path):
    """On a terminal, an export that lasts shows a bar of the series written (from 0.5 s on,
    erased at the end, before the success line); a quick one shows none. Ground truth: the
    export's own duration, measured here."""
    db = tmp_path / "big.db"
    run_ok(db, ["true"], "-n", "big", "--no-git")
    with sqlite3.connect(db) as con:
        (run_id,) = con.execute("SELECT id FROM runs").fetchone()
        for k in range(20):  # 20 series of 250,000 samples, written by SQLite itself
            series = con.execute("INSERT INTO series(run_id, metric, unit, entity) "
                                 "VALUES (?, ?, '', '')", (run_id, f"big.{k}")).lastrowid
            con.execute("INSERT INTO samples(series_id, t_ns, value) WITH RECURSIVE c(i) AS "
                        "(SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < 249999) "
                        "SELECT ?, i * 1000000, i * 0.5 FROM c", (series,))
        (total,) = con.execute("SELECT count(*) FROM series WHERE run_id = ?",
                               (run_id,)).fetchone()
    con.close()
    for attempt in range(2):  # the second from the page cache: quicker
        start = time.monotonic()
        status, out = on_pty(["export", "-o", db, "-u", "big", "--format", "csv",
                              "--out", os.devnull])
        took = time.monotonic() - start
        assert status == 0, out
        bar = re.search(rf"\r\x1b\[Kfootprint: \[[#-]+\] \d+/{total} series", out)
        if took > 0.8:
            assert bar, (attempt, took, out[-400:])
            # Erased at the end, and the success line after it.
            assert out.split("\x1b[K")[-1].startswith("wrote /dev/null: 1 run(s) as csv"), out
        if took < 0.3:
            assert "\x1b[K" not in out, (attempt, took, out)
    small = tmp_path / "small.db"
    run_ok(small, ["true"], "--no-git")
    status, out = on_pty(["export", "-o", small, "--format", "csv", "--out", os.devnull])
    assert status == 0 and "\x1b[K" not in out, out  # done long before 0.5 s: no bar at all
