"""Commands that only read leave the database file and its folder exactly as they found them:
a foreign SQLite file (UMLAUT's schema, in rollback-journal or WAL mode) byte-identical and
refused, footprint's own database byte-identical and read, and no -wal/-shm/-journal left."""
import hashlib
import os
import sqlite3
import subprocess
import time

import pytest

from fp_helpers import (FOOTPRINT, clean_env, describe, fp, kill_group, remove_run_cgroups,
                        run_ok, runs_json, wait_for, wl)

# What users point footprint at by mistake or on purpose: UMLAUT's database, as UMLAUT creates it.
UMLAUT_SCHEMA = [
    "CREATE TABLE benchmark_metadata (uuid TEXT PRIMARY KEY, description TEXT, "
    "start_time DATETIME)",
    "CREATE TABLE measurement (id INTEGER PRIMARY KEY, benchmark_uuid TEXT, datetime DATETIME, "
    "description TEXT, measurement_type TEXT, value TEXT, unit TEXT)",
    "INSERT INTO benchmark_metadata VALUES ('6c5e', 'bloat memory', '2026-11-25 10:00:00')",
    "INSERT INTO measurement VALUES (1, '6c5e', '2026-11-25 10:00:01', 'bloat', 'memory', "
    "'\"{\\\"timestamps\\\": [0], \\\"measurements\\\": [12.5]}\"', 'MiB')",
]


def make_umlaut_database(db, journal):
    """UMLAUT's database at `db`, in SQLite's `journal` mode."""
    with sqlite3.connect(db) as conn:
        conn.execute(f"PRAGMA journal_mode={journal}")
        for statement in UMLAUT_SCHEMA:
            conn.execute(statement)
    conn.close()


def snapshot(folder):
    """Every file of `folder` with the SHA-256 of its bytes and its modification time."""
    files = {}
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        with open(path, "rb") as f:
            files[name] = (hashlib.sha256(f.read()).hexdigest(), os.stat(path).st_mtime_ns)
    return files


def reading_commands(db, out):
    """Every command that reads the database, and `experiment --dry-run`."""
    plan = os.path.join(out, "plan.csv")
    with open(plan, "w") as f:
        f.write("Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params\n"
                "e,w,,,,-,true,,\n")
    return [
        ["runs", "-o", db],
        ["runs", "-o", db, "--json"],
        ["show", "-o", db],
        ["show", "-o", db, "--json", "last"],
        ["compare", "-o", db, "a", "b"],
        ["export", "-o", db, "-u", "last", "--format", "csv", "--out",
         os.path.join(out, "x.csv")],
        ["plot", "-o", db, "-u", "last", "--no-menu", "--out", os.path.join(out, "x.html")],
        ["experiment", "-o", db, plan, "--dry-run"],
    ]


@pytest.mark.parametrize("journal", ["delete", "wal"])
def test_a_foreign_database_is_refused_and_left_byte_identical(tmp_path, journal):
    folder, out = tmp_path / "data", tmp_path / "out"
    folder.mkdir()
    out.mkdir()
    db = str(folder / "umlaut.db")
    make_umlaut_database(db, journal)
    before = snapshot(folder)
    assert list(before) == ["umlaut.db"]
    for command in reading_commands(db, str(out)):
        proc = fp(*command)
        assert proc.returncode == 3, describe(proc)  # 3: a database error
        assert "not a footprint one" in proc.stderr, describe(proc)
        assert snapshot(folder) == before, f"{command} changed {folder}"


def test_footprints_own_database_is_read_and_left_byte_identical(tmp_path):
    folder, out = tmp_path / "data", tmp_path / "out"
    folder.mkdir()
    out.mkdir()
    db = str(folder / "fp.db")
    for name in ("a", "b"):
        run_ok(db, [wl("burn"), "1", "0.05"], "--no-git", "-i", "10ms", "-n", name)
    before = snapshot(folder)
    assert list(before) == ["fp.db"], "the writer left files behind"
    for command in reading_commands(db, str(out)):
        proc = fp(*command)
        assert proc.returncode == 0, describe(proc)
        assert snapshot(folder) == before, f"{command} changed {folder}"


def writing_commands(db):
    """Commands that write runs, each pointed at `db`."""
    return [
        ["run", "-o", db, "--no-git", "--", "true"],
        ["run", "-o", db, "--no-git", "-r", "2", "--", "true"],
    ]


@pytest.mark.parametrize("journal", ["delete", "wal"])
def test_writing_to_a_foreign_database_is_refused_before_anything_changes(tmp_path, journal):
    """No journal-mode switch, no -wal/-shm, not a byte changed: the file is checked before it
    is opened for writing (tests/python/test_umlaut.py: the same through UMLAUT's API)."""
    folder = tmp_path / "data"
    folder.mkdir()
    db = str(folder / "hello_world.db")
    make_umlaut_database(db, journal)
    before = snapshot(folder)
    for command in writing_commands(db):
        proc = fp(*command)
        assert proc.returncode == 125, describe(proc)  # 125: footprint failed, nothing ran
        assert "not a footprint one" in proc.stderr, describe(proc)
        assert snapshot(folder) == before, f"{command} changed {folder}"


def test_reading_after_a_killed_writer_leaves_the_database_byte_identical(tmp_path):
    """A writer killed mid-run leaves frames in its -wal: readers read them without moving them
    into the database file (which only a writer may do)."""
    folder, out = tmp_path / "data", tmp_path / "out"
    folder.mkdir()
    out.mkdir()
    db = str(folder / "fp.db")
    run_ok(db, ["true"], "--no-git", "-n", "a")
    proc = subprocess.Popen(
        [FOOTPRINT, "run", "-o", db, "-q", "--no-git", "-i", "10ms", "-n", "b", "--",
         "sleep", "30"], env=clean_env(), start_new_session=True)
    try:
        wait_for(lambda: os.path.exists(db + "-wal") and os.path.getsize(db + "-wal") > 4096,
                 20, "the run to write its first samples")
        time.sleep(1.2)  # past a flush
    finally:
        kill_group(proc.pid)
        proc.wait()
        for r in runs_json(db):
            remove_run_cgroups(r["id"])
    before = snapshot(folder)
    assert os.path.getsize(db + "-wal") > 0, "no frames left to test with"
    for command in reading_commands(db, str(out)):
        result = fp(*command)
        assert result.returncode == 0, describe(result)
        after = snapshot(folder)
        for name in ("fp.db", "fp.db-wal"):
            assert after[name] == before[name], f"{command} changed {name}"
        assert sorted(after) == sorted(before), f"{command} left files in {folder}"
    assert [r["name"] for r in runs_json(db)] == ["a", "b"]
