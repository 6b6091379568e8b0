#!/usr/bin/python3
"""Times footprint serve's pages in Chromium and its JSON API on a synthetic run of 10 M
samples, and its request rate under wrk on loopback.

The pages (measure_pages, PAGES): the landing, one run and four runs of 1 M samples, opened in
headless Chromium (Debian's, through the build's playwright-core) with the time to showing
them (Navigation Timing), the requests, the bytes and the server's CPU per load, against the
budgets of issue 47; then what compressing an API answer costs a client not on loopback.
`--pages-only` measures only these.

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
import json
import os
import re
import shutil
import socket
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


# The pages a person opens, in headless Chromium: (label, URL fragment, budget in seconds, what
# the page shows once it is done: `runs` runs listed, or a chart of `series` series).
PAGES = [
    ("landing (20 runs)", "", 1.0, {"runs": 20}),
    ("one run of 1 M samples", "#run={big0}", 1.5, {"series": 1}),
    ("four runs of 1 M samples", "#run={big0}&run={big1}&run={big2}&run={big3}", 3.0,
     {"series": 4}),
]
# Server CPU per landing, at most (issue 47).
LANDING_CPU_BUDGET_S = 0.05

# Opens each of config.pages `repeat` times in a fresh browser context (an empty cache: a first
# visit), then once more in the same context (a return visit), and prints per load, as JSON:
# the time from navigation start (Navigation Timing's time origin) to the page showing what it
# was opened for, DOMContentLoaded and load, the requests made, the bytes received and the CPU
# time the server's threads used meanwhile (/proc/PID/task/*/schedstat, in ns).
PAGE_JS = r"""
const fs = require('fs');
const {chromium} = require('playwright-core');
const config = JSON.parse(process.argv[1]);
const serverCpuNs = () => fs.readdirSync(`/proc/${config.pid}/task`).reduce((sum, t) => {
  try {
    return sum + Number(fs.readFileSync(`/proc/${config.pid}/task/${t}/schedstat`, 'utf8')
                          .split(' ')[0]);
  } catch (e) {
    return sum;  // a thread that ended
  }
}, 0);
async function load(context, url, shown, visit) {
  const page = await context.newPage();
  let requests = 0;
  page.on('request', () => requests++);
  const cpu0 = serverCpuNs();
  await page.goto(url);
  const shownMs = await (await page.waitForFunction((want) => {
    const app = window.footprintServe;
    if (!app || !app.ready) return false;
    const done = want.runs ?
        document.querySelectorAll('.fp-run-check, #fp-runs tbody tr').length >= want.runs :
        app.describe().some((c) => c.kind === 'timeseries' && c.series.length === want.series);
    return done && performance.now();
  }, shown, {timeout: 60000, polling: 10})).jsonValue();
  const cpuNs = serverCpuNs() - cpu0;
  const timing = await page.evaluate(() => {
    const n = performance.getEntriesByType('navigation')[0];
    const bytes = performance.getEntriesByType('resource').reduce(
        (sum, r) => sum + r.transferSize, n.transferSize);
    return {dcl: n.domContentLoadedEventEnd, load: n.loadEventEnd, bytes};
  });
  await page.close();
  return {visit, shown_ms: shownMs, dcl_ms: timing.dcl, load_ms: timing.load, requests,
          bytes: timing.bytes, server_cpu_ms: cpuNs / 1e6};
}
(async () => {
  const browser = await chromium.launch({executablePath: config.chromium, headless: true,
                                         args: ['--no-sandbox', '--disable-gpu']});
  const out = [];
  try {
    for (const p of config.pages) {
      const loads = [];
      for (let i = 0; i < config.repeat; i++) {
        const context = await browser.newContext({viewport: {width: 1366, height: 900}});
        loads.push(await load(context, config.url + p.fragment, p.shown, 'first'));
        if (i === 0) loads.push(await load(context, config.url + p.fragment, p.shown, 'return'));
        await context.close();
      }
      out.push({label: p.label, loads});
    }
  } finally {
    await browser.close();
  }
  console.log(JSON.stringify(out));
})().catch((e) => { console.error(String(e.stack || e)); process.exit(1); });
"""


def make_page_database(footprint, db, samples):
    """20 runs: report_bench's synthetic run of `samples` samples, three copies of it, and 16
    runs of `true` recorded by footprint. Returns the four big runs' ids."""
    report_bench.make_database(footprint, db, samples)
    import sqlite3
    con = sqlite3.connect(db)
    big = [RUN] + [RUN[:-1] + str(i) for i in range(1, 4)]
    with con:
        for i, run in enumerate(big[1:], 1):
            con.execute("INSERT INTO runs(id, name, command, cwd, host, user, started_at_ns, "
                        "ended_at_ns, status, exit_code, meta) SELECT ?, name || ?, command, cwd, "
                        "host, user, started_at_ns, ended_at_ns, status, exit_code, meta "
                        "FROM runs WHERE id = ?", (run, f"-{i}", RUN))
            con.execute("INSERT INTO run_totals(run_id, name, value) SELECT ?, name, value "
                        "FROM run_totals WHERE run_id = ?", (run, RUN))
            for (series,) in con.execute("SELECT id FROM series WHERE run_id = ? ORDER BY id",
                                         (RUN,)).fetchall():
                copy = con.execute("INSERT INTO series(run_id, metric, unit, entity) SELECT ?, "
                                   "metric, unit, entity FROM series WHERE id = ?",
                                   (run, series)).lastrowid
                con.execute("INSERT INTO samples(series_id, t_ns, value) SELECT ?, t_ns, value "
                            "FROM samples WHERE series_id = ?", (copy, series))
    con.close()
    for _ in range(15):
        subprocess.run([footprint, "run", "-o", db, "-q", "--no-git", "--", "true"], check=True)
    return big


def measure_pages(footprint, samples, repeat):
    """The pages of PAGES opened in headless Chromium (Debian's, through the build's
    playwright-core), with the server's CPU per load; None (and why, logged) without them."""
    build = Path(footprint).parent
    chromium = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    node = shutil.which("node")
    modules = build / "web" / "node_modules"
    if not (node and os.access(chromium, os.X_OK) and (modules / "playwright-core").is_dir()):
        log(f"serve_bench: no page timings: they need node, Chromium at {chromium} and "
            f"{modules}/playwright-core (scripts/setup installs them)")
        return None
    folder = tempfile.mkdtemp(prefix="fp-serve-pages-")
    try:
        db = os.path.join(folder, "pages.db")
        log(f"writing 20 runs, four of {samples:,} samples, into {db}")
        big = make_page_database(footprint, db, samples)
        proc, port = start_server(footprint, db)
        try:
            fill = {f"big{i}": run for i, run in enumerate(big)}
            config = {"url": f"http://127.0.0.1:{port}/", "pid": proc.pid, "repeat": repeat,
                      "chromium": chromium,
                      "pages": [{"label": label, "fragment": fragment.format(**fill),
                                 "shown": shown} for label, fragment, _, shown in PAGES]}
            out = subprocess.run([node, "-e", PAGE_JS, json.dumps(config)], capture_output=True,
                                 text=True, env=dict(os.environ, NODE_PATH=str(modules)))
            if out.returncode != 0:
                sys.exit(f"serve_bench: the browser failed: {out.stderr[-2000:]}")
            pages = json.loads(out.stdout)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        for page, (_, _, budget, _) in zip(pages, PAGES):
            page["budget_s"] = budget
        encodings = time_api_encodings(footprint, db, f"/api/plot?runs={big[0]}&points=2000",
                                       repeat)
        return {"samples": samples, "repeat": repeat, "pages": pages, "encodings": encodings}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def own_address():
    """This machine's address on its network (not loopback), or None."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("10.255.255.255", 1))  # no packet is sent: it only picks a route
            address = s.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") else address


def time_api_encodings(footprint, db, path, repeat):
    """The median time and the size of `path` answered uncompressed and as gzip (httplib's
    level) to a client that is not on loopback, which is when the server compresses: what
    compressing the API costs and saves."""
    address = own_address()
    if address is None:
        return []
    proc = subprocess.Popen([footprint, "serve", "-o", db, "--host", address, "--port", "0",
                             "--token", "bench"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        port = int(re.search(r":(\d+)/", proc.stdout.readline()).group(1))
        rows = []
        for encoding in ("identity", "gzip"):
            con = http.client.HTTPConnection(address, port, timeout=300)
            times = []
            for _ in range(repeat):
                t0 = time.monotonic()
                con.request("GET", path, headers={"Authorization": "Bearer bench",
                                                  "Accept-Encoding": encoding})
                body = con.getresponse().read()
                times.append(time.monotonic() - t0)
            con.close()
            rows.append({"encoding": encoding, "path": path, "ms": statistics.median(times) * 1e3,
                         "bytes": len(body)})
        return rows
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def pages_markdown(result):
    """The table of measure_pages' figures: medians of the first visits, and the return one."""
    lines = ["| page (Chromium) | shown, first visit (median) | budget | return visit | "
             "DOMContentLoaded | requests | received | server CPU per load | per request |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for index, page in enumerate(result["pages"]):
        first = [load for load in page["loads"] if load["visit"] == "first"]
        back = next(load for load in page["loads"] if load["visit"] == "return")

        def median(key):
            return statistics.median(load[key] for load in first)
        shown = median("shown_ms")
        verdict = "met" if shown <= page["budget_s"] * 1e3 else "**missed**"
        cpu = f"{median('server_cpu_ms'):.1f} ms"
        if index == 0:  # the landing
            met = median("server_cpu_ms") <= LANDING_CPU_BUDGET_S * 1e3
            cpu += f" (< {LANDING_CPU_BUDGET_S * 1e3:.0f} ms: {'met' if met else '**missed**'})"
        lines.append(
            f"| {page['label']} | {shown:.0f} ms | < {page['budget_s']:g} s ({verdict}) | "
            f"{back['shown_ms']:.0f} ms | {median('dcl_ms'):.0f} ms | {median('requests'):.0f} | "
            f"{median('bytes') / 2**10:.0f} KiB | {cpu} | "
            f"{median('server_cpu_ms') / median('requests'):.2f} ms |")
    if result.get("encodings"):
        lines += ["", "| API answer to a client not on loopback | time (median) | size |",
                  "|---|---:|---:|"]
        for e in result["encodings"]:
            lines.append(f"| `{e['path'].split('?')[0]}` of one run, {e['encoding']} | "
                         f"{e['ms']:.1f} ms | {e['bytes'] / 2**10:.0f} KiB |")
    return "\n".join(lines)


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
    p.add_argument("--page-samples", type=int, default=1_000_000,
                   help="samples of each big run of the page timings")
    p.add_argument("--pages-only", action="store_true", help="only the page timings")
    a = p.parse_args()
    build, footprint = report_bench.find_footprint(a.build, "serve_bench")
    pages = measure_pages(footprint, a.page_samples, a.repeat)
    if pages:
        print(f"footprint serve's pages in Chromium, {a.repeat} first visits each (build: "
              f"{build}; {os.cpu_count()} CPUs)\n")
        print(pages_markdown(pages) + "\n")
    if a.pages_only:
        return
    result = measure(footprint, a.samples, a.repeat, a.wrk_seconds)
    print(f"footprint serve on one run of {result['samples']:,} samples "
          f"({result['series']} series), {a.repeat} requests each (build: {build}; "
          f"{os.cpu_count()} CPUs, load average {result['load_start']:.2f} at the start)\n")
    print(markdown(result))
    print(f"\nload average {result['load_end']:.2f} at the end.")


if __name__ == "__main__":
    main()
