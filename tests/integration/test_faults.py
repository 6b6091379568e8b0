"""Faults: footprint killed with SIGKILL mid-run, many footprints writing one database, the
database deleted, replaced or made read-only under a run, read-only media, and arguments out
of range."""
import contextlib
import os
import re
import signal
import sqlite3
import subprocess
import time

import pytest

from fp_helpers import (
    FOOTPRINT,
    TIMEOUT_S,
    clean_env,
    connect,
    describe,
    fp,
    kill_group,
    metric,
    pid_alive,
    plot_data,
    remove_run_cgroups,
    run_ok,
    runs_json,
    show,
    single_error_line,
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
    # A session of its own, so that the command orphaned by the kill can be found and ended;
    # --keep-running, so that it is orphaned (test_orphans.py: by default it dies too).
    proc = subprocess.Popen(
        [FOOTPRINT, "run", "-o", db, "-q", "--no-git", "--keep-running", "-i", "20ms", "--",
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
            remove_run_cgroups(run_id)


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
        # Deadlines t0 + k * 20 ms up to the end, plus one last pass at the end. Every deadline
        # is a pass or a missed deadline, in the sampler's own count (8 monitors on 2 cores,
        # beside whatever else the machine runs, miss some); most are passes.
        deadlines = duration / interval_s + 1
        missed = mon["sampler"]["missed_deadlines"]
        assert deadlines - 2 <= passes - 1 + missed <= deadlines + 1, (passes, mon, duration)
        assert passes - 1 >= deadlines / 4, (passes, mon, duration)
        # cpu (the cgroup's cpu.stat) at every pass; a rate has none at the first pass (its
        # baseline), and the last pass, at the end, samples it only when the pass before it is
        # at least half an interval old.
        assert metric(s, "cpu")["count"] in (passes - 2, passes - 1), (passes, mon)
        # memory.stat and the per-process files are spaced out where their cost would be more
        # than 0.25 % of a core at this rate (8 monitors on 2 cores make reads slow), but read
        # at least every 100 ms, at deadlines that were not missed, and at the last pass.
        for name in ("memory", "processes", "io.write"):
            count = metric(s, name)["count"]
            assert duration / 0.1 - missed - 1 <= count <= passes, (name, count, passes, mon)
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


def _stored_samples(db, run_id):
    with connect(db) as con:
        (n,) = con.execute(
            "SELECT count(*) FROM samples s JOIN series r ON r.id = s.series_id "
            "WHERE r.run_id = ?", (run_id,)).fetchone()
    con.close()
    return n


def _rescued_path(proc):
    m = re.search(r"the run was saved to (\S+) instead", proc.stderr)
    assert m, describe(proc)
    return m.group(1)


@pytest.mark.parametrize("fault,script", [
    ("was deleted", "sleep 0.3; rm -rf {folder}; sleep 0.3"),
    ("was replaced by another file",
     "sleep 0.3; mv {folder}/db.sqlite {folder}/old.sqlite; cp {folder}/old.sqlite "
     "{folder}/db.sqlite; sleep 0.3"),
])
def test_database_vanishing_mid_run_is_saved_elsewhere_never_reported_stored(
        tmp_path, fault, script):
    folder = tmp_path / "data"
    folder.mkdir()
    db = folder / "db.sqlite"
    run_ok(db, ["true"], "--no-git")  # an earlier run, which must survive too
    proc = fp("run", "-o", db, "--no-git", "-i", "10ms", "--", "/bin/sh", "-c",
              script.format(folder=folder), env=clean_env(TMPDIR=tmp_path))
    assert proc.returncode == 0, describe(proc)  # the command's own status
    assert f"the database {db} {fault} while footprint wrote to it" in proc.stderr, describe(proc)
    assert "stored in" not in proc.stderr, describe(proc)
    rescued = _rescued_path(proc)
    # Next to the old file when its folder is still there, else in $TMPDIR.
    assert os.path.dirname(rescued) == str(folder if folder.exists() else tmp_path)
    runs = runs_json(rescued)
    assert [r["name"] for r in runs] == ["true", "sh"]
    s = show(rescued, runs[1]["id"])
    assert s["run"]["status"] == "ok"
    written = s["meta"]["monitor"]["writer"]["samples_written"]
    assert written > 20 and _stored_samples(rescued, runs[1]["id"]) == written


def test_database_made_read_only_mid_run_loses_nothing(tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    db = folder / "db.sqlite"
    proc = fp("run", "-o", db, "--no-git", "-i", "10ms", "--", "/bin/sh", "-c",
              f"sleep 0.3; chmod a-w {db} {folder}; sleep 0.3")
    os.chmod(folder, 0o755)
    assert proc.returncode == 0 and "warning" not in proc.stderr, describe(proc)
    os.chmod(db, 0o644)
    (run,) = runs_json(db)
    s = show(db, run["id"])
    written = s["meta"]["monitor"]["writer"]["samples_written"]
    assert s["meta"]["monitor"]["samples_dropped"] == 0
    assert written > 20 and _stored_samples(db, run["id"]) == written


def _mount(*args):
    return subprocess.run(["mount", *args], capture_output=True, text=True).returncode == 0


@contextlib.contextmanager
def _small_disk(folder, size):
    """A tmpfs of `size` mounted at `folder` for the block (the test is skipped where mounting
    is not allowed)."""
    folder.mkdir()
    if not _mount("-t", "tmpfs", "-o", f"size={size}", "tmpfs", folder):
        pytest.skip("cannot mount a tmpfs here (needs root and mount rights)")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", folder], check=True)


def test_databases_on_read_only_media_are_read(tmp_path):
    folder = tmp_path / "media"
    folder.mkdir()
    db = folder / "db.sqlite"
    run_ok(db, [wl("burn"), "1", "0.2"], "--no-git", "-i", "10ms")
    if not _mount("--bind", folder, folder):
        pytest.skip("cannot bind-mount here (needs root and mount rights)")
    try:
        if not _mount("-o", "remount,ro,bind", folder):
            pytest.skip("cannot remount read-only here")
        (run,) = runs_json(db)
        s = show(db, run["id"])
        assert s["run"]["status"] == "ok" and metric(s, "cpu")["count"] > 5
        proc = fp("run", "-o", db, "--no-git", "--", "true")
        assert proc.returncode == 125, describe(proc)
        assert "read-only" in proc.stderr.lower(), describe(proc)
    finally:
        subprocess.run(["umount", folder], check=True)


@pytest.mark.parametrize("interval,message", [
    ("9223372037", "is too long a duration"),
    ("3601", "must be between 1ms and 1h (got 3601 s)"),
    ("99999999999999999999", "is too long a duration"),
    ("0.5ms", "must be between 1ms and 1h"),
])
def test_intervals_out_of_range_are_refused_before_anything_runs(tmp_path, interval, message):
    db = tmp_path / "fp.db"
    marker = tmp_path / "ran"
    proc = fp("run", "-o", db, "-i", interval, "--", "touch", marker)
    assert proc.returncode == 125, describe(proc)
    line = single_error_line(proc)
    assert message in line, describe(proc)
    assert not marker.exists() and not db.exists()


def test_disk_full_mid_run_is_said_at_once_and_nothing_is_lost(tmp_path):
    """A real full disk: a 4 MiB tmpfs that the command fills for 0.8 s, then frees."""
    with _small_disk(tmp_path / "disk", "4m") as disk:
        db = disk / "db.sqlite"
        proc = fp("run", "-o", db, "--no-git", "-i", "2ms", "--", "/bin/sh", "-c",
                  f"sleep 0.2; cat /dev/zero > {disk}/filler 2>/dev/null; sleep 0.8; "
                  f"rm {disk}/filler; sleep 0.4")
        assert proc.returncode == 0, describe(proc)
        lines = proc.stderr.splitlines()
        # Said while it happened (before the run's own summary line), once, then the recovery.
        said = [i for i, l in enumerate(lines) if "writing samples to the database failed" in l]
        again = [i for i, l in enumerate(lines) if "writing to the database works again" in l]
        summary = [i for i, l in enumerate(lines) if l.startswith("footprint: sh ok")]
        assert len(said) == 1 and len(again) == 1 and len(summary) == 1, describe(proc)
        assert said[0] < again[0] < summary[0], describe(proc)
        assert "full" in lines[said[0]], describe(proc)
        (run,) = runs_json(db)
        s = show(db, run["id"])
        monitor = s["meta"]["monitor"]
        assert monitor["write_failures"] > 0 and monitor["samples_dropped"] == 0
        assert "incomplete" not in s["meta"]
        written = monitor["writer"]["samples_written"]
        assert written == monitor["sampler"]["samples"] > 200
        assert _stored_samples(db, run["id"]) == written


def test_an_incomplete_run_says_so_in_runs_show_and_the_page(tmp_path):
    db = tmp_path / "fp.db"
    run_ok(db, [wl("burn"), "1", "0.1"], "--no-git", "-i", "10ms")
    reason = "120 of 900 samples were lost (database or disk is full)"
    con = sqlite3.connect(db)
    con.execute("UPDATE runs SET meta = json_set(meta, '$.incomplete', ?)", (reason,))
    con.commit()
    con.close()
    assert "ok, incomplete" in fp("runs", "-o", db).stdout
    text = fp("show", "-o", db).stdout
    assert "ok, incomplete" in text and f"lost     {reason}" in text, text
    page = tmp_path / "p.html"
    assert fp("plot", "-o", db, "--out", page).returncode == 0
    data = plot_data(page)
    assert data["runs"][0]["incomplete"] == reason


def _start_killable_run(db, *options):
    """`footprint run` of a long sleep in a session of its own, once its first samples are in
    the database's -wal."""
    proc = subprocess.Popen(
        [FOOTPRINT, "run", "-o", db, "-q", "--no-git", *options, "--", "sleep", "30"],
        env=clean_env(), start_new_session=True, stderr=subprocess.PIPE, text=True)
    wal = f"{db}-wal"
    wait_for(lambda: os.path.exists(wal) and os.path.getsize(wal) > 4096, 20,
             "the run's first samples")
    return proc


def _replace_file(db, with_file):
    """What `cp base.db n.db; mv n.db DB` does: another file takes the database's name."""
    fresh = f"{db}.new"
    subprocess.run(["cp", with_file, fresh], check=True)
    os.rename(fresh, db)


def _names(db):
    """The runs' names as SQLite alone reads the file (no footprint in between)."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return [n for (n,) in con.execute("SELECT name FROM runs ORDER BY started_at_ns")]
    finally:
        con.close()


def test_a_database_replaced_mid_run_keeps_its_own_runs(tmp_path):
    """footprint removes the side files of the file it wrote when another file takes its
    place: the new file's runs stay its own, for footprint and for SQLite alone."""
    base, db = tmp_path / "base.db", tmp_path / "rep.db"
    run_ok(base, ["true"], "--no-git", "-n", "base")
    run_ok(db, ["true"], "--no-git", "-n", "old")
    proc = fp("run", "-o", db, "--no-git", "-n", "rep", "-i", "20ms", "--", "/bin/sh", "-c",
              f"sleep 0.6; cp {base} {db}.new; mv {db}.new {db}; sleep 0.9",
              env=clean_env(TMPDIR=tmp_path))
    assert proc.returncode == 0, describe(proc)
    assert "was replaced by another file" in proc.stderr, describe(proc)
    assert not os.path.exists(f"{db}-wal") and not os.path.exists(f"{db}-shm"), describe(proc)
    assert _names(db) == ["base"]
    assert [r["name"] for r in runs_json(db)] == ["base"]
    rescued = _rescued_path(proc)
    assert [r["name"] for r in runs_json(rescued)] == ["old", "rep"]


def test_side_files_left_by_a_replaced_database_are_never_applied(tmp_path):
    """Killed after its database was replaced, footprint leaves side files stamped with the
    old file's identity: opening the new file is refused, with what to do, until they are
    moved aside; the new file is never changed meanwhile."""
    base, db = tmp_path / "base.db", tmp_path / "rep.db"
    run_ok(base, ["true"], "--no-git", "-n", "base")
    proc = _start_killable_run(db, "-n", "rep", "-i", "10ms")
    try:
        _replace_file(db, base)
    finally:
        kill_group(proc.pid)
        proc.communicate()
    before = open(db, "rb").read()
    for command, code in ((["runs", "-o", db], 3), (["run", "-o", db, "--no-git", "--", "true"], 125)):
        refused = fp(*command)
        assert refused.returncode == code, describe(refused)
        line = single_error_line(refused)
        assert f"{db}-wal was left by another database file" in line and "aside" in line
        assert open(db, "rb").read() == before
    os.rename(f"{db}-wal", tmp_path / "old-wal")
    os.rename(f"{db}-shm", tmp_path / "old-shm")
    assert [r["name"] for r in runs_json(db)] == ["base"]


def test_a_run_whose_footprint_was_killed_is_stored_interrupted_by_the_next_run(tmp_path):
    db = tmp_path / "fp.db"
    proc = _start_killable_run(db, "-n", "killed", "-i", "20ms")
    time.sleep(1.2)  # past a flush and a heartbeat
    kill_group(proc.pid)
    proc.communicate()
    (killed,) = [r for r in runs_json(db) if r["name"] == "killed"]
    remove_run_cgroups(killed["id"])
    with connect(db) as con:
        assert con.execute("SELECT status FROM runs").fetchall() == [("running",)]
    con.close()
    run_ok(db, ["true"], "--no-git", "-n", "next")
    with connect(db) as con:
        rows = con.execute("SELECT name, status, started_at_ns, ended_at_ns, heartbeat_ns "
                           "FROM runs ORDER BY started_at_ns").fetchall()
    con.close()
    assert [r[:2] for r in rows] == [("killed", "interrupted"), ("next", "ok")]
    _, _, started, ended, heartbeat = rows[0]
    assert ended == heartbeat > started  # ended at its last heartbeat, not at its start


def test_a_file_size_limit_is_said_like_a_full_disk_and_the_command_is_waited_for(tmp_path):
    """ulimit -f: footprint's writes fail with EFBIG instead of SIGXFSZ killing footprint and
    orphaning the command; the command still gets its own limit (a default SIGXFSZ)."""
    db = tmp_path / "x.db"
    start = time.monotonic()
    proc = subprocess.run(
        ["/bin/sh", "-c", f'ulimit -f 300; exec "$0" run -o {db} --no-git -i 1ms -- sleep 4',
         FOOTPRINT], capture_output=True, text=True, env=clean_env(), timeout=TIMEOUT_S)
    elapsed = time.monotonic() - start
    assert proc.returncode != 128 + signal.SIGXFSZ and proc.returncode >= 0, describe(proc)
    assert elapsed >= 4, describe(proc)
    assert "(the file size limit was reached); raise it (ulimit -f)" in proc.stderr, describe(proc)
    limited = subprocess.run(
        ["/bin/sh", "-c", f'ulimit -f 300; exec "$0" run -o {tmp_path / "y.db"} -q --no-git -- '
         f'/bin/sh -c "head -c 1000000 /dev/zero > {tmp_path / "big"}"', FOOTPRINT],
        capture_output=True, text=True, env=clean_env(), timeout=TIMEOUT_S)
    assert limited.returncode == 128 + signal.SIGXFSZ, describe(limited)


def test_a_disk_full_from_the_start_leaves_no_empty_database(tmp_path):
    with _small_disk(tmp_path / "disk", "1m") as disk:
        subprocess.run(["sh", "-c", f"cat /dev/zero > {disk}/filler"], capture_output=True)
        marker = tmp_path / "ran"
        proc = fp("run", "-o", disk / "db.sqlite", "--no-git", "--", "touch", marker)
        assert proc.returncode == 125, describe(proc)
        assert "full" in single_error_line(proc)
        assert sorted(os.listdir(disk)) == ["filler"] and not marker.exists()
