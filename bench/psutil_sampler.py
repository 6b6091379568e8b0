#!/usr/bin/python3
"""The baseline: a process-tree sampler written the way psutil-based tools sample.

UMLAUT, psrecord, CodeCarbon and MLflow's system metrics all do essentially this: start the
command with subprocess.Popen, then in a sleep-based loop read the process and
`children(recursive=True)` through psutil, sum CPU times and RSS over the tree, keep the
samples in memory and write them out at the end. This one is made as fair as it can be:
it sleeps to absolute deadlines (no drift; missed deadlines are skipped, as footprint does),
it reads each process inside `oneshot()`, and it imports nothing it does not need.

    /usr/bin/python3 bench/psutil_sampler.py [-i SECONDS] [-o DB] [--json FILE] -- CMD ARGS...

At exit it prints one JSON object (to --json FILE, else as the last line of stdout):
cpu_s (its own user+system CPU, getrusage RUSAGE_SELF), startup_cpu_s (the part spent
before the first sample: interpreter start and imports), peak_rss_bytes (ru_maxrss),
vmhwm_bytes (VmHWM of /proc/self/status: unlike ru_maxrss, never inherited from a parent
that started this process with vfork/posix_spawn), samples, missed_deadlines, duration_s,
rate_hz (samples / duration), interval_s, exit_code, delay_us_p50/p99/max (how late each
sample started after its deadline) and pass_cpu_us_mean (thread CPU per sampling pass).

Needs Debian's python3-psutil (run it with /usr/bin/python3).
"""
import argparse
import json
import resource
import sqlite3
import subprocess
import sys
import time

import psutil

_GONE = (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied)


def take_sample(root, include_root=True):
    """One sample of the tree under `root` (a psutil.Process).

    Returns (cpu_seconds, rss_bytes, processes): CPU is user+system of each process plus
    that of its waited-for children (children_user/children_system), summed over the tree.
    """
    procs = root.children(recursive=True)
    if include_root:
        procs.insert(0, root)
    cpu = 0.0
    rss = 0
    n = 0
    for p in procs:
        try:
            with p.oneshot():
                t = p.cpu_times()
                m = p.memory_info()
        except _GONE:
            continue
        cpu += t.user + t.system + t.children_user + t.children_system
        rss += m.rss
        n += 1
    return cpu, rss, n


def percentile(values, q):
    if not values:
        return None
    s = sorted(values)
    k = (len(s) - 1) * q / 100.0
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def vmhwm_bytes():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def write_db(path, samples):
    db = sqlite3.connect(path)
    with db:
        db.execute("CREATE TABLE IF NOT EXISTS samples("
                   "t_ns INTEGER, cpu_s REAL, rss_bytes INTEGER, processes INTEGER)")
        db.executemany("INSERT INTO samples VALUES (?, ?, ?, ?)", samples)
    db.close()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-i", "--interval", type=float, default=0.1, help="seconds (default 0.1)")
    ap.add_argument("-o", "--db", default=None, help="SQLite file for the samples")
    ap.add_argument("--json", default=None, help="write the result JSON here")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args(argv)
    cmd = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not cmd:
        ap.error("no command given")

    startup = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.monotonic()
    child = subprocess.Popen(cmd)
    root = psutil.Process(child.pid)

    samples = []  # (t_ns, cpu_s, rss_bytes, processes)
    delays_us = []
    pass_cpu_ns = 0
    missed = 0
    interval = args.interval
    deadline = t0
    while child.poll() is None:
        now = time.monotonic()
        delays_us.append((now - deadline) * 1e6)
        c0 = time.thread_time_ns()
        try:
            cpu, rss, n = take_sample(root)
        except _GONE:
            break
        pass_cpu_ns += time.thread_time_ns() - c0
        samples.append((int((now - t0) * 1e9), cpu, rss, n))
        deadline += interval
        now = time.monotonic()
        if now >= deadline:  # overran: skip the deadlines already past
            skipped = int((now - deadline) / interval) + 1
            missed += skipped
            deadline += skipped * interval
        time.sleep(deadline - now)
    exit_code = child.wait()
    duration = time.monotonic() - t0
    if args.db:
        write_db(args.db, samples)

    ru = resource.getrusage(resource.RUSAGE_SELF)
    result = {
        "cpu_s": ru.ru_utime + ru.ru_stime,
        "startup_cpu_s": startup.ru_utime + startup.ru_stime,
        "peak_rss_bytes": ru.ru_maxrss * 1024,
        "vmhwm_bytes": vmhwm_bytes(),
        "samples": len(samples),
        "missed_deadlines": missed,
        "duration_s": duration,
        "rate_hz": len(samples) / duration if duration > 0 else 0.0,
        "interval_s": interval,
        "exit_code": exit_code,
        "delay_us_p50": percentile(delays_us, 50),
        "delay_us_p99": percentile(delays_us, 99),
        "delay_us_max": max(delays_us) if delays_us else None,
        "pass_cpu_us_mean": pass_cpu_ns / 1e3 / len(samples) if samples else None,
    }
    text = json.dumps(result)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    else:
        print(text, flush=True)
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
