"""footprint export: CSV, JSON and Chrome Trace Event output of real runs, checked against the
database (the exact formats are pinned by the golden files of tests/unit/export_test.cc)."""
import csv
import io
import json
import re

import pytest

from fp_helpers import connect, describe, fp, run_ok, runs_json, single_error_line, wl


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
