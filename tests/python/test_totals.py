"""Totals of a benchmark of its own (the API used alone, not under `footprint run`): workers
that outlive the block, and workers that existed before it. Ground truth: the CPU time each
worker measured of itself (time.process_time) inside the block."""

from __future__ import annotations

import json
import multiprocessing
import time

import footprint as fp
from fp_python import run_footprint


def burn(seconds: float) -> float:
    """Burns `seconds` of this process's CPU time; returns what it used, as it measured it."""
    start = time.process_time()
    while time.process_time() - start < seconds:
        pass
    return time.process_time() - start


def test_a_pool_alive_across_the_block_counts_for_what_it_did_inside(db):
    """A multiprocessing.Pool made before the Benchmark, busy before and inside it, still alive
    after it closes (as persistent DataLoader workers are): its workers are in the run's CPU
    total for their work inside the block, and not for their work before it."""
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(2) as pool:
        before = sum(pool.map(burn, [0.3, 0.3]))  # not the run's
        main_start = time.process_time()
        with fp.Benchmark(db, name="pool", interval=0.05) as bm:
            inside = sum(pool.map(burn, [0.4] * 4))
        main_used = time.process_time() - main_start  # the pool's bookkeeping, the writer ...
    assert before >= 0.6 and inside >= 1.6
    summary = json.loads(run_footprint("show", "-o", str(db), "--json", bm.run_id).stdout)
    totals = summary["totals"]
    cpu = totals["cpu_user_s"] + totals["cpu_system_s"]
    # 10 ms clock ticks per process; footprint's own threads are left out of the total.
    assert inside - 0.05 <= cpu <= inside + main_used + 0.05, (cpu, inside, main_used, totals)
    # The series saw the workers too: the two agree, and show has nothing to say.
    assert summary["cpu_disagreement"] == "", summary["cpu_disagreement"]
