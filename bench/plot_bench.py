#!/usr/bin/python3
"""footprint plot on a synthetic run of many samples (DESIGN.md: < 2 s for 10 M samples).

    /usr/bin/python3 bench/plot_bench.py --build build [--samples 10000000] [--series 4]
                                         [--reps 3] [--db FILE] [--json]

Makes (once; --db keeps it for later runs) a database holding one real run (`footprint run --
true`, so the schema and run row are footprint's own) plus SERIES series of SAMPLES/SERIES
samples at 100 Hz inserted straight into SQLite (a sine with noise and spikes), then times
`footprint plot -u synthetic --out FILE` REPS times and prints the median and best wall time,
footprint's peak RSS, the page's size and the points drawn per series. --raw-limit 0 is the
default page (drawn points only in its CSV, as any page over 200,000 samples)."""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

METRICS = [("cpu", "%"), ("memory", "bytes"), ("io.read", "bytes/s"), ("threads", "count"),
           ("sys.cpu", "%"), ("sys.memory", "bytes"), ("io.write", "bytes/s"), ("processes", "count")]


def make_db(fp, db, samples, series):
    env = dict(os.environ)
    env.pop("FOOTPRINT_DB", None)
    subprocess.run([fp, "run", "-o", db, "-q", "-n", "synthetic", "-m", "cpu", "--no-git", "--",
                    "true"], check=True, env=env)
    import sqlite3
    con = sqlite3.connect(db)
    (run_id,) = con.execute("SELECT id FROM runs WHERE name = 'synthetic'").fetchone()
    con.execute("DELETE FROM samples WHERE series_id IN (SELECT id FROM series WHERE run_id=?)",
                (run_id,))
    con.execute("DELETE FROM series WHERE run_id = ?", (run_id,))
    per_series = samples // series
    for metric, unit in METRICS[:series]:
        cur = con.execute("INSERT INTO series(run_id, metric, unit, entity) VALUES (?,?,?,?)",
                          (run_id, metric, unit, "tree"))
        sid = cur.lastrowid
        # 100 Hz: t = k * 10 ms; a slow sine, a fast ripple, and a spike every 100,000 samples.
        con.execute(
            "WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i + 1 < ?) "
            "INSERT INTO samples(series_id, t_ns, value) "
            "SELECT ?, i * 10000000, 50 + 40 * sin(i / 50000.0) + (i % 7) "
            "       + CASE WHEN i % 100000 = 99999 THEN 500 ELSE 0 END FROM k",
            (per_series, sid))
    end_ns = per_series * 10_000_000
    con.execute("UPDATE run_totals SET value = ? WHERE run_id = ? AND name = 'duration_s'",
                (end_ns / 1e9, run_id))
    con.commit()
    con.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--samples", type=int, default=10_000_000)
    ap.add_argument("--series", type=int, default=4, choices=range(1, len(METRICS) + 1))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--raw-limit", type=int, default=0)
    ap.add_argument("--points", type=int, default=4000)
    ap.add_argument("--db", help="database to make once and reuse")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()
    fp = os.path.abspath(os.path.join(args.build, "footprint"))
    tmp = tempfile.mkdtemp(prefix="fp-plot-bench-")
    db = args.db or os.path.join(tmp, "synthetic.db")
    if not os.path.exists(db):
        t0 = time.monotonic()
        make_db(fp, db, args.samples, args.series)
        print(f"made {db}: {args.samples:,} samples in {args.series} series "
              f"({os.path.getsize(db) / 2**20:.0f} MiB) in {time.monotonic() - t0:.1f} s",
              file=sys.stderr)
    out = os.path.join(tmp, "plot.html")
    times, rss = [], []
    for _ in range(args.reps):
        t0 = time.monotonic()
        proc = subprocess.Popen([fp, "plot", "-o", db, "-u", "synthetic", "--out", out,
                                 "--points", str(args.points), "--raw-limit", str(args.raw_limit)],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        times.append(time.monotonic() - t0)
        rss.append(usage.ru_maxrss * 1024)
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"footprint plot failed ({status})")
    with open(out, encoding="utf-8") as f:
        page = f.read()
    start = page.index('id="fp-data">') + len('id="fp-data">')
    data = json.loads(page[start:page.index("</script>", start)])
    counts = [s["count"] for m in data["metrics"] for s in m["series"]]
    drawn = [len(s["t"]) for m in data["metrics"] for s in m["series"]]
    figures = {
        "samples": sum(counts), "series": len(counts), "median_s": statistics.median(times),
        "best_s": min(times), "peak_rss_bytes": max(rss), "html_bytes": os.path.getsize(out),
        "points_per_series": max(drawn), "target_s": 2.0,
    }
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        print(f"footprint plot: {figures['samples']:,} samples in {figures['series']} series -> "
              f"median {figures['median_s']:.2f} s (best {figures['best_s']:.2f} s, target "
              f"< 2 s), peak RSS {figures['peak_rss_bytes'] / 2**20:.1f} MiB, page "
              f"{figures['html_bytes'] / 2**20:.2f} MiB, <= {figures['points_per_series']} "
              f"points per series")


if __name__ == "__main__":
    main()
