#!/usr/bin/python3
"""Added cost of footprint's Python instrumentation on a no-op function, per call.

    /usr/bin/python3 bench/python_overhead.py [--build DIR] [--calls N] [--repeat R] [--json FILE]

Target (DESIGN.md, "Performance targets"): a decorated Python call adds < 2 µs.

Each variant calls a function that does nothing, N times in a loop, R times; the per-call time
is the loop's time / N. "Added" is the variant minus the undecorated call, per repetition; the
report gives the best (min, the usual timeit convention: least disturbed by other load) and the
median of the R repetitions. Variants:

  plain                 def noop(): pass                     (the baseline)
  supervise([Time()])   @fp.supervise([fp.Time()], bm)       (one scope per call)
  supervise(CPU, Memory @ 10 ms)                             (+ finer sampling while it runs)
  bm.scope() block      with bm.scope("x"): pass             (vs. a bare `pass` loop)
  kept scope block      s = bm.scope("x") once; with s: pass (the same)
  umlaut.BenchmarkSupervisor([MemoryMetric, CPUMetric, TimeMetric])
  UMLAUT's approach     a thread pool and one psutil sampling thread per metric per call, as
                        UMLAUT's BenchmarkSupervisor does (re-implemented here; N/100 calls)

Every scope is really recorded: the native writer thread stores them in a temporary database
while the loop runs (a burst the writer cannot keep up with is queued, up to a bound beyond
which scopes are dropped and counted in the run, never blocking the caller). Run on an otherwise idle machine; the machine's load average
is printed with the results.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_US = 2.0


def import_footprint(build: str | None):
    candidates = [build] if build else ["build-py", "build", "build-bench"]
    for c in candidates:
        path = (ROOT / c / "python") if not os.path.isabs(c) else Path(c) / "python"
        if (path / "footprint").is_dir():
            sys.path.insert(0, str(path))
            break
    try:
        import footprint
    except ImportError as e:
        sys.exit(f"python_overhead.py: cannot import footprint ({e}); build it "
                 "(cmake --build build-py) or pass --build DIR")
    return footprint


def per_call_loop(func, calls: int) -> float:
    """Seconds per call of func() in a plain loop."""
    start = time.perf_counter()
    for _ in range(calls):
        func()
    return (time.perf_counter() - start) / calls


def umlaut_style(metrics: int, interval: float):
    """UMLAUT's BenchmarkSupervisor, in essence: per call, a thread pool with one psutil
    sampling thread per metric, stopped by an event when the function returns."""
    import psutil

    process = psutil.Process()

    def sample(finish: threading.Event, out: list) -> None:
        while not finish.is_set():
            out.append(process.memory_info().rss / 2**20)
            finish.wait(interval)

    def decorate(func):
        def inner(*args, **kwargs):
            finish = threading.Event()
            out: list = []
            with ThreadPoolExecutor(max_workers=metrics) as pool:
                try:
                    futures = [pool.submit(sample, finish, out) for _ in range(metrics)]
                    result = func(*args, **kwargs)
                    finish.set()
                    for f in futures:
                        f.result()
                finally:
                    finish.set()
            return result
        return inner

    return decorate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", help="build directory holding python/footprint")
    ap.add_argument("--calls", type=int, default=200_000, help="calls per repetition")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--json", help="also write the figures here")
    args = ap.parse_args()
    fp = import_footprint(args.build)
    from footprint import umlaut

    tmp = tempfile.mkdtemp(prefix="fp-pybench-")
    bm = fp.Benchmark(os.path.join(tmp, "bench.db"), name="python_overhead")

    def noop():
        pass

    supervised = fp.supervise([fp.Time()], bm)(noop)
    sampled = fp.supervise([fp.Time(), fp.CPU(interval=0.01), fp.Memory(interval=0.01)],
                           bm)(noop)
    compat = umlaut.BenchmarkSupervisor(
        [umlaut.MemoryMetric("m", interval=0.1), umlaut.CPUMetric("c", interval=0.1),
         umlaut.TimeMetric("t")], bm)(noop)
    scope = bm.scope("block")

    def scope_block():
        with bm.scope("block"):
            pass

    def kept_scope_block():
        with scope:
            pass

    def bare_block():
        pass

    variants = [
        ("supervise([Time()])", supervised, noop, args.calls),
        ("supervise([Time(), CPU, Memory @ 10 ms])", sampled, noop, args.calls),
        ("with bm.scope(name)", scope_block, bare_block, args.calls),
        ("with scope (kept from bm.scope(name))", kept_scope_block, bare_block, args.calls),
        ("umlaut.BenchmarkSupervisor([Memory, CPU, Time])", compat, noop, args.calls),
        ("UMLAUT's approach (thread pool + psutil threads)",
         umlaut_style(2, 0.1)(noop), noop, max(200, args.calls // 100)),
    ]
    for _, func, base, _ in variants:  # warm up
        per_call_loop(func, 1000 if func is not variants[-1][1] else 20)
        per_call_loop(base, 1000)

    results = []
    plain = []
    for name, func, base, calls in variants:
        added, totals = [], []
        for _ in range(args.repeat):
            b = per_call_loop(base, calls)
            t = per_call_loop(func, calls)
            plain.append(b)
            totals.append(t)
            added.append(t - b)
        results.append({
            "variant": name,
            "calls": calls,
            "repeat": args.repeat,
            "per_call_us_min": min(totals) * 1e6,
            "added_us_min": min(added) * 1e6,
            "added_us_median": statistics.median(added) * 1e6,
        })
    bm.close()
    dropped = json.loads(
        __import__("sqlite3").connect(os.path.join(tmp, "bench.db")).execute(
            "SELECT meta FROM runs").fetchone()[0])["monitor"].get("scopes_dropped")

    load = os.getloadavg()
    print(f"footprint {fp.__version__}, Python {sys.version.split()[0]}, "
          f"{os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"plain no-op call: {min(plain) * 1e9:.0f} ns")
    print(f"{'variant':<52} {'calls':>8} {'added µs (min)':>15} {'(median)':>9}  target")
    for r in results:
        target = "" if "UMLAUT" in r["variant"] else (
            "< 2 µs: " + ("met" if r["added_us_min"] < TARGET_US else "MISSED"))
        print(f"{r['variant']:<52} {r['calls']:>8} {r['added_us_min']:>15.3f} "
              f"{r['added_us_median']:>9.3f}  {target}")
    print(f"(scopes dropped by the bounded queue while storing: {dropped})")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "target_us": TARGET_US, "plain_ns": min(plain) * 1e9, "load_average": load,
            "results": results, "scopes_dropped": dropped}, indent=2))


if __name__ == "__main__":
    main()
