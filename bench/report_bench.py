#!/usr/bin/python3
"""Times footprint's readers on a synthetic run of 10 M samples, against DESIGN.md's targets.

    bash scripts/build build-bench -DCMAKE_BUILD_TYPE=Release -DFOOTPRINT_BUILD_TESTS=OFF
    /usr/bin/python3 bench/report_bench.py --build build-bench [--samples 10000000] [--repeat 3]

The run is written straight into a database that footprint created (so the schema is
footprint's own): 5 series (cpu, memory, io.read, io.write, sys.cpu) of 2 M samples each at
1 ms, one INSERT ... SELECT per series from a recursive CTE (about 10 s for 10 M samples).
Then each command of COMMANDS runs `--repeat` times; the report gives the median wall time,
the median CPU time (user + system, from wait4), the largest peak RSS (ru_maxrss), the output
size, and the target.

To time another command, add one entry to COMMANDS. bench/run_benchmarks.py runs the same
measurement (measure(), markdown()) for docs/performance.md.
"""
import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUN_ID = "00000000-0000-4000-8000-0000000be4c4"

# (label, footprint arguments after `-o DB`, target in seconds or None). {run} is the run id,
# {out} a file in the scratch folder.
COMMANDS = [
    ("show", ["show", "{run}"], 1.0),
    ("show --json", ["show", "{run}", "--json"], 1.0),
    ("export --format csv", ["export", "-u", "{run}", "--format", "csv", "--out", "{out}"], None),
    ("export --format json", ["export", "-u", "{run}", "--format", "json", "--out", "{out}"],
     None),
    ("export --format trace",
     ["export", "-u", "{run}", "--format", "trace", "--out", "{out}"], None),
    ("plot", ["plot", "-u", "{run}", "--no-menu", "--out", "{out}"], 2.0),
]

SERIES = [  # metric, unit, entity, SQL for the value of sample i
    ("cpu", "%", "tree", "abs(random() % 40000) / 100.0"),
    ("memory", "bytes", "tree", "1e8 + (i % 100000) * 4096"),
    ("io.read", "bytes/s", "tree", "abs(random() % 1000000)"),
    ("io.write", "bytes/s", "tree", "(i % 1000) * 1024.0"),
    ("sys.cpu", "%", "system", "abs(random() % 20000) / 100.0"),
]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def make_database(footprint, db, samples):
    """A database created by footprint, plus one synthetic run of `samples` samples."""
    subprocess.run([footprint, "run", "-o", db, "-q", "--no-git", "-m", "cpu", "--", "true"],
                   check=True)
    per_series = samples // len(SERIES)
    con = sqlite3.connect(db)
    con.execute("PRAGMA synchronous=OFF")
    start = time.time_ns()
    with con:
        con.execute(
            "INSERT INTO runs(id, name, command, cwd, host, user, started_at_ns, ended_at_ns, "
            "status, exit_code, meta) VALUES (?, 'synthetic-10M', '[\"synthetic\"]', '/', 'bench', "
            "'bench', ?, ?, 'ok', 0, '{}')",
            (RUN_ID, start, start + per_series * 1_000_000))
        totals = {"duration_s": per_series / 1000.0, "cpu_user_s": 1.0, "cpu_system_s": 0.5,
                  "peak_memory_bytes": 5e8}
        con.executemany("INSERT INTO run_totals(run_id, name, value) VALUES (?, ?, ?)",
                        [(RUN_ID, k, v) for k, v in totals.items()])
    for metric, unit, entity, value_sql in SERIES:
        t0 = time.monotonic()
        with con:
            series_id = con.execute(
                "INSERT INTO series(run_id, metric, unit, entity) VALUES (?, ?, ?, ?)",
                (RUN_ID, metric, unit, entity)).lastrowid
            con.execute(
                "WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < ?) "
                f"INSERT INTO samples(series_id, t_ns, value) SELECT ?, i * 1000000, {value_sql} "
                "FROM c", (per_series - 1, series_id))
        log(f"  {metric}: {per_series:,} samples in {time.monotonic() - t0:.1f} s")
    con.close()
    return per_series * len(SERIES)


def time_command(footprint, db, args, out_file):
    """(wall s, CPU s, peak RSS bytes, output bytes) of one run of `footprint -o DB ARGS`."""
    argv = [footprint, args[0], "-o", db] + [
        a.format(run=RUN_ID, out=out_file) for a in args[1:]]
    t0 = time.monotonic()
    with open(os.devnull, "wb") as devnull:
        proc = subprocess.Popen(argv, stdout=devnull, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - t0
    err = proc.stderr.read().decode()
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"report_bench: {' '.join(argv)} failed: {err}")
    size = os.path.getsize(out_file) if os.path.exists(out_file) else None
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024, size


def measure(footprint, samples, repeat, keep=None):
    """Writes the synthetic run and times every command of COMMANDS on it: a dict with the
    sample count, the load averages and one row per command."""
    folder = keep or tempfile.mkdtemp(prefix="fp-report-bench-")
    db = os.path.join(folder, "report.db")
    if os.path.exists(db):
        os.remove(db)
    log(f"writing {samples:,} samples into {db}")
    t0 = time.monotonic()
    written = make_database(footprint, db, samples)
    log(f"database ready in {time.monotonic() - t0:.1f} s "
        f"({os.path.getsize(db) / 2**20:.0f} MiB)")
    result = {"samples": written, "series": len(SERIES), "repeat": repeat,
              "load_start": os.getloadavg()[0], "rows": []}
    for label, args, target in COMMANDS:
        out_file = os.path.join(folder, "out")
        walls, cpus, rss, size = [], [], 0, None
        for _ in range(repeat):
            if os.path.exists(out_file):
                os.remove(out_file)
            wall, cpu, peak, size = time_command(footprint, db, args, out_file)
            walls.append(wall)
            cpus.append(cpu)
            rss = max(rss, peak)
        log(f"  footprint {label}: {statistics.median(walls):.2f} s")
        result["rows"].append({"label": label, "target_s": target, "walls_s": walls,
                               "cpu_s": statistics.median(cpus), "peak_rss": rss,
                               "output_bytes": size})
        if os.path.exists(out_file):
            os.remove(out_file)
    result["load_end"] = os.getloadavg()[0]
    if not keep:
        for f in os.listdir(folder):
            os.remove(os.path.join(folder, f))
        os.rmdir(folder)
    return result


def markdown(result):
    """The Markdown table of measure()'s result."""
    lines = ["| command | wall time (median) | all runs | CPU time (median) | peak RSS | output "
             "| target |", "|---|---:|---:|---:|---:|---:|---|"]
    for r in result["rows"]:
        median = statistics.median(r["walls_s"])
        target = r["target_s"]
        verdict = "—" if target is None else (
            f"< {target:g} s: {'met' if median < target else '**MISSED**'}")
        runs = ", ".join(f"{w:.2f}" for w in r["walls_s"])
        size = r["output_bytes"]
        out = "—" if size is None else (
            f"{size / 2**20:.0f} MiB" if size >= 2**20 else f"{size / 2**10:.0f} KiB")
        lines.append(f"| `footprint {r['label']}` | {median:.2f} s | {runs} | "
                     f"{r['cpu_s']:.2f} s | {r['peak_rss'] / 2**20:.0f} MiB | {out} | {verdict} |")
    return "\n".join(lines)


def find_footprint(build_arg, tool):
    """(build folder, footprint binary): --build, else build-bench, else build; exits with a
    message naming `tool` when there is no binary."""
    build = Path(build_arg) if build_arg else next(
        (ROOT / d for d in ("build-bench", "build") if (ROOT / d / "footprint").exists()),
        ROOT / "build")
    footprint = str(build / "footprint")
    if not os.access(footprint, os.X_OK):
        sys.exit(f"{tool}: no footprint binary in {build}; build it first (see the top of "
                 "this file)")
    return build, footprint


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default=None, help="build folder (default build-bench, else build)")
    p.add_argument("--samples", type=int, default=10_000_000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--keep", metavar="DIR", help="write the database into DIR and keep it")
    a = p.parse_args()
    build, footprint = find_footprint(a.build, "report_bench")
    result = measure(footprint, a.samples, a.repeat, a.keep)
    print(f"footprint readers on one run of {result['samples']:,} samples "
          f"({result['series']} series), median of {a.repeat} (build: {build}; "
          f"{os.cpu_count()} CPUs, load average {result['load_start']:.2f} at the start)\n")
    print(markdown(result))
    print(f"\nload average {result['load_end']:.2f} at the end. On a shared machine the wall "
          "time includes waiting for a CPU: compare the CPU time, which is what the command "
          "itself needs.")


if __name__ == "__main__":
    main()
