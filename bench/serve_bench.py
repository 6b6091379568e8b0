#!/usr/bin/python3
"""Times footprint serve's JSON API on a synthetic run of 10 M samples, and its request rate
under wrk on loopback.

    bash scripts/build build-bench -DCMAKE_BUILD_TYPE=Release -DFOOTPRINT_BUILD_TESTS=OFF
    /usr/bin/python3 bench/serve_bench.py --build build-bench [--samples 10000000] [--repeat 5]

The database is bench/report_bench.py's (make_database: 5 series of 2 M samples at 1 ms).
`footprint serve --port 0` runs on it; each request of REQUESTS is made `--repeat` times over
one kept-alive connection (the first, cold one counted too) and the report gives the median and
the largest latency and the answer's size. Then `wrk -t2 -c16 -d5s` (Debian package wrk) loads
the cheap endpoints a browser polls and prints requests/s. Both the server and the load
generator share the machine's cores, so requests/s is a floor.

bench/run_benchmarks.py runs the same measurement (measure(), markdown()) for
docs/performance.md.
"""
import argparse
import http.client
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import report_bench  # noqa: E402

ROOT = report_bench.ROOT
RUN = report_bench.RUN_ID

# (label, path). {run} is the run id, {since} 1 s before the run's end (a live poll's since).
REQUESTS = [
    ("runs list", "/api/runs?limit=100"),
    ("tree", "/api/tree"),
    ("run summary (show --json)", "/api/runs/{run}"),
    ("plot: 5 series of 2 M → 2,000 points each", "/api/plot?runs={run}&points=2000"),
    ("series, all samples → 2,000 points each", "/api/series?run={run}&points=2000"),
    ("live poll: the last second (series?since=)", "/api/series?run={run}&since={since}"),
    ("one page of 10,000 raw samples", "/api/runs/{run}/samples?series={series}&limit=10000"
     "&after=1000000000"),
    ("compare two runs", "/api/compare?sets={run},{other}"),
]
# What wrk loads: what a page polls and lists.
WRK = [
    ("/api/info", "/api/info"),
    ("live poll (series?since=)", "/api/series?run={run}&since={since}"),
    ("runs list", "/api/runs?limit=100"),
]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def start_server(footprint, db):
    proc = subprocess.Popen([footprint, "serve", "-o", db, "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    m = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
    if not m:
        proc.kill()
        sys.exit(f"serve_bench: footprint serve did not start: {line} {proc.stderr.read()}")
    return proc, int(m.group(1))


def get(con, path):
    con.request("GET", path)
    res = con.getresponse()
    body = res.read()
    if res.status != 200:
        sys.exit(f"serve_bench: {path} answered {res.status}: {body[:300]!r}")
    return body


def measure(footprint, samples, repeat, wrk_seconds=5, db=None):
    """The figures of footprint serve over report_bench's synthetic run: written here, or the
    database `db` that report_bench.measure(keep=...) left (the same run, not written twice)."""
    folder = tempfile.mkdtemp(prefix="fp-serve-bench-")
    try:
        if db is None:
            db = os.path.join(folder, "serve.db")
            log(f"writing {samples:,} samples into {db}")
            written = report_bench.make_database(footprint, db, samples)
        else:
            written = samples // len(report_bench.SERIES) * len(report_bench.SERIES)
        per_series = written // len(report_bench.SERIES)
        import sqlite3
        con = sqlite3.connect(db)
        other = con.execute("SELECT id FROM runs WHERE id != ?", (RUN,)).fetchone()[0]
        series = con.execute("SELECT id FROM series WHERE run_id = ? ORDER BY id",
                             (RUN,)).fetchone()[0]
        con.close()
        fill = {"run": RUN, "other": other, "series": series,
                "since": (per_series - 1000) * 1_000_000}
        proc, port = start_server(footprint, db)
        result = {"samples": written, "series": len(report_bench.SERIES), "repeat": repeat,
                  "load_start": os.getloadavg()[0], "rows": [], "wrk": []}
        try:
            http_con = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
            for label, path in REQUESTS:
                path = path.format(**fill)
                times, size = [], 0
                for _ in range(repeat):
                    t0 = time.monotonic()
                    size = len(get(http_con, path))
                    times.append(time.monotonic() - t0)
                log(f"  {label}: {statistics.median(times) * 1e3:.1f} ms")
                result["rows"].append({"label": label, "path": path, "times_s": times,
                                       "bytes": size})
            http_con.close()
            wrk = shutil.which("wrk")
            if wrk:
                for label, path in WRK:
                    url = f"http://127.0.0.1:{port}" + path.format(**fill)
                    out = subprocess.run([wrk, "-t2", "-c16", f"-d{wrk_seconds}s", "--latency",
                                          url], capture_output=True, text=True).stdout
                    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
                    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)", out)
                    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
                    scale = {"us": 1e-3, "ms": 1.0, "s": 1e3}
                    row = {"label": label, "path": path.format(**fill),
                           "rps": float(rps.group(1)) if rps else None,
                           "p99_ms": float(p99.group(1)) * scale[p99.group(2)] if p99 else None,
                           "non_2xx": int(errors.group(1)) if errors else 0}
                    log(f"  wrk {label}: {row['rps']} requests/s")
                    result["wrk"].append(row)
            else:
                result["wrk_missing"] = "wrk not installed (scripts/setup installs it)"
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        result["load_end"] = os.getloadavg()[0]
        return result
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def markdown(result):
    lines = ["| request | latency (median) | slowest | answer |", "|---|---:|---:|---:|"]
    for r in result["rows"]:
        size = r["bytes"]
        answer = f"{size / 2**20:.1f} MiB" if size >= 2**20 else f"{size / 2**10:.1f} KiB"
        lines.append(f"| {r['label']} (`{r['path'].split('?')[0]}`) | "
                     f"{statistics.median(r['times_s']) * 1e3:.1f} ms | "
                     f"{max(r['times_s']) * 1e3:.1f} ms | {answer} |")
    if result.get("wrk"):
        lines += ["", "| under `wrk -t2 -c16` (loopback) | requests/s | p99 latency | errors |",
                  "|---|---:|---:|---:|"]
        for w in result["wrk"]:
            lines.append(f"| {w['label']} | {w['rps']:,.0f} | {w['p99_ms']:.1f} ms | "
                         f"{w['non_2xx']} |")
    elif result.get("wrk_missing"):
        lines += ["", result["wrk_missing"]]
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default=None, help="build folder (default build-bench, else build)")
    p.add_argument("--samples", type=int, default=10_000_000)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--wrk-seconds", type=int, default=5)
    a = p.parse_args()
    build, footprint = report_bench.find_footprint(a.build, "serve_bench")
    result = measure(footprint, a.samples, a.repeat, a.wrk_seconds)
    print(f"footprint serve on one run of {result['samples']:,} samples "
          f"({result['series']} series), {a.repeat} requests each (build: {build}; "
          f"{os.cpu_count()} CPUs, load average {result['load_start']:.2f} at the start)\n")
    print(markdown(result))
    print(f"\nload average {result['load_end']:.2f} at the end.")


if __name__ == "__main__":
    main()
