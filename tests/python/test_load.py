"""footprint.load(): DataFrames of a database, read-only, with the command line's run
selectors."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import time

import pytest

import footprint as fp


def make_runs(db):
    ids = []
    for name in ("alpha", "beta", "alpha"):
        with fp.Benchmark(db, name=name, description=f"{name} run",
                          params={"lr": 0.1}) as bm:
            with bm.scope("s"):
                time.sleep(0.01)
            bm.log("v", len(ids))
            ids.append(bm.run_id)
    return ids


def test_tables_and_columns(db):
    ids = make_runs(db)
    data = fp.load(db)
    assert list(data.keys()) == ["runs", "samples", "scopes", "values", "totals", "artifacts"]
    assert data["runs"] is data.runs
    runs = data.runs
    assert list(runs["id"]) == ids and list(runs["name"]) == ["alpha", "beta", "alpha"]
    assert list(runs.columns[:9]) == ["id", "name", "description", "status", "exit_code",
                                      "started_at", "ended_at", "duration_s", "command"]
    assert (runs["status"] == "ok").all()
    assert list(runs["params"]) == [{"lr": "0.1"}] * 3
    assert str(runs["started_at"].dt.tz) == "UTC"
    assert (runs["ended_at"] > runs["started_at"]).all()
    assert ((runs["duration_s"] > 0.01) & (runs["duration_s"] < 30)).all()
    assert isinstance(runs["meta"].iloc[0]["hardware"], dict)

    samples = data.samples
    assert list(samples.columns) == ["run_id", "metric", "unit", "entity", "scope_id", "t_ns",
                                     "t_s", "value"]
    assert set(samples["run_id"]) == set(ids)
    units = dict(zip(samples["metric"], samples["unit"]))
    assert units["memory"] == "bytes" and units["cpu"] == "%"
    assert (samples["t_s"] == samples["t_ns"] / 1e9).all()

    scopes = data.scopes
    for column in ("id", "run_id", "name", "parent_id", "parent", "depth", "thread", "start_s",
                   "end_s", "duration_s"):
        assert column in scopes.columns
    assert len(scopes) == 3 and (scopes["duration_s"] >= 0.01).all()

    values = data.values
    assert list(values.sort_values("value")["value"]) == [0.0, 1.0, 2.0]
    assert set(values["scope"].fillna("-")) == {"-"}
    totals = data.totals
    assert set(totals["run_id"]) == set(ids)
    assert {"duration_s", "cpu_user_s", "peak_memory_bytes"} <= set(totals["name"])


def test_run_selectors(db):
    ids = make_runs(db)
    assert list(fp.load(db, runs="last").runs["id"]) == [ids[2]]
    assert list(fp.load(db, runs=ids[1][:8]).runs["id"]) == [ids[1]]
    assert list(fp.load(db, runs="alpha").runs["id"]) == [ids[2]]  # the latest of that name
    both = fp.load(db, runs=[ids[0], "beta"])
    assert list(both.runs["id"]) == [ids[0], ids[1]]
    assert set(both.scopes["run_id"]) == {ids[0], ids[1]}
    assert set(both.values["run_id"]) == {ids[0], ids[1]}
    assert set(both.samples["run_id"]) == {ids[0], ids[1]}
    with pytest.raises(fp.FootprintError) as e:
        fp.load(db, runs="gamma")
    assert e.value.code == "not_found"


def test_load_is_read_only_and_rejects_other_files(db, tmp_path):
    make_runs(db)
    for suffix in ("-wal", "-shm"):
        with pytest.raises(FileNotFoundError):
            os.stat(str(db) + suffix)  # everything checkpointed on close
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    fp.load(db)
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    assert not os.path.exists(str(db) + "-wal") and not os.path.exists(str(db) + "-shm")
    os.chmod(db, 0o444)
    os.chmod(tmp_path, 0o555)
    try:
        assert len(fp.load(db).runs) == 3  # a read-only file in a read-only directory
    finally:
        os.chmod(tmp_path, 0o755)
        os.chmod(db, 0o644)

    with pytest.raises(fp.FootprintError) as e:
        fp.load(tmp_path / "missing.db")
    assert e.value.code == "database"
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE t(x)")
    foreign = other.read_bytes()
    with pytest.raises(fp.FootprintError, match="other.db") as e:
        fp.load(other)
    assert e.value.code == "database"
    assert other.read_bytes() == foreign and not os.path.exists(str(other) + "-journal")


def test_load_while_a_run_is_being_written(db):
    bm = fp.Benchmark(db, flush_interval=0.02)
    with bm.scope("open"):
        bm.log("partial", 1.0)
        deadline = time.monotonic() + 30  # flushed every 20 ms, however busy the machine
        data = fp.load(db)
        while (len(data.values), len(data.scopes)) != (1, 1) and time.monotonic() < deadline:
            time.sleep(0.01)
            data = fp.load(db)
        assert list(data.runs["status"]) == ["running"]  # alive: this process
        assert data.runs["ended_at"].isna().all()
        assert list(data.values["name"]) == ["partial"]
        assert data.scopes["end_s"].isna().all()
    bm.close()
    assert list(fp.load(db).runs["status"]) == ["ok"]
