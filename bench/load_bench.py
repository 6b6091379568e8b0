#!/usr/bin/python3
"""`footprint load`'s own cost (issue "MLPerf LoadGen-like driver"): the driver's overhead per
query (target < 20 µs at 10,000 queries/s) and the highest rate it sustains against a system
under test that does no work (fp_noop_sut), each next to the same SUT driven by a Python
asyncio driver (bench/asyncio_driver.py) in the same run, the two interleaved.

1. 10,000 queries/s for 3 s (server scenario, Poisson arrivals): achieved queries/s, latency
   p50/p99 (with a no-op SUT the latency, answer read - scheduled time, is the driver's and the
   pipes' own), CPU per answered query: the driver's (footprint: `driver_cpu_s`, its driver
   thread; asyncio: the process over the load's window) and the whole process's (footprint:
   `monitor_cpu_s`, sampler and start-up included; asyncio: from the interpreter's start).
2. The highest rate sustained: 10k (step 1), then 20k, 40k, ... for 2 s each; a rate is
   sustained when the achieved rate is >= 95 % of the target, p99 <= 10 ms and every query
   was answered, in one of two tries (--tries). Each driver stops at its first rate not
   sustained.

    /usr/bin/python3 bench/load_bench.py --build build [--write-docs | --out FILE] [--json FILE]

About 45 s (and at least 15 s more with --wait-idle). Prints a Markdown section;
--write-docs puts it in docs/performance.md between the load-bench markers (kept when
run_benchmarks.py rewrites the rest).
"""
import argparse
import json
import math
import os
import pathlib
import platform
import resource
import shlex
import sqlite3
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from doc_block import machine, write_block  # noqa: E402
from run_benchmarks import wait_until_idle  # noqa: E402
TARGET_QPS = 10_000
TARGET_US = 20.0
SUSTAINED_SHARE, SUSTAINED_P99_S = 0.95, 0.010
DEFAULT_RATES = "20000,40000,80000,160000,320000"  # the ramp after TARGET_QPS


def nearest_rank(ordered, p):
    return ordered[max(0, math.ceil(p * len(ordered)) - 1)] if ordered else float("nan")


def cpu_times():
    """All CPUs' (busy, stolen) seconds so far, from /proc/stat: busy is user, nice, system,
    irq and softirq time; stolen, the time the hypervisor ran something else while a virtual
    CPU wanted to run."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    tick = os.sysconf("SC_CLK_TCK")
    return (v[0] + v[1] + v[2] + v[5] + v[6]) / tick, v[7] / tick


def timed_run(cmd):
    """Runs `cmd`; (the process, the CPU the machine spent meanwhile on other work than `cmd`
    and its children, and the CPU time stolen, both in % of one core)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    busy0, stolen0 = cpu_times()
    start = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    wall = time.monotonic() - start
    busy1, stolen1 = cpu_times()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    ours = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        sys.exit(f"load_bench: {' '.join(cmd)} exited with {proc.returncode}: {proc.stderr}")
    return proc, (max(0.0, 100 * (busy1 - busy0 - ours) / wall), 100 * (stolen1 - stolen0) / wall)


def run_footprint(fp, sut, qps, duration, tmp):
    """One `footprint load` server run; its figures, read from the run's database."""
    db = pathlib.Path(tmp) / f"load-{qps}.db"
    cmd = [fp, "load", "--scenario", "server", "--qps", str(qps), "--duration", f"{duration}s",
           "--min-queries", "1", "-q", "-o", str(db), "--no-git", "--"] + sut
    proc, (others, stolen) = timed_run(cmd)
    # The run's meta.load and totals are what `footprint show --json` prints as `load` and
    # `totals`; read here from the database because show --json also prints every query's
    # value (90 MB and 5 s at 160,000 queries/s for 2 s).
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        [(run_id, meta_json)] = con.execute("SELECT id, meta FROM runs").fetchall()
        totals = dict(con.execute("SELECT name, value FROM run_totals WHERE run_id = ?",
                                  (run_id,)).fetchall())
        # The latency the driver adds to each query: issued - scheduled (its own lag).
        lags = sorted(lag for (lag,) in con.execute(
            "SELECT json_extract(data, '$.issued_ns') - json_extract(data, '$.scheduled_ns') "
            "FROM run_values WHERE run_id = ? AND name = 'load.latency'", (run_id,)))
    finally:
        con.close()
    db.unlink()
    meta = json.loads(meta_json)
    load = meta["load"]
    n = load["queries"]
    return {
        "driver": "footprint", "target_qps": qps, "duration_s": duration,
        "qps": load["qps"], "p50_s": load["latency_s"].get("p50"),
        "p99_s": load["latency_s"].get("p99"), "issued": load["issued"], "queries": n,
        "all_answered": load["ended_because"] == "done" and n == load["issued"]
                        and load["unknown_answers"] == 0,
        "cpu_s": load["driver_cpu_s"], "process_cpu_s": totals.get("monitor_cpu_s"),
        "lag_p50_s": nearest_rank(lags, 0.5) / 1e9, "lag_p99_s": nearest_rank(lags, 0.99) / 1e9,
        "sampler_cpu_s": meta.get("monitor", {}).get("sampler", {}).get("cpu_s"),
        "others_pct": others, "stolen_pct": stolen, "stderr": proc.stderr.strip(),
    }


def run_asyncio(sut, qps, duration):
    cmd = [sys.executable, str(ROOT / "bench" / "asyncio_driver.py"), "--qps", str(qps),
           "--duration", str(duration), "--"] + sut
    proc, (others, stolen) = timed_run(cmd)
    r = json.loads(proc.stdout)
    return {
        "driver": "asyncio", "target_qps": qps, "duration_s": duration, "qps": r["qps"],
        "p50_s": r["p50"], "p99_s": r["p99"], "issued": r["issued"], "queries": r["queries"],
        "all_answered": r["queries"] == r["issued"] and r["unknown_answers"] == 0,
        "cpu_s": r["cpu_s"], "process_cpu_s": r["process_cpu_s"], "others_pct": others,
        "lag_p50_s": r["lag_p50"], "lag_p99_s": r["lag_p99"],
        "stolen_pct": stolen,
        "stderr": proc.stderr.strip(),
    }


def sleep_cost(n=2000, sleep_s=100e-6):
    """(CPU µs, wall µs) of one 100 µs sleep of this thread: what a driver pays at least per
    wake-up on this machine (on a virtual machine, going idle and being woken cost far more
    than the system calls)."""
    cpu, wall = time.thread_time_ns(), time.monotonic_ns()
    for _ in range(n):
        time.sleep(sleep_s)
    return (time.thread_time_ns() - cpu) / 1e3 / n, (time.monotonic_ns() - wall) / 1e3 / n


def sustained(r):
    return (r["all_answered"] and r["qps"] >= SUSTAINED_SHARE * r["target_qps"]
            and r["p99_s"] is not None and r["p99_s"] <= SUSTAINED_P99_S)


def measure(args):
    build = pathlib.Path(args.build)
    fp = str(build / "footprint")
    sut = args.sut.split() if args.sut else [str(build / "bench" / "fp_noop_sut")]
    for path in (fp, sut[0]):
        if not os.access(path, os.X_OK):
            sys.exit(f"load_bench: {path} is missing; build it: "
                     f"cmake --build {build} --target footprint fp_noop_sut")
    drivers = {"footprint": lambda q, d, tmp: run_footprint(fp, sut, q, d, tmp),
               "asyncio": lambda q, d, tmp: run_asyncio(sut, q, d)}
    if args.wait_idle:
        wait_until_idle(args.wait_idle)
    started = time.monotonic()
    load_start = os.getloadavg()[0]
    sleeps = [sleep_cost()]
    results = []  # every run, in the order made
    with tempfile.TemporaryDirectory(prefix="fp-load-bench-") as tmp:
        # Step 1, which is also the ramp's first rate; then the ramp, both drivers at each rate,
        # taking turns at going first; a driver stops at its first rate not sustained twice
        # (other work on a shared machine can spoil one try).
        going = list(drivers)
        for i, qps in enumerate([TARGET_QPS] + args.rates):
            duration = args.target_duration if i == 0 else args.step_duration
            order = going if i % 2 == 0 else going[::-1]
            for name in order + [name for name in order for _ in range(args.tries - 1)]:
                if any(r["driver"] == name and r["target_qps"] == qps and r["sustained"]
                       for r in results):
                    continue  # sustained already: no second try
                r = drivers[name](qps, duration, tmp)
                r["sustained"] = sustained(r)
                r["try"] = 1 + sum(x["driver"] == name and x["target_qps"] == qps for x in results)
                results.append(r)
                print(f"load_bench: {name} at {qps:,} queries/s: {r['qps']:,.0f} achieved, "
                      f"p99 {ms(r['p99_s'])}, {per_query_us(r['cpu_s'], r)} µs CPU/query, "
                      f"others {r['others_pct']:.0f} %, stolen {r['stolen_pct']:.0f} % of a core"
                      f"{'' if r['sustained'] else ' - not sustained'}",
                      file=sys.stderr, flush=True)
            going = [name for name in going
                     if any(r["driver"] == name and r["target_qps"] == qps and r["sustained"]
                            for r in results)]
            if not going:
                break
    sleeps.append(sleep_cost())
    return {"machine": machine(), "kernel": platform.release(),
            "python": platform.python_version(), "sut": sut, "results": results,
            "rates": args.rates,
            "target_duration_s": args.target_duration, "step_duration_s": args.step_duration,
            "tries": args.tries, "sleep_cost_us": sleeps,
            "load_start": load_start, "load_end": os.getloadavg()[0],
            "wall_s": time.monotonic() - started, "date": time.strftime("%Y-%m-%d"),
            "command": args.command_line}


def ms(seconds):
    return "–" if seconds is None else f"{seconds * 1e3:.3f} ms"


def per_query_us(seconds, r):
    return "–" if seconds is None or not r["queries"] else f"{seconds / r['queries'] * 1e6:.1f}"


def highest(results, driver, rates):
    best = None
    for qps in [TARGET_QPS] + rates:
        if not any(r["driver"] == driver and r["target_qps"] == qps and r["sustained"]
                   for r in results):
            break
        best = qps
    if best is None:
        return f"none (not even {TARGET_QPS:,} queries/s)"
    if best == max([TARGET_QPS] + rates):
        return f"≥ {best:,} queries/s (the highest rate tried)"
    return f"{best:,} queries/s"


def heading(block, d):
    """The section's title: this machine's (block load-bench), or another's beside it."""
    if block == "load-bench":
        return "## `footprint load`: the driver's own cost (`bench/load_bench.py`)"
    return f"### The same on {d['machine']}" + (f", {d['where']}" if d.get("where") else "")


def report(d, title):
    results = d["results"]
    at_target = [r for r in results if r["target_qps"] == TARGET_QPS and r.get("try", 1) == 1]
    sut = " ".join(pathlib.Path(d["sut"][0]).name if i == 0 else a for i, a in enumerate(d["sut"]))
    lines = [
        title,
        "",
        f"Measured {d['date']} on {d['machine']}, Linux {d['kernel']}, Python "
        f"{d['python']} (load average {d['load_start']:.2f} at the start, {d['load_end']:.2f} "
        f"at the end; {d['wall_s']:.0f} s in all). The server scenario against `{sut}`, a SUT "
        "that answers each query at once (everything one read() brings, in one write()), so "
        "that the latency, answer read − scheduled time, is the driver's and the pipes' own. "
        "Next to it, in the same run and taking turns, `bench/asyncio_driver.py`: the same "
        "scenario in Python asyncio (Poisson arrivals on its own clock, the queries due at each "
        "wake-up in one write, answers read in chunks, latency from the scheduled time). "
        f"Reproduce: `{d['command']}`.",
        "",
        f"At the target rate, {TARGET_QPS:,} queries/s for {d['target_duration_s']:g} s "
        f"(target: < {TARGET_US:g} µs of driver CPU per query):",
        "",
        "| driver | target qps | achieved qps | p50 | p99 | issue lag p50 / p99 "
        "| CPU µs/query (driver) | CPU µs/query (whole process) | others | stolen |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in at_target:
        lines.append(f"| {r['driver']} | {r['target_qps']:,} | {r['qps']:,.0f} | {ms(r['p50_s'])} "
                     f"| {ms(r['p99_s'])} | {r['lag_p50_s'] * 1e6:.1f} / "
                     f"{r['lag_p99_s'] * 1e6:.1f} µs | {per_query_us(r['cpu_s'], r)} "
                     f"| {per_query_us(r['process_cpu_s'], r)} | {r['others_pct']:.0f} % "
                     f"| {r.get('stolen_pct', 0):.0f} % |")
    lines += [
        "",
        "Issue lag: each query's issue time minus its scheduled time, the latency the driver "
        "itself adds to it (footprint: `issued_ns - scheduled_ns` of its `load.latency` record; "
        "asyncio: when its write was made). "
        "CPU (driver): footprint's `driver_cpu_s`, the CPU time of its driver thread (from the "
        "start of the SUT's `ready` wait to its exit); asyncio's, its process's CPU from `ready` "
        "to the last answer. CPU (whole process): footprint's `monitor_cpu_s` (`getrusage` of "
        "the footprint process from the run's start to the command's exit: start-up, the 100 ms "
        "sampler and the writer included, storing the per-query values after it not); asyncio's "
        "from the interpreter's start to the last answer. Both over the answered queries. "
        "Others: the CPU the rest of the machine used meanwhile (all CPUs' busy time from "
        "`/proc/stat` less the driver's and the SUT's), in % of one core; stolen: the time "
        "the hypervisor did not run a virtual CPU that wanted to run (`/proc/stat` steal).",
        "",
        f"The highest rate sustained: {d['target_duration_s']:g} s at {TARGET_QPS:,} queries/s, "
        f"then {d['step_duration_s']:g} s at each of "
        + ", ".join(f"{q:,}" for q in d["rates"])
        + " queries/s, each driver until its first failure. **A rate is sustained when the "
        f"achieved rate is at least {SUSTAINED_SHARE:.0%} of the target, p99 latency is at most "
        f"{SUSTAINED_P99_S * 1e3:g} ms and every query was answered"
        + (f", in one of {d['tries']} tries (the machine is shared: other work can spoil one)"
           if d.get("tries", 1) > 1 else "") + ".**",
        "",
        "| target qps | driver | achieved qps | p50 | p99 | CPU µs/query (driver) | others "
        "| stolen | sustained |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in results:
        driver = r["driver"] + (f" (try {r['try']})" if r.get("try", 1) > 1 else "")
        lines.append(f"| {r['target_qps']:,} | {driver} | {r['qps']:,.0f} | {ms(r['p50_s'])} "
                     f"| {ms(r['p99_s'])} | {per_query_us(r['cpu_s'], r)} "
                     f"| {r['others_pct']:.0f} % | {r.get('stolen_pct', 0):.0f} % "
                     f"| {'yes' if r['sustained'] else '**no**'} |")
    lines += [
        "",
        "Highest rate sustained: footprint "
        + highest(results, "footprint", d["rates"]) + "; asyncio "
        + highest(results, "asyncio", d["rates"]) + ".",
        "",
        "Both drivers and the SUT share the machine's cores."
        + (" One 100 µs sleep (`time.sleep`, before and after the loads) cost "
           + " and ".join(f"{c:.1f} µs of CPU ({w:.0f} µs wall)" for c, w in d["sleep_cost_us"])
           + ": on this machine, each time a driver waits and is woken costs about that much, "
           "whatever it does once awake." if d.get("sleep_cost_us") else "")
        + " Python's event loop waits in "
        "`epoll_wait`, whose timeout is whole milliseconds: it wakes up to 1 ms after a query's "
        "arrival and sends the queries due by then together, which shows in its p50 and lowers "
        "its wake-ups per query; footprint waits in `ppoll` with 1 ns of timer slack, a wake-up "
        "per arrival. The two draw their arrivals from different generators (mt19937_64, "
        "Python's Mersenne Twister) at the same rate.",
    ]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=str(ROOT / "build"),
                    help="the build folder: footprint and bench/fp_noop_sut (default: build)")
    ap.add_argument("--sut", help="another SUT command line (split at spaces), e.g. "
                                  "'build/tests/fp_sut fixed 0 1 /dev/null'")
    ap.add_argument("--rates", default=DEFAULT_RATES,
                    help="the ramp's rates after 10,000 queries/s, comma-separated")
    ap.add_argument("--target-duration", type=float, default=3.0,
                    help="seconds at 10,000 queries/s (default 3)")
    ap.add_argument("--step-duration", type=float, default=2.0,
                    help="seconds at each of the ramp's rates (default 2)")
    ap.add_argument("--tries", type=int, default=2,
                    help="tries at a rate before a driver is said not to sustain it (default 2)")
    ap.add_argument("--write-docs", action="store_true",
                    help="put the section in docs/performance.md (between the load-bench markers)")
    ap.add_argument("--out", help="put the section in this Markdown file instead")
    ap.add_argument("--wait-idle", type=float, default=0, metavar="SECONDS",
                    help="first wait (at most this long) for the machine to calm down")
    ap.add_argument("--json", help="also write the raw figures to this file")
    ap.add_argument("--block", default="load-bench",
                    help="the markers to write between (another machine's figures: "
                         "load-bench-MACHINE, a section of its own)")
    ap.add_argument("--from-json", help="measure nothing: report the figures saved with --json")
    args = ap.parse_args()
    args.rates = [int(float(q)) for q in args.rates.split(",") if q]
    # How to measure the same again (where the figures go left out).
    again = ["/usr/bin/python3", "bench/load_bench.py"]
    if pathlib.Path(args.build).resolve() != ROOT / "build":
        again += ["--build", args.build]
    for option, value, default in (("--sut", args.sut, None),
                                   ("--rates", ",".join(map(str, args.rates)), DEFAULT_RATES),
                                   ("--target-duration", args.target_duration, 3.0),
                                   ("--step-duration", args.step_duration, 2.0),
                                   ("--tries", args.tries, 2),
                                   ("--wait-idle", args.wait_idle, 0)):
        if value != default:
            again += [option, shlex.quote(f"{value:g}" if isinstance(value, float) else str(value))]
    args.command_line = " ".join(again)
    if args.from_json:
        d = json.loads(pathlib.Path(args.from_json).read_text())
    else:
        d = measure(args)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(d, indent=1) + "\n")
    out = args.out or (str(ROOT / "docs" / "performance.md") if args.write_docs else "-")
    write_block(out, args.block, report(d, heading(args.block, d)))
    if out != "-":
        print(f"load_bench: wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
