"""Closing: explicitly, by a `with` block, at interpreter exit; crashes keep flushed data;
forked children leave the parent's run alone."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

import footprint as fp
from fp_python import PYTHON, child_env, run_python, write_script


def only_run(db):
    data = fp.load(db)
    assert len(data.runs) == 1
    return data, data.runs.iloc[0]


def test_with_block_closes_ok_or_failed(db):
    with fp.Benchmark(db, description="fine", name="a", tags={"k": 1}) as bm:
        assert not bm.closed and not bm.joined
    assert bm.closed
    with pytest.raises(RuntimeError):
        with fp.Benchmark(db, name="b") as bm2:
            raise RuntimeError("escaped")
    for code in (0, 2):
        with pytest.raises(SystemExit):
            with fp.Benchmark(db, name=f"exit {code}"):
                raise SystemExit(code)
    runs = fp.load(db).runs.set_index("name")
    assert runs.loc["exit 0", "status"] == "ok" and runs.loc["exit 2", "status"] == "failed"
    assert runs.loc["a", "status"] == "ok" and runs.loc["a", "description"] == "fine"
    assert runs.loc["a", "tags"] == {"k": "1"}
    assert runs.loc["b", "status"] == "failed"
    assert bm2.closed


def test_close_is_idempotent_and_later_values_are_refused(db):
    bm = fp.Benchmark(db)
    bm.close()
    bm.close()
    with pytest.raises(fp.FootprintError, match="closed"):
        bm.log("late", 1.0)
    with bm.scope("late scope"):  # not recorded, not an error
        pass
    with pytest.raises(ValueError):
        bm.close("weird")
    data, run = only_run(db)
    assert run["status"] == "ok"
    assert data.scopes.empty and data.values.empty


def test_errors_are_footprint_errors_with_a_message(tmp_path):
    with pytest.raises(fp.FootprintError) as e:
        fp.Benchmark(tmp_path / "no" / "such" / "dir" / "x.db")
    assert e.value.code == "database" and "x.db" in str(e.value)
    with pytest.raises(fp.FootprintError) as e:
        fp.Benchmark(tmp_path / "x.db", metrics=["cpu", "bogus"])
    assert e.value.code == "not_found" and "bogus" in str(e.value)
    assert isinstance(e.value, RuntimeError)


def test_interpreter_exit_closes_open_benchmarks(tmp_path, db):
    script = write_script(tmp_path, f"""
        import sys, time, footprint as fp
        bm = fp.Benchmark({str(db)!r}, name=sys.argv[1])
        with bm.scope("work"):
            time.sleep(0.05)
        bm.log("x", 2.0)
        if sys.argv[1] == "crash":
            raise SystemError("uncaught")
        """)
    assert run_python(script, "clean").returncode == 0
    failed = run_python(script, "crash")
    assert failed.returncode == 1 and "uncaught" in failed.stderr
    data = fp.load(db)
    runs = data.runs.set_index("name")
    assert runs.loc["clean", "status"] == "ok" and runs.loc["crash", "status"] == "failed"
    assert (data.runs["stored_status"] == data.runs["status"]).all()
    assert len(data.scopes) == 2 and data.scopes["end_s"].notna().all()
    assert list(data.values["value"]) == [2.0, 2.0]


CRASHING = """
    import os, sqlite3, sys, time, footprint as fp
    bm = fp.Benchmark({db!r}, name="crashing", flush_interval=0.05)

    def flushed(path):  # what check_crashed reads is in the database
        con = sqlite3.connect("file:" + path + "?mode=ro", uri=True, timeout=30)
        try:
            values = con.execute("SELECT count(*) FROM run_values "
                                 "WHERE name IN ('before', 'inside')").fetchone()[0]
            scopes = con.execute("SELECT count(*) FROM scopes WHERE name = 'open' "
                                 "OR (name = 'done' AND end_ns IS NOT NULL)").fetchone()[0]
            memory = con.execute("SELECT count(*) FROM samples JOIN series ON series.id = "
                                 "samples.series_id WHERE metric = 'memory'").fetchone()[0]
        finally:
            con.close()
        return values == 2 and scopes == 2 and memory >= 3

    @fp.supervise([fp.Time()], bm, name="done")
    def done():
        time.sleep(0.01)

    done()
    bm.log("before", 1.0, step=0)
    with bm.scope("open"):
        bm.log("inside", 2.0)
        deadline = time.monotonic() + 30  # flushes every 50 ms, however busy the machine
        while not flushed({db!r}) and time.monotonic() < deadline:
            time.sleep(0.01)
        print("ready", flush=True)
        if sys.argv[1] == "exit":
            os._exit(7)
        time.sleep(60)  # SIGKILLed here
"""


def check_crashed(db):
    data, run = only_run(db)
    assert run["stored_status"] == "running"  # nobody closed it...
    assert run["status"] == "interrupted"  # ...and its process is gone
    s = data.scopes.set_index("name")
    assert list(data.scopes["name"]) == ["done", "open"]
    assert s.loc["done", "duration_s"] >= 0.01
    assert pd_isna(s.loc["open", "end_s"])  # the process died inside it
    v = data.values.set_index("name")
    assert v.loc["before", "value"] == 1.0 and v.loc["before", "step"] == 0
    assert v.loc["inside", "scope"] == "open"
    # The process's own samples up to the last flush are kept too.
    assert (data.samples["metric"] == "memory").sum() >= 3


def pd_isna(x) -> bool:
    import pandas as pd

    return bool(pd.isna(x))


def test_os_exit_keeps_flushed_data(tmp_path, db):
    script = write_script(tmp_path, CRASHING.format(db=str(db)))
    result = run_python(script, "exit")
    assert result.returncode == 7 and "ready" in result.stdout
    check_crashed(db)


def test_sigkill_keeps_flushed_data(tmp_path, db):
    script = write_script(tmp_path, CRASHING.format(db=str(db)))
    child = subprocess.Popen([PYTHON, str(script), "kill"], env=child_env(),
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        child.send_signal(signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL
    finally:
        child.kill()
        child.stdout.close()
    check_crashed(db)


def test_forked_children_leave_the_parents_run_alone(tmp_path, db):
    script = write_script(tmp_path, f"""
        import os, sys, footprint as fp
        bm = fp.Benchmark({str(db)!r})

        @fp.supervise([fp.Time()], bm, name="task")
        def task():
            return os.getpid()

        task()
        pid = os.fork()
        if pid == 0:
            task()           # not recorded: the run belongs to the parent
            bm.close()       # a no-op in the child
            sys.exit(0)      # normal interpreter exit: atexit runs, nothing hangs
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, status
        task()
        bm.close()
        """)
    result = run_python(script, timeout=60)
    assert result.returncode == 0, result.stderr
    data, run = only_run(db)
    assert run["status"] == "ok"
    assert list(data.scopes["name"]) == ["task", "task"]
    assert len(set(data.scopes["thread"])) == 1


def test_umlaut_mode_w_deletes_the_database_first(tmp_path, db):
    from footprint import umlaut

    fp.Benchmark(db).close()
    assert len(fp.load(db).runs) == 1
    umlaut.Benchmark(str(db), mode="a").close()
    assert len(fp.load(db).runs) == 2
    bm = umlaut.Benchmark(str(db), description="fresh", mode="w")
    bm.close()
    runs = fp.load(db).runs
    assert list(runs["id"]) == [bm.uuid] and list(runs["description"]) == ["fresh"]
    with pytest.raises(ValueError, match="footprint.load"):
        umlaut.Benchmark(str(db), mode="r")


def test_sampling_interval_follows_supervised_calls(db):
    """While a function supervised with Memory(interval=0.01) runs, memory is sampled about
    every 10 ms; outside it, at the benchmark's 200 ms."""
    bm = fp.Benchmark(db, interval=0.2, metrics=["memory", "cpu"])

    @fp.supervise([fp.Memory(interval=0.01)], bm, name="fine")
    def fine():
        time.sleep(0.3)

    time.sleep(0.45)
    fine()
    time.sleep(0.45)
    bm.close()
    data = fp.load(db)
    scope = data.scopes.iloc[0]
    memory = data.samples[data.samples["metric"] == "memory"]["t_s"]
    inside = memory[(memory >= scope["start_s"]) & (memory <= scope["end_s"])]
    before = memory[memory < scope["start_s"]]
    assert len(inside) >= 8  # ~30 on an idle machine
    assert len(before) <= 4  # ~3 at 200 ms
    assert set(data.samples["metric"]) == {"memory", "cpu"}
    cpu = data.samples[data.samples["metric"] == "cpu"]["t_s"]
    assert len(cpu[(cpu >= scope["start_s"]) & (cpu <= scope["end_s"])]) <= 3


def test_no_threads_are_left_behind(db):
    import threading

    before = threading.active_count()
    names_before = set(os.listdir("/proc/self/task"))
    for _ in range(3):
        with fp.Benchmark(db) as bm:
            with bm.scope("x"):
                pass
    time.sleep(0.05)
    assert threading.active_count() == before
    assert set(os.listdir("/proc/self/task")) == names_before
