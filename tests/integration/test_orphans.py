"""footprint killed with SIGKILL while its command runs (run/orphan_guard.h): the command's tree
is stopped with it, not left running unmeasured under PID 1, unless --keep-running."""
import os
import re
import signal
import subprocess

import pytest

from fp_helpers import FOOTPRINT, clean_env, pid_alive, remove_run_cgroups, wait_for


def start(tmp_path, *options, script):
    """`footprint run OPTIONS -- sh -c SCRIPT`, where SCRIPT writes the pid to watch to
    tmp_path/pid; returns footprint's process and that pid, once written."""
    pid_file = tmp_path / "pid"
    fp = subprocess.Popen([FOOTPRINT, "run", "-o", tmp_path / "fp.db", "-q", *options, "--",
                           "sh", "-c", script.replace("PID_FILE", str(pid_file))],
                          env=clean_env(), start_new_session=True)
    wait_for(lambda: pid_file.exists() and pid_file.read_text().strip(), 30, "the command")
    return fp, int(pid_file.read_text())


def run_cgroup(pid):
    """The run id of the cgroup `pid` is in, or None."""
    with open(f"/proc/{pid}/cgroup") as f:
        found = re.search(r"footprint-([0-9a-f-]{36})", f.read())
    return found and found.group(1)


def kill_footprint(fp):
    os.kill(fp.pid, signal.SIGKILL)
    fp.wait(timeout=30)


def test_a_killed_footprint_stops_the_whole_tree_of_its_cgroup(tmp_path):
    fp, grandchild = start(tmp_path, script="sleep 60 & echo $! > PID_FILE; wait")
    run_id = run_cgroup(grandchild)
    try:
        if run_id is None:
            pytest.skip("this machine gives runs no cgroup (footprint doctor says why)")
        kill_footprint(fp)
        # The background process of the command's shell, which PR_SET_PDEATHSIG would miss.
        wait_for(lambda: not pid_alive(grandchild), 10, "the command's background process")
    finally:
        if pid_alive(grandchild):
            os.kill(grandchild, signal.SIGKILL)
        if run_id:
            remove_run_cgroups(run_id)


def test_without_a_cgroup_the_command_dies_with_footprint(tmp_path):
    fp, command = start(tmp_path, "--no-cgroup", script="echo $$ > PID_FILE; exec sleep 60")
    kill_footprint(fp)
    try:
        wait_for(lambda: not pid_alive(command), 10, "the command")
    finally:
        if pid_alive(command):
            os.kill(command, signal.SIGKILL)


def test_keep_running_leaves_the_command_alone(tmp_path):
    fp, grandchild = start(tmp_path, "--keep-running",
                           script="sleep 60 & echo $! > PID_FILE; wait")
    run_id = run_cgroup(grandchild)
    try:
        kill_footprint(fp)
        # A second: the guard stops a tree in milliseconds.
        with pytest.raises(AssertionError):
            wait_for(lambda: not pid_alive(grandchild), 1, "the command's background process")
    finally:
        os.killpg(fp.pid, signal.SIGKILL)  # the command's shell and its background process
        if run_id:
            wait_for(lambda: not pid_alive(grandchild), 10, "the background process, killed")
            remove_run_cgroups(run_id)
