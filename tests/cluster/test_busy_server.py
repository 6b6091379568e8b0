"""Runs into a PostgreSQL server that is full or away when they start (docs/cluster.md, "Many
runs, few connections"): every run starts, its samples wait in its local buffer, and each
shipment holds a connection only while it sends, so that many more runs than the server has
connection slots store everything."""
import json
import os
import subprocess
import time

from fp_helpers import FOOTPRINT, clean_env, describe
from test_postgres import database_of


def stored_runs(postgres, db):
    """{run id: (status, meta, samples on the server)} of every run in DB."""
    counted = dict(postgres.sql(
        "SELECT s.run_id, sum(c.n) FROM sample_chunks c JOIN series s ON s.id = c.series_id "
        "GROUP BY 1", db))
    return {run: (status, json.loads(meta), int(counted.get(run, 0)))
            for run, status, meta in postgres.sql("SELECT id, status, meta FROM runs", db)}


def assert_everything_stored(postgres, db, runs):
    """Each run ended ok, and the server holds every sample its sampler took, none dropped."""
    for run, (status, meta, counted) in runs.items():
        monitor = meta["monitor"]
        assert status == "ok" and monitor["samples_dropped"] == 0, (run, status, monitor)
        assert counted == monitor["sampler"]["samples"] == monitor["writer"]["samples_written"], \
            (run, counted, monitor)


def hold_connections(postgres, db, count):
    """COUNT sessions that keep a connection slot each (other programs' clients)."""
    holders = [subprocess.Popen(["psql", "-X", "-h", postgres.root, "-U", "postgres", "-d", db,
                                 "-c", "SELECT pg_sleep(600)"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
               for _ in range(count)]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        [[n]] = postgres.sql("SELECT count(*) FROM pg_stat_activity WHERE query LIKE "
                             "'SELECT pg_sleep(600)%'", db)
        if int(n) == count:
            return holders
        time.sleep(0.05)
    raise AssertionError(f"only {n} of {count} sessions connected")


def test_64_runs_share_a_server_of_20_connections(postgres, pg_uri, tmp_path):
    """64 concurrent runs, a server of 20 connection slots of which other clients hold 12: none
    is refused, every sample arrives, and the server did refuse connections meanwhile (the
    runs backed off and came back)."""
    db = database_of(pg_uri)
    env = clean_env(FOOTPRINT_BUFFER_DIR=tmp_path / "buffers")
    postgres.stop()
    postgres.start(max_connections=20, superuser_reserved_connections=0)
    holders = []
    try:
        holders = hold_connections(postgres, db, 12)
        with open(postgres.log) as log:
            log.seek(0, os.SEEK_END)
            refusals_before = log.tell()
        runs = [subprocess.Popen([FOOTPRINT, "run", "-o", pg_uri, "-q", "-i", "50ms", "--",
                                  "sleep", "3"], env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True) for _ in range(64)]
        ended = [(run, *run.communicate(timeout=180)) for run in runs]
        refused = [err for run, _, err in ended if run.returncode != 0]
        assert refused == [], f"{len(refused)} of 64 runs failed, the first: {refused[0]}"
        with open(postgres.log) as log:
            log.seek(refusals_before)
            assert "too many clients" in log.read(), "the server never ran out of slots"
    finally:
        for holder in holders:
            holder.kill()
            holder.wait()
        postgres.stop()
        postgres.start()
    stored = stored_runs(postgres, db)
    assert len(stored) == 64
    assert_everything_stored(postgres, db, stored)
    assert os.listdir(tmp_path / "buffers") == []


def test_a_server_down_at_the_start_gets_the_run_from_its_first_sample(postgres, pg_uri, tmp_path):
    """The server is down when the run starts and comes up 10 s later: the command starts at
    once, and the server gets every sample from the first."""
    db = database_of(pg_uri)
    env = clean_env(FOOTPRINT_BUFFER_DIR=tmp_path / "buffers")
    postgres.stop()
    try:
        started = time.time()
        run = subprocess.Popen([FOOTPRINT, "run", "-o", pg_uri, "-i", "20ms", "--", "sh", "-c",
                                f"date +%s.%N > {tmp_path / 'began'}; sleep 12"], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(10)
        assert run.poll() is None, describe(run)
    finally:
        postgres.start()
    out, err = run.communicate(timeout=120)
    assert run.returncode == 0, f"{out}\n{err}"
    began = float((tmp_path / "began").read_text())
    assert began - started < 5, "the command waited for the server"
    assert "cannot connect to" in err and "the run goes on" in err, err
    assert "the server answers again" in err, err
    [(run_id, (status, meta, counted))] = stored_runs(postgres, db).items()
    assert_everything_stored(postgres, db, {run_id: (status, meta, counted)})
    # Samples from the run's start on (times count from it), and the command started with the
    # run: nothing before the server came up was left out.
    [[first, run_start]] = postgres.sql(
        "SELECT min(c.t_first), r.started_at_ns FROM sample_chunks c JOIN series s "
        "ON s.id = c.series_id JOIN runs r ON r.id = s.run_id GROUP BY r.started_at_ns", db)
    assert int(first) < 0.5e9 and abs(began - int(run_start) / 1e9) < 1, \
        (first, run_start, began)
