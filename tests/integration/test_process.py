"""footprint run is transparent: the command's exit status, signals, stdin/stdout/stderr and
environment pass through, and footprint's own summary goes to stderr."""
import os
import signal
import subprocess
import time

import pytest

from fp_helpers import (
    FOOTPRINT,
    TIMEOUT_S,
    cgroup_dirs,
    clean_env,
    describe,
    fp,
    pid_alive,
    runs_json,
    show,
    wl,
)


@pytest.mark.parametrize(
    "args, rc, status",
    [
        (["0"], 0, "ok"),
        (["3"], 3, "failed"),
        (["signal", "9"], 137, "killed"),
        (["signal", "15"], 143, "killed"),
    ],
    ids=["exit0", "exit3", "sigkill", "sigterm"],
)
def test_exit_status_and_signal_death_pass_through(tmp_path, args, rc, status):
    db = tmp_path / "exit.db"
    proc = fp("run", "-o", db, "--no-git", "--", wl("exit_with"), *args)
    assert proc.returncode == rc, describe(proc)
    assert proc.stdout == ""
    # The summary on stderr says how the command ended.
    assert status + (f" (exit {rc})" if rc else "") in proc.stderr, proc.stderr
    run = show(db)["run"]
    assert run["status"] == status
    assert run["exit_code"] == rc
    assert run["ended_at_ns"] is not None and run["ended_at_ns"] >= run["started_at_ns"]


def test_command_not_found_exits_127_with_a_clear_message(tmp_path):
    db = tmp_path / "nf.db"
    for command in ["fp-no-such-command-xyz", str(tmp_path / "missing" / "prog")]:
        proc = fp("run", "-o", db, "-q", "--no-git", "--", command, "arg")
        assert proc.returncode == 127, describe(proc)
        lines = [l for l in proc.stderr.splitlines() if command in l]
        assert len(lines) == 1 and lines[0].startswith("footprint: "), describe(proc)
        assert "not found" in lines[0]
        run = show(db)["run"]
        assert run["status"] == "failed" and run["exit_code"] == 127
        assert run["command"] == [command, "arg"]


def test_non_executable_file_exits_126(tmp_path):
    script = tmp_path / "not-executable.sh"
    script.write_text("#!/bin/sh\ntouch should-not-exist\n")
    script.chmod(0o644)
    db = tmp_path / "ne.db"
    proc = fp("run", "-o", db, "-q", "--no-git", "--", script, cwd=tmp_path)
    assert proc.returncode == 126, describe(proc)
    lines = [l for l in proc.stderr.splitlines() if str(script) in l]
    assert len(lines) == 1 and lines[0].startswith("footprint: "), describe(proc)
    assert "ermission denied" in lines[0]
    assert not (tmp_path / "should-not-exist").exists()
    run = show(db)["run"]
    assert run["status"] == "failed" and run["exit_code"] == 126


def test_sigterm_to_footprint_is_forwarded_to_the_command(tmp_path):
    """fp_exit_with wait exits 42 on SIGTERM: kill -TERM <footprint> makes footprint exit 42."""
    db = tmp_path / "fwd.db"
    proc = subprocess.Popen(
        [FOOTPRINT, "run", "-o", db, "-q", "--no-git", "--", wl("exit_with"), "wait"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_env(),
    )
    try:
        assert proc.stdout.readline() == "ready\n"  # the command's stdout, passed through
        os.kill(proc.pid, signal.SIGTERM)
        out, err = proc.communicate(timeout=TIMEOUT_S)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 42, err
    s = show(db)
    assert s["run"]["status"] == "failed" and s["run"]["exit_code"] == 42
    assert s["meta"]["monitor"]["signals_forwarded"] == 1


def test_a_tree_that_ignores_stop_signals_is_killed_at_the_third(tmp_path):
    """A shell and its child ignore SIGINT and SIGTERM: the second signal says what the third
    does, the third kills the whole tree with SIGKILL."""
    db = tmp_path / "stubborn.db"
    pids = tmp_path / "pids"
    proc = subprocess.Popen(
        [FOOTPRINT, "run", "-o", db, "-q", "--no-git", "--", "/bin/sh", "-c",
         f"trap '' INT TERM; sleep 300 & echo $$ $! > {pids}; echo ready; wait"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env())
    try:
        assert proc.stdout.readline() == "ready\n"
        tree = [int(p) for p in pids.read_text().split()]
        os.kill(proc.pid, signal.SIGINT)
        time.sleep(0.3)
        assert proc.poll() is None and all(pid_alive(p) for p in tree)  # ignored
        os.kill(proc.pid, signal.SIGTERM)
        time.sleep(0.3)
        assert proc.poll() is None and all(pid_alive(p) for p in tree)
        os.kill(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=TIMEOUT_S)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 137, err
    lines = [l for l in err.splitlines() if l.startswith("footprint: warning:")]
    assert len(lines) == 2, err
    assert "still running after 2 stop signals (Ctrl-C, SIGTERM, ...); a third kills" in lines[0]
    assert "killing the command and every process it started (SIGKILL)" in lines[1], err
    assert not any(pid_alive(p) for p in tree), tree
    s = show(db)
    assert s["run"]["status"] == "killed" and s["meta"]["monitor"]["signals_forwarded"] == 3


def test_sigint_to_footprint_kills_the_command_with_sigint(tmp_path):
    """fp_exit_with wait does not handle SIGINT: forwarded, it dies of it (128 + 2)."""
    db = tmp_path / "int.db"
    proc = subprocess.Popen(
        [FOOTPRINT, "run", "-o", db, "-q", "--no-git", "--", wl("exit_with"), "wait"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_env(),
    )
    try:
        assert proc.stdout.readline() == "ready\n"
        os.kill(proc.pid, signal.SIGINT)
        proc.communicate(timeout=TIMEOUT_S)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 130
    run = show(db)["run"]
    assert run["status"] == "killed" and run["exit_code"] == 130


def test_stdin_and_stdout_pass_through_untouched(tmp_path):
    db = tmp_path / "io.db"
    proc = fp("run", "-o", db, "--no-git", "--", "sort", input="b\na\n")
    assert proc.returncode == 0, describe(proc)
    assert proc.stdout == "a\nb\n"
    # The summary goes to stderr, every line of it marked as footprint's.
    assert proc.stderr.strip(), "no summary on stderr"
    assert all(l.startswith("footprint: ") for l in proc.stderr.splitlines()), proc.stderr


def test_stderr_is_the_commands_and_quiet_prints_no_summary(tmp_path):
    db = tmp_path / "err.db"
    proc = fp("run", "-o", db, "-q", "--no-git", "--", "sh", "-c", "echo out; echo err >&2")
    assert proc.returncode == 0, describe(proc)
    assert proc.stdout == "out\n"
    assert proc.stderr == "err\n"


def test_command_knows_its_run_id(tmp_path):
    """The command gets FOOTPRINT_RUN_ID, so that a program using the API joins the run."""
    db = tmp_path / "env.db"
    proc = fp("run", "-o", db, "-q", "--no-git", "--", "sh", "-c", 'echo "$FOOTPRINT_RUN_ID"')
    assert proc.returncode == 0, describe(proc)
    assert proc.stdout.strip() == show(db)["run"]["id"]


def test_database_defaults_to_env_then_current_folder(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    proc = fp("run", "-q", "--no-git", "--", "true", cwd=work)
    assert proc.returncode == 0, describe(proc)
    assert (work / "footprint.db").is_file()
    assert len(runs_json(work / "footprint.db")) == 1

    env_db = tmp_path / "from-env.db"
    proc = fp("run", "-q", "--no-git", "--", "true", cwd=work, env=clean_env(FOOTPRINT_DB=env_db))
    assert proc.returncode == 0, describe(proc)
    assert len(runs_json(env_db)) == 1
    assert len(runs_json(work / "footprint.db")) == 1


def test_run_cgroup_is_removed_at_the_end(tmp_path, cgroup_cpu):
    if not cgroup_cpu:
        pytest.skip("no cgroup per run on this machine (footprint doctor)")
    db = tmp_path / "cg.db"
    proc = fp("run", "-o", db, "-q", "--no-git", "--", "sh", "-c", "cat /proc/self/cgroup")
    assert proc.returncode == 0, describe(proc)
    s = show(db)
    name = "footprint-" + s["run"]["id"]
    # The command ran inside the run's cgroup...
    assert name in proc.stdout, proc.stdout
    assert s["meta"]["sources"]["cpu"].startswith("cgroup")
    # ...which is gone once footprint returned.
    assert cgroup_dirs(name) == []


def test_command_may_follow_the_options_without_double_dash(tmp_path):
    db = tmp_path / "nodash.db"
    proc = fp("run", "-o", db, "-q", "--no-git", wl("exit_with"), "3")
    assert proc.returncode == 3, describe(proc)
    assert show(db)["run"]["command"] == [wl("exit_with"), "3"]


def _processes_running(argv):
    """PIDs of live processes whose command line is exactly ARGV."""
    want = "\0".join(argv) + "\0"
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline") as f:
                    if f.read() == want and pid_alive(int(entry)):
                        pids.append(int(entry))
            except OSError:
                pass
    return pids


def test_process_left_running_by_the_command_is_reported_not_waited_for(tmp_path):
    """fp_escapee 20.25 0.2: the command exits after 0.2 s, leaving a detached grandchild
    that would burn for 20 s. footprint ends with the command, says so, and leaves the
    grandchild alone (outside its removed cgroup)."""
    argv = [wl("escapee"), "20.25", "0.2"]
    db = tmp_path / "daemon.db"
    # Files, not pipes: the grandchild inherits them and would hold a pipe open for 20 s.
    with open(tmp_path / "out", "w+") as out, open(tmp_path / "err", "w+") as err:
        t0 = time.monotonic()
        rc = subprocess.call(
            [FOOTPRINT, "run", "-o", db, "-q", "--no-git", "--", *argv],
            stdout=out, stderr=err, env=clean_env(), timeout=TIMEOUT_S,
        )
        wall = time.monotonic() - t0
        err.seek(0)
        stderr = err.read()
    left = _processes_running(argv)
    try:
        assert rc == 0, stderr
        assert wall < 10, "footprint waited for the detached grandchild"
        warnings = [l for l in stderr.splitlines() if l.startswith("footprint: warning:")]
        assert len(warnings) == 1 and "still running" in warnings[0], stderr
        assert len(left) == 1, "the grandchild should still run, on its own"
        s = show(db)
        assert s["run"]["status"] == "ok"
        assert cgroup_dirs("footprint-" + s["run"]["id"]) == []
    finally:
        for pid in left:
            os.kill(pid, signal.SIGKILL)
