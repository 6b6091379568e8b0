"""Shared helpers of the end-to-end tests: run the footprint binary, read its JSON and its
SQLite database back.

The binary and the workload programs come from the environment that CTest sets
(tests/CMakeLists.txt): FOOTPRINT_BIN is the footprint executable, FP_WORKLOADS the folder that
holds fp_burn, fp_touch_memory, fp_spawn_tree, fp_short_children, fp_escapee and fp_exit_with.
"""
import glob
import json
import math
import os
import pty
import signal
import socket
import sqlite3
import subprocess
import time

import numpy as np

FOOTPRINT = os.environ.get("FOOTPRINT_BIN", "")
WORKLOADS = os.environ.get("FP_WORKLOADS", "")

# Generous: an ASan build runs 2-3x slower, and a hung footprint must fail the test, not the
# suite.
TIMEOUT_S = 120


def env_problem():
    """Why the suite cannot run here, or None."""
    if not FOOTPRINT or not os.access(FOOTPRINT, os.X_OK):
        return f"FOOTPRINT_BIN={FOOTPRINT!r} is not an executable footprint binary"
    if not WORKLOADS or not os.access(os.path.join(WORKLOADS, "fp_burn"), os.X_OK):
        return f"FP_WORKLOADS={WORKLOADS!r} does not hold the fp_* workload programs"
    return None


def asan_build():
    """Whether footprint is built with AddressSanitizer (scripts/test's second build), whose
    allocator holds and returns memory of its own: footprint's resident memory is then the
    sanitizer's more than footprint's."""
    ldd = subprocess.run(["ldd", FOOTPRINT], capture_output=True, text=True)
    return "libasan.so" in ldd.stdout


def wl(name):
    """Path of workload program fp_NAME."""
    return os.path.join(WORKLOADS, "fp_" + name)


def clean_env(**extra):
    """The environment for footprint: no database or run inherited from whoever runs pytest."""
    env = dict(os.environ)
    for key in ("FOOTPRINT_DB", "FOOTPRINT_RUN_ID"):
        env.pop(key, None)
    env.update({k: str(v) for k, v in extra.items()})
    return env


def _raise_priority():
    # Runs in the child, after setsid(): the new session is a scheduling group of its own
    # (when the kernel groups by session, as Debian's does), which gets the highest weight.
    try:
        os.setpriority(os.PRIO_PROCESS, 0, -20)
        with open("/proc/self/autogroup", "w") as f:
            f.write("-20")
    except OSError:
        pass


# For runs whose CPU figures are compared with the number of busy threads: as root, footprint
# and its command run at the highest priority, so that whatever else shares the machine's
# cores (a build, another test suite) takes no more than about 1 % of them.
HIGH_PRIORITY = {"start_new_session": True, "preexec_fn": _raise_priority}


def fp(*args, input=None, cwd=None, env=None, timeout=TIMEOUT_S, **kw):
    """Runs `footprint ARGS...` to the end; returns the CompletedProcess (text output)."""
    return subprocess.run(
        [FOOTPRINT, *map(str, args)],
        input=input,
        cwd=cwd,
        env=env if env is not None else clean_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        **kw,
    )


def describe(proc):
    return (
        f"exit {proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
    )


def run_ok(db, command, *options, expect_rc=0, **kw):
    """`footprint run -o DB -q OPTIONS -- COMMAND`; asserts its exit status."""
    proc = fp("run", "-o", db, "-q", *options, "--", *command, **kw)
    assert proc.returncode == expect_rc, describe(proc)
    return proc


def show(db, *runs, **kw):
    """`footprint show -o DB --json RUNS...` parsed; asserts it succeeded."""
    proc = fp("show", "-o", db, "--json", *runs, **kw)
    assert proc.returncode == 0, describe(proc)
    return json.loads(proc.stdout)


def runs_json(db):
    proc = fp("runs", "-o", db, "--json")
    assert proc.returncode == 0, describe(proc)
    return json.loads(proc.stdout)


def metric(summary, name, entity=None):
    """The one entry of summary['metrics'] for metric NAME (and ENTITY)."""
    found = [
        m
        for m in summary["metrics"]
        if m["metric"] == name and (entity is None or m["entity"] == entity)
    ]
    assert len(found) == 1, f"metric {name}: {found} in {summary['metrics']}"
    return found[0]


def cpu_total(summary):
    t = summary["totals"]
    return t["cpu_user_s"] + t["cpu_system_s"]


def connect(db):
    return sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)


def load_queries(db, run_id):
    """{query id: its `load.latency` record (scheduled_ns, ..., latency_s)} of a load run."""
    with connect(db) as con:
        rows = con.execute("SELECT step, value, data FROM run_values WHERE run_id = ? AND "
                           "name = 'load.latency' ORDER BY step", (run_id,)).fetchall()
    con.close()
    return {step: dict(json.loads(data), latency_s=value) for step, value, data in rows}


def nearest_rank(values, p):
    """The nearest-rank percentile p of `values`, as footprint load reports them."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p * len(ordered)) - 1)]


def raw_samples(db, run_id, metric_name):
    """[(t_ns, value)] of the run's series METRIC, ordered by time, straight from SQLite."""
    with connect(db) as con:
        rows = con.execute(
            "SELECT s.t_ns, s.value FROM samples s JOIN series r ON r.id = s.series_id "
            "WHERE r.run_id = ? AND r.metric = ? ORDER BY s.t_ns",
            (run_id, metric_name),
        ).fetchall()
    con.close()
    return rows


def stats(values):
    """count/min/mean/p50/p95/max as show --json defines them (numpy's linear percentiles)."""
    v = np.asarray(values, dtype=float)
    return {
        "count": len(v),
        "min": float(v.min()),
        "mean": float(v.mean()),
        "p50": float(np.percentile(v, 50)),
        "p95": float(np.percentile(v, 95)),
        "max": float(v.max()),
    }


def single_error_line(proc):
    """Asserts stderr is exactly one line starting 'footprint: '; returns it."""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("footprint: "), describe(proc)
    assert len(lines[0]) > len("footprint: ") + 10, describe(proc)
    return lines[0]


def wait_for(predicate, timeout_s, what):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.01)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


def pid_alive(pid):
    """True while PID exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def kill_group(pgid):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def cgroup_dirs(name):
    """Directories called NAME in any mounted cgroup hierarchy (footprint's run cgroups)."""
    found = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            if right.split(" ")[0] not in ("cgroup", "cgroup2"):
                continue
            point = left.split(" ")[4]
            for depth in range(0, 4):
                found += glob.glob(os.path.join(point, *(["*"] * depth), name))
    return sorted(set(found))



def remove_run_cgroups(run_id):
    """Removes the cgroups of a run whose footprint was killed (it could not remove them)."""
    for d in cgroup_dirs("footprint-" + run_id):
        try:
            os.rmdir(d)
        except OSError:
            pass

def plot_data(html_path):
    """The JSON document a `footprint plot` page embeds (#fp-data), parsed."""
    with open(html_path, encoding="utf-8") as f:
        page = f.read()
    start_tag = '<script type="application/json" id="fp-data">'
    start = page.index(start_tag) + len(start_tag)
    return json.loads(page[start:page.index("</script>", start)])


def on_pty(args, **env):
    """Runs footprint with stdout and stderr on a pseudo-terminal; returns (status, output)."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen([FOOTPRINT, *map(str, args)], stdin=subprocess.DEVNULL,
                            stdout=follower, stderr=follower, env=clean_env(**env))
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # EIO: the other side closed
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    status = proc.wait(timeout=60)
    return status, b"".join(chunks).decode("utf-8").replace("\r\n", "\n")


def saved_chart(png_path, json_path):
    """A chart saved by the pages' toolbox: asserts the PNG is one; returns the parsed JSON."""
    with open(png_path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n", png_path
    with open(json_path, encoding="utf-8") as f:
        return json.load(f)


# The HTTP system under test of footprint load --http (its modes: its docstring).
HTTP_SUT = os.path.join(os.path.dirname(__file__), "..", "workloads", "http_sut.py")


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# A radT plan's header, and a script for one of its rows that prints its own pid, a child's and a
# grandchild's, then the wall clock every 0.2 s until it is stopped (the queue's tests: output
# latency, and a cancel that must reach the whole tree).
RADT_HEADER = "Experiment,Workload,Status,Run,Devices,Collocation,File,Listeners,Params\n"
TREE_SCRIPT = """#!/bin/sh
echo "self $$"
sleep 60 & echo "child $!"
sh -c 'sleep 60 & echo "grandchild $!"; wait' &
while :; do echo "tick $(date +%s%N)"; sleep 0.2; done
"""
