#!/usr/bin/python3
"""The baseline for bench/load_bench.py: footprint load's server scenario, written the way one
would in Python with asyncio.

    /usr/bin/python3 bench/asyncio_driver.py --qps R --duration D [--seed S] -- COMMAND...

Starts COMMAND with stdin and stdout pipes (asyncio.create_subprocess_exec), waits for its
`ready` line, then issues queries `ID<TAB>ID` at Poisson arrivals of rate R
(random.Random(seed).expovariate(R)) on the loop's own clock (time.monotonic_ns), for D seconds;
then waits for the outstanding answers and closes COMMAND's stdin. Done as footprint does it:
every query that is due when the issuer wakes goes out in one write; a reader task reads what
COMMAND wrote in chunks and stamps every answer of one read with the time that read returned;
latency is that time minus the query's *scheduled* time, so a lagging issuer is charged.

Prints one JSON object: qps (answered queries over first scheduled time .. last answer, as
footprint computes it), p50/p99 latency in seconds (nearest rank), issued, queries (answered),
cpu_s (this process's user+system CPU from `ready` to the last answer, interpreter start-up
excluded), process_cpu_s (the same from the interpreter's start), duration_s, lag_p50/lag_p99
(when each query was written minus its scheduled time, in seconds).
"""
import argparse
import asyncio
import json
import math
import random
import resource
import sys
import time


def cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def nearest_rank(sorted_values, p):
    rank = math.ceil(p * len(sorted_values))
    return sorted_values[min(max(rank, 1), len(sorted_values)) - 1]


async def drive(args, command):
    proc = await asyncio.create_subprocess_exec(*command, stdin=asyncio.subprocess.PIPE,
                                                stdout=asyncio.subprocess.PIPE)
    first = await proc.stdout.readline()
    if first.strip() != b"ready":
        sys.exit(f"asyncio_driver: the command's first line was {first[:120]!r}, not 'ready'")
    cpu_start = cpu_seconds()
    clock = time.monotonic_ns
    start_ns = clock()
    end_ns = start_ns + int(args.duration * 1e9)
    rng = random.Random(args.seed)
    scheduled = []                 # by query id: its scheduled time
    lags = []                      # by query id: when it was written - its scheduled time
    completed = {}                 # query id -> when its answer was read
    state = {"issuing": True, "unknown": 0}
    all_answered = asyncio.Event()

    async def issuer():
        next_ns = start_ns
        write = proc.stdin.write
        while next_ns < end_ns:
            now = clock()
            if next_ns > now:
                await asyncio.sleep((next_ns - now) / 1e9)
                now = clock()
            lines = []
            while next_ns <= now and next_ns < end_ns:
                qid = len(scheduled)
                scheduled.append(next_ns)
                lines.append(f"{qid}\t{qid}\n")
                next_ns += round(rng.expovariate(args.qps) * 1e9)
            write("".join(lines).encode())
            written = clock()
            lags.extend(written - scheduled[q] for q in range(len(scheduled) - len(lines),
                                                               len(scheduled)))
        state["issuing"] = False
        if len(completed) == len(scheduled):
            all_answered.set()

    async def reader():
        read = proc.stdout.read
        partial = b""
        while True:
            chunk = await read(1 << 16)
            at = clock()
            if not chunk:
                break
            lines = (partial + chunk).split(b"\n")
            partial = lines.pop()
            for line in lines:
                head, tab, _ = line.partition(b"\t")
                try:
                    qid = int(head)
                except ValueError:
                    qid = -1
                if not tab or not 0 <= qid < len(scheduled) or qid in completed:
                    state["unknown"] += 1
                    continue
                completed[qid] = at
            if not state["issuing"] and len(completed) == len(scheduled):
                all_answered.set()
        all_answered.set()  # the command closed its output

    reading = asyncio.create_task(reader())
    await issuer()
    await all_answered.wait()
    process_cpu_s = cpu_seconds()
    cpu_s = process_cpu_s - cpu_start
    proc.stdin.close()
    await reading
    await proc.wait()
    latencies = sorted((at - scheduled[qid]) / 1e9 for qid, at in completed.items())
    out = {"issued": len(scheduled), "queries": len(latencies), "unknown_answers": state["unknown"],
           "cpu_s": cpu_s, "process_cpu_s": process_cpu_s, "qps": 0.0, "p50": None, "p99": None,
           "duration_s": 0.0, "lag_p50": None, "lag_p99": None}
    if lags:
        lags.sort()
        out.update(lag_p50=nearest_rank(lags, 0.50) / 1e9, lag_p99=nearest_rank(lags, 0.99) / 1e9)
    if latencies:
        duration = (max(completed.values()) - scheduled[0]) / 1e9
        out.update(duration_s=duration, qps=len(latencies) / duration if duration > 0 else 0.0,
                   p50=nearest_rank(latencies, 0.50), p99=nearest_rank(latencies, 0.99))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--qps", type=float, required=True, help="target queries per second")
    ap.add_argument("--duration", type=float, default=10.0, help="seconds of issuing")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("command", nargs="+", help="the system under test (after --)")
    args = ap.parse_args()
    print(json.dumps(asyncio.run(drive(args, args.command))))


if __name__ == "__main__":
    main()
