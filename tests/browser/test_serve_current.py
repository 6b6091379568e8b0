"""`footprint serve` stays current while other processes write, and sends its page fast
(issue 47, points 1 and 2).

The page's traffic is replayed over HTTP, as the issue reproduced it: samples downloaded, then
rounds of 48 concurrent API requests (the server's pool of database connections grows), each
followed by `footprint run -o fp.db -- true` from another process while a live run keeps
writing samples. In 100 of 100 rounds the new run is listed, counted and found within 2 s, the
live run's newest stored sample is served within 2 s, and every request is answered 200. After,
the server holds no deleted -wal or -shm file open and PRAGMA integrity_check says ok.

The page and its files go out as they were compressed at build time (Brotli or gzip, as the
client accepts, the same bytes once decoded), each file named by the page with ?v=VERSION and
cached for good, the page itself revalidated by its ETag (304); 20 downloads of echarts.min.js
as Brotli cost the server under 50 ms of CPU (compressing it at each request cost 2.5 s); the
API's answers are not compressed on loopback.

A browser adds nothing here: what goes stale is the server's view of the database, which the
page only reads through these requests, and the headers are the server's.

Environment (set by CTest, tests/CMakeLists.txt): FOOTPRINT_BIN, FP_WORKLOADS.
"""
import gzip
import http.client
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from fp_helpers import FOOTPRINT, clean_env, connect, env_problem, run_ok, wait_for, wl  # noqa: E402

pytestmark = pytest.mark.skipif(env_problem() is not None, reason=str(env_problem()))

ROUNDS = 100
CONCURRENT = 48
FRESH_WITHIN_S = 2.0


def fetch(port, path, **headers):
    """(response, body bytes) of GET path on a connection of its own."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        return response, response.read()
    finally:
        conn.close()


def get(port, path):
    """(status, parsed JSON body) of GET path."""
    response, body = fetch(port, path)
    return response.status, (json.loads(body) if body else None)


def server_cpu_ns(pid):
    """CPU time the process's threads have used (their schedstat), in ns."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/schedstat") as f:
            total += int(f.read().split()[0])
    return total


@pytest.fixture
def served(tmp_path):
    """The port and the process of `footprint serve` on a database of one run."""
    db = str(tmp_path / "fp.db")
    run_ok(db, ["true"], "-n", "one")
    server = subprocess.Popen([FOOTPRINT, "serve", "-o", db, "--port", "0"], env=clean_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        yield int(re.search(r"http://127\.0\.0\.1:(\d+)/", server.stdout.readline()).group(1)), server
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=30)


def newest_live_sample_ns(db, live_id):
    """The newest sample the live run has stored, read by SQLite in this process."""
    with connect(db) as con:
        (t,) = con.execute("SELECT max(t_ns) FROM samples JOIN series ON series.id = series_id "
                           "WHERE run_id = ?", (live_id,)).fetchone()
    con.close()
    return t or 0


def served_newest_sample_ns(port, live_id):
    status, body = get(port, f"/api/runs/{live_id}/series")
    assert status == 200, body
    return max((s["end_ns"] or 0 for s in body["series"]), default=0)


def within(seconds, predicate):
    """Seconds until predicate() held, or None when it did not within `seconds`."""
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        if predicate():
            return time.monotonic() - start
        time.sleep(0.02)
    return None


def deleted_side_files(pid):
    """The -wal and -shm files the process holds open although they were deleted."""
    held = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except FileNotFoundError:
            continue
        if re.search(r"-(wal|shm) \(deleted\)$", target):
            held.append(target)
    return held


def test_new_and_live_runs_appear_within_2_s(tmp_path):
    db = str(tmp_path / "fp.db")
    run_ok(db, [wl("burn"), "1", "0.5"], "-n", "downloaded", "-i", "5ms")
    env = clean_env()
    live = subprocess.Popen([FOOTPRINT, "run", "-o", db, "-q", "-n", "live", "-i", "50ms", "--",
                             "/bin/sleep", "300"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    server = subprocess.Popen([FOOTPRINT, "serve", "-o", db, "--port", "0"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        port = int(re.search(r"http://127\.0\.0\.1:(\d+)/", server.stdout.readline()).group(1))

        def live_id():
            with connect(db) as con:
                row = con.execute("SELECT id FROM runs WHERE name = 'live'").fetchone()
            con.close()
            return row and row[0]

        live_run = wait_for(live_id, 30, "the live run")
        status, series = get(port, "/api/runs/downloaded/series")
        assert status == 200, series
        page = [f"/api/runs/downloaded/samples?series={s['id']}&limit=100000"
                for s in series["series"]]
        requests = (["/api/info", "/api/runs", "/api/tree", f"/api/runs/{live_run}"] + page)
        requests = [requests[i % len(requests)] for i in range(CONCURRENT)]
        late, failed = [], []
        with ThreadPoolExecutor(CONCURRENT) as pool:
            for round_ in range(ROUNDS):
                answers = list(pool.map(lambda path: (path, get(port, path)[0]), requests))
                failed += [f"round {round_}: {path} {code}" for path, code in answers
                           if code != 200]
                name = f"new-{round_}"
                run_ok(db, ["true"], "-n", name)
                expected_runs = round_ + 3  # downloaded, live and the new ones
                seen = within(FRESH_WITHIN_S, lambda: (
                    get(port, f"/api/runs/{name}")[0] == 200
                    and get(port, "/api/info")[1]["runs"] == expected_runs))
                stored = newest_live_sample_ns(db, live_run)
                live_seen = within(FRESH_WITHIN_S,
                                   lambda: served_newest_sample_ns(port, live_run) >= stored)
                if seen is None or live_seen is None:
                    late.append(f"round {round_}: new run seen after {seen} s, live run's "
                                f"sample at {stored} ns after {live_seen} s")
        assert not failed, f"{len(failed)} requests not answered 200: {failed[:5]}"
        assert not late, f"{len(late)} of {ROUNDS} rounds not current within " \
                         f"{FRESH_WITHIN_S} s: {late[:5]}"
        assert deleted_side_files(server.pid) == []
    finally:
        server.send_signal(signal.SIGINT)
        live.send_signal(signal.SIGINT)
        server.wait(timeout=30)
        live.wait(timeout=30)
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    con.close()


def test_assets_compressed_at_build_time_and_cached(served):
    port, server = served
    response, page = fetch(port, "/")
    assert response.getheader("Cache-Control") == "no-cache"
    assets = re.findall(r'"(/assets/[a-z.]+)\?v=([0-9a-f]{16})"', page.decode())
    assert {path for path, _ in assets} == {"/assets/echarts.min.js", "/assets/charts.js",
                                            "/assets/serve.js", "/assets/queue.js", "/assets/plot.css",
                                            "/assets/serve.css"}
    for path, version in [("/", None)] + assets:
        url = path + (f"?v={version}" if version else "")
        plain, identity = fetch(port, url)
        zipped, gzipped = fetch(port, url, **{"Accept-Encoding": "gzip"})
        best, _ = fetch(port, url, **{"Accept-Encoding": "gzip, deflate, br"})
        assert plain.status == zipped.status == best.status == 200, url
        assert plain.getheader("Content-Encoding") is None, url
        assert zipped.getheader("Content-Encoding") == "gzip", url
        assert gzip.decompress(gzipped) == identity, url
        assert best.getheader("Content-Encoding") == "br", url
        etags = {r.getheader("ETag") for r in (plain, zipped, best)}
        assert len(etags) == 3 and all(re.fullmatch(r'"[0-9a-f]{16}(\.gz|\.br)?"', e)
                                       for e in etags), (url, etags)
        for r in (plain, zipped, best):
            # One Cache-Control: never no-store beside max-age.
            assert r.msg.get_all("Cache-Control") == [
                "public, max-age=31536000, immutable" if version else "no-cache"], url
            assert r.getheader("Vary") == "Accept-Encoding", url
        again, body = fetch(port, url, **{"Accept-Encoding": "gzip, br",
                                          "If-None-Match": best.getheader("ETag")})
        assert again.status == 304 and body == b"", url
    # Sent as compressed at build time: 20 downloads of the charting library cost the server
    # little CPU (compressing it at each request cost 2.5 s of CPU a download).
    library = next(f"{path}?v={version}" for path, version in assets if "echarts" in path)
    cpu0 = server_cpu_ns(server.pid)
    for _ in range(20):
        response, body = fetch(port, library, **{"Accept-Encoding": "gzip, deflate, br"})
        assert response.status == 200 and len(body) > 100_000
    assert server_cpu_ns(server.pid) - cpu0 < 50e6
    # The API on loopback: not compressed, and not cached.
    response, body = fetch(port, "/api/runs", **{"Accept-Encoding": "gzip, deflate, br"})
    assert response.status == 200 and response.getheader("Content-Encoding") is None
    assert response.msg.get_all("Cache-Control") == ["no-store"]
    assert json.loads(body)["runs"][0]["name"] == "one"
