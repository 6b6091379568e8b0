#!/usr/bin/python3
"""The PostgreSQL store against its targets (issue "Beyond one machine"), each next to a
baseline measured in the same run, on a throwaway server (tests/cluster/pg_server.py):

1. ingest: 32 runs writing at once through Store::Append (fp_store_ingest), every sample
   counted back; into PostgreSQL each run's writes go through its local buffer, as footprint
   run's do; baseline: the same load into one SQLite file;
2. reading a run of 10 M samples: `footprint show` and `footprint plot` from PostgreSQL;
   baseline: the same run in SQLite;
3. bytes per sample: footprint's chunks against MLflow's metrics table (its schema as
   mlflow/store/tracking/dbmodels/models.py declares it) loaded with the same samples.

Writes its section of docs/performance.md (between the cluster-bench markers) or prints it:

    /usr/bin/python3 bench/cluster_bench.py --build build [--out -]

With --many-runs N, only this (its own section, cluster-many-runs): N concurrent `footprint
run`s on this machine against a server of 100 connection slots, none refused, none lost (each
run's stored samples against its own sampler's count), the samples stored per second, and the
server's client connections over time (pg_stat_activity every 0.25 s), never more than the
writers (one shipper each):

    /usr/bin/python3 bench/cluster_bench.py --build build --many-runs 256
"""
import argparse
import json
import os
import pathlib
import resource
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "cluster"))
from pg_server import Postgres  # noqa: E402

from doc_block import machine, write_block  # noqa: E402

# MLflow's metrics table, as its SQLAlchemy model declares it (PostgreSQL types).
MLFLOW_METRICS = """
CREATE TABLE metrics (
  key VARCHAR(250) NOT NULL, value DOUBLE PRECISION NOT NULL, timestamp BIGINT NOT NULL,
  step BIGINT NOT NULL DEFAULT 0, is_nan BOOLEAN NOT NULL DEFAULT false,
  run_uuid VARCHAR(32) NOT NULL,
  CONSTRAINT metric_pk PRIMARY KEY (key, timestamp, step, run_uuid, value, is_nan));
CREATE INDEX index_metrics_run_uuid ON metrics (run_uuid);
"""


def ingest(binary, location, runs, series, samples, batch):
    out = subprocess.run([binary, location, str(runs), str(series), str(samples), str(batch)],
                         capture_output=True, text=True, timeout=1800)
    if out.returncode != 0:
        sys.exit(f"fp_store_ingest {location}: {out.stderr}")
    return json.loads(out.stdout)


def timed(cmd):
    """(wall seconds, CPU seconds of the child) of one command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: {proc.stderr}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def best_of(n, cmd):
    return min((timed(cmd) for _ in range(n)), key=lambda r: r[0])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--out", default=str(ROOT / "docs" / "performance.md"),
                    help="the Markdown file whose cluster-bench section is rewritten ('-': print)")
    ap.add_argument("--quick", action="store_true", help="1 M samples instead of 10 M")
    ap.add_argument("--many-runs", type=int, default=0, metavar="N",
                    help="only N concurrent runs against 100 connection slots")
    args = ap.parse_args()
    build = pathlib.Path(args.build)
    if args.many_runs:
        write_block(args.out, "cluster-many-runs",
                    many_runs(str(build / "footprint"), args.many_runs, seconds=20))
        return
    fp, ingest_bin = str(build / "footprint"), str(build / "bench" / "fp_store_ingest")
    long_samples = 100_000 if args.quick else 1_000_000  # per series, 10 series
    server = Postgres()
    tmp = tempfile.mkdtemp(prefix="fp-cluster-bench-")
    os.environ["FOOTPRINT_BUFFER_DIR"] = f"{tmp}/buffers"  # writes to the server go through them
    try:
        # 1. Ingest: 32 runs x 10 series x 10,000 samples, 500 per series per write.
        pg_ingest, sqlite_ingest = [], []
        for rep in range(3):
            pg_ingest.append(ingest(ingest_bin, server.create_database(f"ingest{rep}"),
                                    32, 10, 10_000, 500))
            sqlite_ingest.append(ingest(ingest_bin, f"{tmp}/ingest{rep}.db", 32, 10, 10_000, 500))
        # 2. One run of 10 x long_samples, written as footprint's writer would.
        pg_long = server.create_database("long")
        long_db = f"{tmp}/long.db"
        pg_write = ingest(ingest_bin, pg_long, 1, 10, long_samples, 500)
        sqlite_write = ingest(ingest_bin, long_db, 1, 10, long_samples, 500)
        run_id = pg_write["run_ids"][0]
        reads = {}
        for name, db in (("PostgreSQL", pg_long), ("SQLite", long_db)):
            reads[name] = {
                "show": best_of(3, [fp, "show", "-o", db, run_id]),
                "plot": best_of(3, [fp, "plot", "-o", db, "-u", run_id, "--no-menu", "--out",
                                    f"{tmp}/plot.html"]),
            }
        # 3. Bytes per sample: the first 100,000 samples of each series in MLflow's table.
        samples = pg_write["samples"]
        [[chunk_bytes]] = server.sql("SELECT pg_total_relation_size('sample_chunks')", "long")
        server.sql(MLFLOW_METRICS, "long")
        # fp_store_ingest's samples: time (k + 1) ms, value k % 977, for each series m0..m9.
        server.sql(
            "INSERT INTO metrics (key, value, timestamp, step, run_uuid) "
            "SELECT 'system/m' || s, k % 977, k + 1, k, "
            f"'{run_id.replace('-', '')}' FROM generate_series(0, 9) s, "
            "generate_series(0, 99999) k", "long")
        [[mlflow_rows]] = server.sql("SELECT count(*) FROM metrics", "long")
        [[mlflow_bytes]] = server.sql("SELECT pg_total_relation_size('metrics')", "long")
        sizes = {
            "footprint, PostgreSQL (chunks)": int(chunk_bytes) / samples,
            "footprint, SQLite": os.path.getsize(long_db) / samples,
            "MLflow's metrics table, PostgreSQL": int(mlflow_bytes) / int(mlflow_rows),
        }
    finally:
        server.close()
        subprocess.run(["rm", "-rf", tmp])
    text = report(pg_ingest, sqlite_ingest, pg_write, sqlite_write, reads, sizes, long_samples)
    write_block(args.out, "cluster-bench", text)


def client_connections(server, database):
    """The server's client connections now, the asking one left out; None when it has no slot
    left to ask with."""
    try:
        [[n]] = server.sql("SELECT count(*) - 1 FROM pg_stat_activity "
                           "WHERE backend_type = 'client backend'", database)
        return int(n)
    except AssertionError:
        return None


def many_runs(fp, runs, seconds):
    """`runs` concurrent runs of `sleep SECONDS` (sampled every 100 ms) into a server of 100
    slots; a Markdown section of what happened."""
    server = Postgres()
    tmp = tempfile.mkdtemp(prefix="fp-many-runs-")
    env = dict(os.environ, FOOTPRINT_BUFFER_DIR=f"{tmp}/buffers")
    env.pop("FOOTPRINT_DB", None)
    try:
        server.stop()
        server.start(max_connections=100, superuser_reserved_connections=0)
        uri = server.create_database("many")
        start = time.monotonic()
        procs = [subprocess.Popen([fp, "run", "-o", uri, "-q", "--no-git", "--", "sleep",
                                   str(seconds)], env=env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True) for _ in range(runs)]
        counts = []
        while any(p.poll() is None for p in procs):
            counts.append(client_connections(server, "many"))
            time.sleep(0.25)
        wall = time.monotonic() - start
        refused = [p.stderr.read() for p in procs if p.returncode != 0]
        stored = dict(server.sql("SELECT s.run_id, sum(c.n) FROM sample_chunks c JOIN series s "
                                 "ON s.id = c.series_id GROUP BY 1", "many"))
        metas = server.sql("SELECT id, meta FROM runs", "many")
        lost = sum(json.loads(meta)["monitor"]["writer"]["samples_written"] -
                   int(stored.get(run, 0)) for run, meta in metas)
        left = os.listdir(f"{tmp}/buffers") if os.path.isdir(f"{tmp}/buffers") else []
        with open(server.log) as log:
            full = log.read().count("too many clients")
    finally:
        server.close()
        subprocess.run(["rm", "-rf", tmp])
    seen = [c for c in counts if c is not None]
    total = sum(int(n) for n in stored.values())
    return "\n".join([
        f"{runs} concurrent `footprint run -- sleep {seconds}` (100 ms sampling) on "
        f"{machine()}, into PostgreSQL with `max_connections=100`:",
        "",
        "| | |",
        "|---|---|",
        f"| runs refused (exit ≠ 0) | {len(refused)} |",
        f"| runs stored | {len(metas)} of {runs} |",
        f"| samples lost (written by a run's writer, not on the server) | {lost} |",
        f"| buffers left behind | {len(left)} |",
        f"| samples stored | {total:,} in {wall:.1f} s: {total / wall:,.0f} samples/s |",
        f"| client connections, polled every 0.25 s | max {max(seen)}, mean "
        f"{sum(seen) / len(seen):.1f}, median {median(seen):.0f} (of {runs} writers) |",
        f"| polls the server could not answer (no slot) | {len(counts) - len(seen)} |",
        f"| connections it refused (its log's `too many clients`) | {full} |",
        "",
        f"Reproduce: `/usr/bin/python3 bench/cluster_bench.py --build build --many-runs {runs}`.",
    ])


def median(values):
    values = sorted(values)
    return values[len(values) // 2]


def report(pg_ingest, sqlite_ingest, pg_write, sqlite_write, reads, sizes, long_samples):
    rate = lambda runs: median(r["samples_per_s"] for r in runs)  # noqa: E731
    lost = sum(r["lost"] for r in pg_ingest + sqlite_ingest + [pg_write, sqlite_write])
    total = 10 * long_samples
    lines = [
        "## PostgreSQL store (`bench/cluster_bench.py`)",
        "",
        f"Measured {time.strftime('%Y-%m-%d')} on this machine with a throwaway PostgreSQL "
        "(`fsync=off`, socket only, `tests/cluster/pg_server.py`); every figure next to SQLite "
        "measured in the same run. Reproduce: `/usr/bin/python3 bench/cluster_bench.py "
        "--build build`.",
        "",
        "| what | PostgreSQL | SQLite (baseline) | target |",
        "|---|---|---|---|",
        f"| ingest, 32 runs writing at once (3.2 M samples; into PostgreSQL through their local buffers; median of 3) | "
        f"{rate(pg_ingest) / 1e3:.0f} k samples/s | {rate(sqlite_ingest) / 1e3:.0f} k samples/s "
        "| ≥ 200 k samples/s, nothing lost |",
        f"| samples lost (read back and counted) | {lost} | | 0 |",
        f"| writing one run of {total / 1e6:.0f} M samples | {pg_write['seconds']:.1f} s | "
        f"{sqlite_write['seconds']:.1f} s | |",
    ]
    for what, target in (("show", "< 2 s"), ("plot", "< 2 s")):
        pg, lite = reads["PostgreSQL"][what], reads["SQLite"][what]
        lines.append(f"| `footprint {what}` of that run (wall, CPU; best of 3) | {pg[0]:.2f} s, "
                     f"{pg[1]:.2f} s | {lite[0]:.2f} s, {lite[1]:.2f} s | {target} |")
    lines += [
        "",
        "| bytes per sample (the same samples) | bytes |",
        "|---|---|",
    ]
    lines += [f"| {name} | {value:.1f} |" for name, value in sizes.items()]
    lines += [
        "",
        "MLflow writes one row per value (key, value, timestamp, step, is_nan, run_uuid) under a "
        "six-column primary key and a run index; footprint's PostgreSQL store writes one row per "
        "series per flush with the times and values packed as bytes (docs/cluster.md).",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
