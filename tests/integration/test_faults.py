"""Faults: footprint killed with SIGKILL mid-run, and many footprints writing one database."""
import os
import signal
import subprocess
import time

from fp_helpers import (
    FOOTPRINT,
    TIMEOUT_S,
    cgroup_dirs,
    clean_env,
    connect,
    kill_group,
    metric,
    pid_alive,
    run_ok,
    runs_json,
    show,
    wait_for,
    wl,
)


def _children(pid):
    kids = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/children") as f:
            kids += [int(p) for p in f.read().split()]
    return kids


def test_sigkill_of_footprint_leaves_a_valid_interrupted_run(tmp_path):
    db = tmp_path / "kill.db"
    # A session of its own, so that the command orphaned by the kill can be found and ended.
    proc = subprocess.Popen(
        [FOOTPRINT, "run", "-o", db, "-q", "--no-git", "-i", "20ms", "--",
         wl("exit_with"), "wait"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_env(),
        start_new_session=True,
    )
    run_id, workload = None, []
    try:
        assert proc.stdout.readline() == "ready\n"
        workload = _children(proc.pid)
        assert len(workload) == 1, workload
        time.sleep(1.5)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=TIMEOUT_S)
        assert proc.returncode == -signal.SIGKILL
        assert pid_alive(workload[0]), "the command died with footprint"
    finally:
        kill_group(proc.pid)
        proc.kill()
        proc.communicate()
    wait_for(lambda: not any(map(pid_alive, workload)), 10, "the orphaned command to end")

    try:
        # The database is valid as it was left.
        with connect(db) as con:
            assert con.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
            (run_id, status), = con.execute("SELECT id, status FROM runs").fetchall()
        con.close()
        assert status == "running"  # nobody could say otherwise yet

        s = show(db, "last")
        assert s["run"]["id"] == run_id
        assert s["run"]["status"] == "interrupted"
        assert s["run"]["exit_code"] is None
        assert s["run"]["duration_s"] > 1.0
        assert s["run"]["ended_at_ns"] > s["run"]["started_at_ns"] + 1e9
        # Everything up to the last flush (footprint flushes at least every second).
        assert metric(s, "cpu")["count"] > 10
        assert metric(s, "memory")["count"] > 10
        # show stored the verdict, and the database still takes new runs.
        (r,) = runs_json(db)
        assert r["status"] == "interrupted"
        run_ok(db, ["true"], "--no-git")
        assert [r["status"] for r in runs_json(db)] == ["interrupted", "ok"]
        with connect(db) as con:
            assert con.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        con.close()
    finally:
        # footprint could not remove the run's cgroup: do it for the next tests.
        if run_id:
            for d in cgroup_dirs("footprint-" + run_id):
                try:
                    os.rmdir(d)
                except OSError:
                    pass


def test_eight_concurrent_runs_share_one_database(tmp_path):
    db = tmp_path / "shared.db"
    interval_s = 0.02
    procs = [
        subprocess.Popen(
            [FOOTPRINT, "run", "-o", db, "-q", "--no-git", "-n", f"c{i}", "-i", "20ms", "--",
             "sleep", "1"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=clean_env(),
        )
        for i in range(8)
    ]
    outputs = [p.communicate(timeout=TIMEOUT_S) for p in procs]
    for p, (out, err) in zip(procs, outputs):
        assert p.returncode == 0, err
        assert err == "", err  # -q: no warning (dropped samples, failed writes) either

    runs = runs_json(db)
    assert sorted(r["name"] for r in runs) == [f"c{i}" for i in range(8)]
    assert all(r["status"] == "ok" and r["exit_code"] == 0 for r in runs), runs

    for r in runs:
        s = show(db, r["id"])
        mon = s["meta"]["monitor"]
        assert mon["samples_dropped"] == 0, mon
        assert mon["writer"]["failed_flushes"] == 0, mon
        passes = mon["sampler"]["passes"]
        duration = s["totals"]["duration_s"]
        assert 1.0 <= duration < 3.0
        # Deadlines t0 + k * 20 ms up to the end, plus one last pass at the end: the sampler
        # kept up with them (8 monitors on 2 cores may be late now and then).
        deadlines = duration / interval_s + 1
        assert 0.8 * deadlines <= passes - 1 <= deadlines + 1, (passes, mon, duration)
        # One sample per pass; a rate has none at the first pass (its baseline).
        assert metric(s, "memory")["count"] == passes
        assert metric(s, "processes")["count"] == passes
        assert metric(s, "cpu")["count"] == passes - 1
        # Every sample taken is in the database.
        with connect(db) as con:
            (stored,) = con.execute(
                "SELECT count(*) FROM samples WHERE series_id IN "
                "(SELECT id FROM series WHERE run_id = ?)",
                (r["id"],),
            ).fetchone()
        con.close()
        assert stored == mon["writer"]["samples_written"] == sum(
            m["count"] for m in s["metrics"]
        )


def test_live_run_shows_as_running_with_its_samples_so_far(tmp_path):
    """Reading a database while footprint writes it: the run is 'running' (not mistaken for
    an interrupted one), its samples flushed so far are there, and it ends normally."""
    db = tmp_path / "live.db"
    proc = subprocess.Popen(
        [FOOTPRINT, "run", "-o", db, "-q", "--no-git", "-i", "20ms", "--",
         wl("exit_with"), "wait"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_env(),
    )
    try:
        assert proc.stdout.readline() == "ready\n"
        time.sleep(1.0)
        s = show(db, "last")
        assert s["run"]["status"] == "running"
        assert s["run"]["exit_code"] is None
        assert s["run"]["duration_s"] > 0.4
        # Flushed at least every second (every 500 ms by default).
        assert metric(s, "memory")["count"] >= 10
        assert runs_json(db)[0]["status"] == "running"
        os.kill(proc.pid, signal.SIGTERM)
        proc.communicate(timeout=TIMEOUT_S)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 42
    s = show(db, "last")
    assert s["run"]["status"] == "failed" and s["run"]["exit_code"] == 42
    assert s["run"]["duration_s"] > 1.0
