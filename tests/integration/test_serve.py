"""`footprint serve`: the JSON API over real runs (docs/serve.md) — status codes and shapes,
the same objects as show/compare/export, filters, pagination of a large run, incremental
series, token enforcement, a corpus of malformed requests, read-only access, clean stop; and
against hostile clients: slow ones that trickle their headers hold no request thread, the Host
header is read whole, option values are range-checked."""
import hashlib
import http.client
import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import threading
import time
import urllib.parse

import pytest

from fp_helpers import FOOTPRINT, clean_env, describe, fp, run_ok, single_error_line, wl

LARGE_ID = "00000000-0000-4000-8000-00000000ba5e"
LARGE_SAMPLES = 30_000
STUCK_ID = "00000000-0000-4000-8000-0000000057c4"
XSS = "<script>alert(1)</script>"


class Served:
    """A running `footprint serve`; request() returns (status, headers, body bytes)."""

    def __init__(self, db, *args):
        self.proc = subprocess.Popen([FOOTPRINT, "serve", "-o", db, "--port", "0", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env=clean_env())
        line = self.proc.stdout.readline()
        m = re.search(r"http://([^/ ]+)/(\?token=([^ ]+))?", line)
        assert m, f"no address in {line!r}; stderr: {self.proc.stderr.read()}"
        self.banner = line
        self.host, self.port = m.group(1).rsplit(":", 1)
        self.token = m.group(3)

    def request(self, path, headers=None, method="GET"):
        address = "::1" if self.host == "[::1]" else "127.0.0.1"
        con = http.client.HTTPConnection(address, int(self.port), timeout=60)
        con.putrequest(method, path, skip_accept_encoding=True,
                       skip_host="Host" in (headers or {}))
        for k, v in (headers or {}).items():
            con.putheader(k, v)
        con.endheaders()
        res = con.getresponse()
        body = res.read()
        con.close()
        return res.status, {k.lower(): v for k, v in res.getheaders()}, body

    def get(self, path, expect=200, **params):
        query = urllib.parse.urlencode(params)
        code, headers, body = self.request(path + ("?" + query if query else ""))
        assert code == expect, (path, params, code, body[:500])
        if headers.get("content-type", "").startswith("application/json"):
            return json.loads(body)
        return body.decode()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        out, err = self.proc.communicate(timeout=30)
        return self.proc.returncode, out, err


def add_large_run(db):
    """A finished run of LARGE_SAMPLES cpu samples at 1 ms, written straight into SQLite."""
    con = sqlite3.connect(db)
    now = time.time_ns()
    with con:
        con.execute(
            "INSERT INTO runs(id, name, command, cwd, host, user, started_at_ns, ended_at_ns, "
            "status, exit_code, meta, experiment, workload) VALUES (?, 'large', '[\"synthetic\"]',"
            " '/', 'h', 'u', ?, ?, 'ok', 0, '{\"tags\": {\"size\": \"large\"}}', 'scale', 'big')",
            (LARGE_ID, now, now + LARGE_SAMPLES * 1_000_000))
        sid = con.execute("INSERT INTO series(run_id, metric, unit, entity) VALUES (?, 'cpu', "
                          "'%', 'tree')", (LARGE_ID,)).lastrowid
        con.execute(
            "WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < ?) "
            "INSERT INTO samples(series_id, t_ns, value) SELECT ?, i * 1000000, (i * 7) % 400 "
            "FROM c", (LARGE_SAMPLES - 1, sid))
        # A run still marked running whose monitor is long gone (another host, no heartbeat).
        con.execute(
            "INSERT INTO runs(id, name, command, cwd, host, user, started_at_ns, status, meta, "
            "heartbeat_ns) VALUES (?, 'stuck', '[\"x\"]', '/', 'elsewhere', 'u', ?, 'running', "
            "'{}', ?)", (STUCK_ID, now - 10**12, now - 10**12))
    con.close()
    return sid


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    d = tmp_path_factory.mktemp("serve")
    path = str(d / "fp.db")
    for name, tag in (("alpha", "kind=a"), ("beta", "kind=b"), (XSS, "kind=x")):
        run_ok(path, [wl("burn"), "1", "0.2"], "-n", name, "-i", "20ms", "--tag", tag)
    with sqlite3.connect(path) as con:
        con.execute("UPDATE runs SET experiment = 'exp1', workload = 'w1' WHERE name IN "
                    "('alpha', 'beta')")
    con.close()
    add_large_run(path)
    return path


@pytest.fixture(scope="module")
def server(db):
    s = Served(db)
    yield s
    rc, _, err = s.stop()
    assert rc == 0, err


def ids_by_name(server):
    return {r["name"]: r["id"] for r in server.get("/api/runs", limit=1000)["runs"]}


def test_info_and_security_headers(server, db):
    code, headers, body = server.request("/api/info")
    assert code == 200
    assert json.loads(body) == {"footprint": json.loads(body)["footprint"], "db": db,
                                "read_only": True, "runs": 5, "plots": True,
                                "queue": False}
    assert headers["x-content-type-options"] == "nosniff"
    csp = headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp.split("script-src")[1].split(";")[0]
    assert headers["referrer-policy"] == "no-referrer"
    assert server.banner.startswith("footprint serve: http://127.0.0.1:")


def test_runs_list_filters_and_pagination(server):
    page = server.get("/api/runs")
    assert page["total"] == 5 and page["offset"] == 0 and page["limit"] == 100
    names = [r["name"] for r in page["runs"]]
    assert names == ["large", "stuck", XSS, "beta", "alpha"] or set(names) == {
        "large", "stuck", XSS, "beta", "alpha"}
    starts = [r["started_at_ns"] for r in page["runs"]]
    assert starts == sorted(starts, reverse=True)  # newest first
    first = page["runs"][0]
    assert {"id", "name", "status", "command", "duration_s", "tags", "experiment",
            "workload"} <= set(first)
    # Pages cover the list exactly once.
    seen = []
    for offset in range(0, 5, 2):
        p = server.get("/api/runs", limit=2, offset=offset)
        assert p["total"] == 5 and len(p["runs"]) == min(2, 5 - offset)
        seen += [r["id"] for r in p["runs"]]
    assert seen == [r["id"] for r in page["runs"]]
    assert server.get("/api/runs", q="ALPH")["total"] == 1
    assert server.get("/api/runs", q="fp_burn")["total"] == 3  # the command
    assert {r["name"] for r in server.get("/api/runs", experiment="exp1")["runs"]} == \
        {"alpha", "beta"}
    assert server.get("/api/runs", experiment="exp1", workload="w1")["total"] == 2
    assert [r["name"] for r in server.get("/api/runs", tag="kind=b")["runs"]] == ["beta"]
    assert server.get("/api/runs", tag="kind")["total"] == 3
    assert server.get("/api/runs", tag="size=large")["total"] == 1
    assert {r["name"] for r in server.get("/api/runs", status="interrupted")["runs"]} == \
        {"stuck"}
    assert server.get("/api/runs", status="ok")["total"] == 4
    assert server.get("/api/runs", **{"from": "2000-01-01", "to": "2200-12-31"})["total"] == 5
    assert server.get("/api/runs", to="2000-01-01")["total"] == 0
    assert server.get("/api/runs", **{"from": "2200-01-01T00:00:00Z"})["total"] == 0


def test_tree_groups_experiments_and_workloads(server):
    tree = server.get("/api/tree")
    assert tree["total"] == 5 and not tree["truncated"]
    shape = {e["name"]: {w["name"]: sorted(r["name"] for r in w["runs"]) for w in e["workloads"]}
             for e in tree["experiments"]}
    assert shape == {"exp1": {"w1": ["alpha", "beta"]}, "scale": {"big": ["large"]},
                     "": {"": sorted([XSS, "stuck"])}}
    assert [e["name"] for e in tree["experiments"]][-1] == ""  # unnamed last
    assert server.get("/api/tree", q="beta")["experiments"][0]["workloads"][0]["runs"][0][
        "name"] == "beta"


def test_run_summary_is_show_json(server, db):
    ids = ids_by_name(server)
    proc = fp("show", "-o", db, "--json", ids["alpha"])
    assert proc.returncode == 0, describe(proc)
    shown = json.loads(proc.stdout)
    served = server.get("/api/runs/" + ids["alpha"])
    assert served["run"] == shown["run"] and served["totals"] == shown["totals"]
    assert served["metrics"] == shown["metrics"]
    assert server.get("/api/runs/" + ids["alpha"][:8])["run"]["id"] == ids["alpha"]
    assert server.get("/api/runs/beta")["run"]["name"] == "beta"
    scopes = server.get(f"/api/runs/{ids['alpha']}/scopes")
    assert scopes == {"run": ids["alpha"], "scopes": []}
    assert server.get(f"/api/runs/{ids['alpha']}/values")["values"] == []


def test_plot_downsamples_a_large_run(server):
    data = server.get("/api/plot", runs=LARGE_ID, points=500)
    (cpu,) = [m for m in data["metrics"] if m["name"] == "cpu"]
    (s,) = cpu["series"]
    assert s["count"] == LARGE_SAMPLES and 3 <= len(s["t"]) <= 500
    assert s["t"][0] == 0 and s["t"][-1] == pytest.approx((LARGE_SAMPLES - 1) / 1000)
    assert s["end_ns"] == (LARGE_SAMPLES - 1) * 1_000_000
    assert data["runs"][0]["id"] == LARGE_ID and data["totals"] is not None
    both = server.get("/api/plot", runs=f"alpha,beta", points=100)
    assert [r["name"] for r in both["runs"]] == ["alpha", "beta"]
    cpu2 = [m for m in both["metrics"] if m["name"] == "cpu"][0]
    assert sorted(s["run"] for s in cpu2["series"]) == [0, 1]


def test_a_group_name_selects_its_repetitions(tmp_path):
    """runs=NAME of a `run -r` group means its measured runs (warm-ups left out), as in the
    CLI's plot, show, compare and export."""
    db = str(tmp_path / "group.db")
    run_ok(db, ["true"], "-n", "grp", "-r", 2, "--warmup", 1)
    s = Served(db)
    try:
        data = s.get("/api/plot", runs="grp", points=100)
    finally:
        rc, _, err = s.stop()
        assert rc == 0, err
    proc = fp("runs", "-o", db, "--json")
    measured = [r["id"] for r in json.loads(proc.stdout) if r["repetition"] > 0]
    assert [r["id"] for r in data["runs"]] == measured and len(measured) == 2


def test_series_since_returns_only_newer_samples(server):
    all_ = server.get("/api/series", run=LARGE_ID, points=100_000)
    assert all_["metrics"][0]["series"][0]["count"] == LARGE_SAMPLES
    since = (LARGE_SAMPLES - 11) * 1_000_000
    tail = server.get("/api/series", run=LARGE_ID, since=since, metrics="cpu")
    (s,) = tail["metrics"][0]["series"]
    assert s["count"] == 10 and len(s["t"]) == 10
    assert s["t"][0] == pytest.approx((LARGE_SAMPLES - 10) / 1000)
    assert tail["after_ns"] == since and tail["samples"] == 10
    none = server.get("/api/series", run=LARGE_ID, since=(LARGE_SAMPLES + 5) * 1_000_000)
    assert none["metrics"][0]["series"][0]["count"] == 0


def test_samples_pages_walk_a_large_run_exactly(server, db):
    series = server.get(f"/api/runs/{LARGE_ID}/series")["series"]
    (s,) = series
    assert s["metric"] == "cpu" and s["end_ns"] == (LARGE_SAMPLES - 1) * 1_000_000
    got = []
    after = None
    pages = 0
    while True:
        params = {"series": s["id"], "limit": 7000}
        if after is not None:
            params["after"] = after
        page = server.get(f"/api/runs/{LARGE_ID}/samples", **params)
        pages += 1
        got += page["samples"]
        assert page["count"] == len(page["samples"]) <= 7000
        after = page["next_after"]
        if after is None:
            break
    assert pages == 5
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        want = con.execute("SELECT t_ns, value FROM samples WHERE series_id = ? ORDER BY t_ns",
                           (s["id"],)).fetchall()
    assert [tuple(x) for x in got] == want


def test_compare_is_compare_json(server, db):
    ids = ids_by_name(server)
    proc = fp("compare", "-o", db, "--json", ids["alpha"], ids["beta"])
    assert proc.returncode == 0, describe(proc)
    assert server.get("/api/compare", sets=f"{ids['alpha']},{ids['beta']}") == \
        json.loads(proc.stdout)
    err = server.get("/api/compare", expect=400, sets=ids["alpha"])
    assert "at least two" in err["error"]


def test_export_streams_what_the_cli_writes(server, db, tmp_path):
    ids = ids_by_name(server)
    for fmt in ("csv", "json"):
        out = tmp_path / f"e.{fmt}"
        proc = fp("export", "-o", db, "-u", ids["alpha"], ids["beta"], "--format", fmt,
                  "--out", out)
        assert proc.returncode == 0, describe(proc)
        code, headers, body = server.request(
            f"/api/export?runs={ids['alpha']},{ids['beta']}&format={fmt}")
        assert code == 200 and "attachment" in headers["content-disposition"]
        assert body == out.read_bytes()


MALFORMED = [
    ("/api/runs?limit=0", 400), ("/api/runs?limit=-5", 400), ("/api/runs?limit=1e3", 400),
    ("/api/runs?limit=99999999999999999999999", 400), ("/api/runs?offset=x", 400),
    ("/api/runs?status=sleeping", 400), ("/api/runs?from=yesterday", 400),
    ("/api/runs?to=2024-13-01", 400), ("/api/runs/nosuchrun", 404),
    ("/api/runs/" + "a" * 300, 400), ("/api/runs/%00", 404), ("/api/runs/%ff%fe%fd", 404),
    ("/api/runs/0000", 400), ("/api/runs/alpha/nothing", 404),
    ("/api/runs/alpha/samples", 400), ("/api/runs/alpha/samples?series=999999", 404),
    ("/api/runs/alpha/samples?series=1&limit=100001", 400),
    ("/api/runs/alpha/samples?series=1&after=abc", 400),
    ("/api/plot", 400), ("/api/plot?runs=", 400), ("/api/plot?runs=nosuch", 404),
    ("/api/plot?runs=alpha&points=2", 400), ("/api/plot?runs=alpha&points=100000000", 400),
    ("/api/plot?runs=alpha&points=NaN", 400), ("/api/plot?runs=alpha&metrics=nosuch", 400),
    ("/api/plot?runs=" + ",".join(["alpha"] * 65), 400),
    ("/api/plot?runs=%ff%fe", 404), ("/api/series", 400), ("/api/series?run=alpha&since=x", 400),
    ("/api/series?run=alpha&since=9223372036854775808", 400),
    ("/api/compare?sets=alpha,nosuch", 404), ("/api/compare?sets=alpha,beta&alpha=2", 400),
    ("/api/compare?sets=alpha,beta&test=guess", 400),
    ("/api/export?runs=alpha&format=xml", 400), ("/api/nothing", 404),
    ("/api/../../etc/passwd", 404), ("/assets/../../../etc/passwd", 404),
    ("/assets/%2e%2e/%2e%2e/etc/passwd", 404), ("/etc/passwd", 404), ("/assets/", 404),
    ("/api/runs?q=" + "x" * 7000, 200), ("/api/runs?q=%ff%fe%00", 200),
]


def test_malformed_requests_get_json_errors_and_never_crash(server):
    for path, want in MALFORMED:
        code, headers, body = server.request(path)
        assert code == want, (path, code, body[:300])
        doc = json.loads(body)
        if want != 200:
            assert set(doc) == {"error"} and len(doc["error"]) > 10, (path, doc)
            assert headers["content-type"].startswith("application/json"), path
    for method in ("POST", "PUT", "DELETE"):
        code, _, body = server.request("/api/runs", method=method)
        assert 400 <= code < 500 and "error" in json.loads(body), method
    code, _, _ = server.request("/api/runs?" + "q=" + "y" * 20000)  # over the URI limit
    assert code == 414
    assert server.proc.poll() is None
    assert server.get("/api/info")["runs"] == 5


def test_database_is_never_written(tmp_path, db):
    copy = tmp_path / "copy.db"
    with sqlite3.connect(db) as src, sqlite3.connect(copy) as dst:
        src.backup(dst)
    src.close()
    dst.close()
    with sqlite3.connect(copy) as con:  # the CLI tests above marked it; the server must not
        con.execute("UPDATE runs SET status = 'running' WHERE id = ?", (STUCK_ID,))
    con.close()
    digest = hashlib.sha256(copy.read_bytes()).hexdigest()
    s = Served(str(copy))
    try:
        assert s.get(f"/api/runs/{STUCK_ID}")["run"]["status"] == "interrupted"
        s.get("/api/plot", runs=STUCK_ID)
        s.get("/api/tree")
    finally:
        assert s.stop()[0] == 0
    assert hashlib.sha256(copy.read_bytes()).hexdigest() == digest
    with sqlite3.connect(f"file:{copy}?mode=ro", uri=True) as con:
        assert con.execute("SELECT status FROM runs WHERE id = ?", (STUCK_ID,)).fetchone() == \
            ("running",)
    con.close()


def test_other_hosts_need_the_token(db):
    s = Served(db, "--host", "0.0.0.0")
    try:
        assert s.token and len(s.token) == 32 and "?token=" in s.banner
        for path in ("/", "/api/info", "/assets/serve.js", "/api/runs/alpha"):
            code, headers, body = s.request(path)
            assert code == 401 and "error" in json.loads(body), path
            assert headers["www-authenticate"] == "Bearer"
        assert s.request("/api/info", {"Authorization": "Bearer " + s.token})[0] == 200
        assert s.request("/api/info", {"Authorization": "Bearer " + s.token[:-1] + "x"})[0] == 401
        assert s.request("/api/info", {"Authorization": "Bearer " + s.token + "x"})[0] == 401
        assert s.request("/api/info?token=wrong")[0] == 401
        code, headers, _ = s.request("/?token=" + s.token)
        assert code == 200
        cookie = headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
        assert s.request("/api/info", {"Cookie": cookie.split(";")[0]})[0] == 200
        assert s.request("/api/info", {"Cookie": "fp_token=nope"})[0] == 401
    finally:
        assert s.stop()[0] == 0
    given = Served(db, "--token", "sekret-token-123")  # loopback with a token: enforced too
    try:
        assert given.token == "sekret-token-123"
        assert given.request("/api/info")[0] == 401
        assert given.request("/api/info", {"Authorization": "Bearer sekret-token-123"})[0] == 200
    finally:
        given.stop()


def test_loopback_without_token_answers_only_loopback_names(server):
    # DNS rebinding: a page on evil.example points its name at 127.0.0.1, and the browser sends
    # the page's requests here, but with the page's name in Host.
    for host in ("evil.example", "evil.example:8765", "127.0.0.1.evil.example", "192.168.1.9",
                 "localhost.evil.example:80", "\x1b]0;x"):
        code, _, body = server.request("/api/runs", {"Host": host})
        assert code == 421, host
        assert "127.0.0.1, localhost or [::1]" in json.loads(body)["error"], host
        assert "\x1b" not in json.loads(body)["error"]
    for host in ("127.0.0.1", f"127.0.0.1:{server.port}", f"localhost:{server.port}", "[::1]:80"):
        assert server.request("/api/info", {"Host": host})[0] == 200, host


def raw_request(port, data, timeout=10):
    """Sends `data` (bytes, a request that asks for Connection: close) on a new connection;
    returns (status, body bytes) once the server closed it."""
    with socket.create_connection(("127.0.0.1", int(port)), timeout=timeout) as sock:
        sock.sendall(data)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), body


def test_the_host_header_is_read_whole(server):
    # Each named loopback only as a prefix, or in the second of two Host headers: a page on
    # evil.com must not get through by writing its name after one the server accepts.
    for host in (b"[::1].evil.com", b"127.0.0.1:x.evil.com", b"127.0.0.1\0evil.com",
                 b"127.0.0.1:", b"localhost:80x"):
        code, body = raw_request(server.port, b"GET /api/info HTTP/1.1\r\nHost: " + host +
                                 b"\r\nConnection: close\r\n\r\n")
        assert code == 421, host
        assert "127.0.0.1, localhost or [::1]" in json.loads(body)["error"], host
    for hosts in ((b"127.0.0.1", b"evil.com"), (b"evil.com", b"127.0.0.1"),
                  (b"127.0.0.1", b"127.0.0.1")):
        code, body = raw_request(server.port, b"GET /api/info HTTP/1.1\r\n" + b"".join(
            b"Host: " + h + b"\r\n" for h in hosts) + b"Connection: close\r\n\r\n")
        assert code == 400 and "more than one Host header" in json.loads(body)["error"], hosts
    code, _ = raw_request(server.port, b"GET /api/info HTTP/1.1\r\nHost: 127.0.0.1:" +
                          server.port.encode() + b"\r\nConnection: close\r\n\r\n")
    assert code == 200


def test_slow_clients_hold_no_request_thread(db):
    # Slowloris: more connections than request threads (32), each trickling one header line a
    # second. The token holder must still be answered at once, and each slow connection is
    # closed (408) once its request has not arrived whole within 10 s.
    s = Served(db, "--token", "slow-token")
    slow, stop, cut = [], threading.Event(), {}
    try:
        for _ in range(40):
            sock = socket.create_connection(("127.0.0.1", int(s.port)), timeout=30)
            sock.sendall(b"GET /api/info HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            slow.append((sock, time.monotonic()))

        def trickle():
            while not stop.wait(1.0):
                for sock, _ in slow:
                    if sock not in cut:
                        try:
                            sock.sendall(b"X-Slow: 1\r\n")
                        except OSError:
                            pass

        def watch(sock, opened):  # when the server closed it, and what it said
            data = b""
            try:
                while chunk := sock.recv(4096):
                    data += chunk
            except OSError:
                pass
            cut[sock] = (time.monotonic() - opened, data)

        threads = [threading.Thread(target=trickle, daemon=True)] + [
            threading.Thread(target=watch, args=w, daemon=True) for w in slow]
        for t in threads:
            t.start()
        time.sleep(1.5)  # every slow connection has begun its request
        for _ in range(6):  # a socket timeout here: the token holder waited behind them
            began = time.monotonic()
            code, _ = raw_request(s.port, b"GET /api/info HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                  b"Authorization: Bearer slow-token\r\nConnection: close\r\n"
                                  b"\r\n", timeout=3)
            assert code == 200 and time.monotonic() - began < 2
            # Requests without the token are answered too, only not before the token holder's.
            assert raw_request(s.port, b"GET /api/info HTTP/1.1\r\nConnection: close\r\n\r\n",
                               timeout=3)[0] == 401
            time.sleep(0.5)
        for t in threads[1:]:
            t.join(timeout=20)
        assert len(cut) == 40
        for elapsed, data in cut.values():
            assert 9 <= elapsed <= 14 and data.startswith(b"HTTP/1.1 408 "), (elapsed, data)
    finally:
        stop.set()
        for sock, _ in slow:
            sock.close()
        assert s.stop()[0] == 0


def test_ipv6_loopback(db):
    s = Served(db, "--host", "[::1]")
    try:
        assert s.host == "[::1]" and s.token is None
        assert s.request("/api/info")[0] == 200
    finally:
        assert s.stop()[0] == 0


def test_sigint_and_sigterm_stop_it_cleanly(db):
    for sig in (signal.SIGINT, signal.SIGTERM):
        s = Served(db)
        assert s.get("/api/info")["runs"] == 5
        s.proc.send_signal(sig)
        s.proc.wait(timeout=10)
        rc, out, err = s.stop()
        assert rc == 0 and "stopped" in out and err == "", (sig, rc, out, err)


def test_bad_options_and_databases_fail_with_one_line(db, tmp_path):
    proc = fp("serve", "-o", str(tmp_path / "none.db"), "--port", "0")
    assert proc.returncode == 3
    single_error_line(proc)
    s = Served(db)
    try:
        proc = fp("serve", "-o", db, "--port", s.port)
        assert proc.returncode == 1 and "cannot listen" in single_error_line(proc)
    finally:
        s.stop()
    proc = fp("serve", "-o", db, "--port", "70000")
    assert proc.returncode == 2
    single_error_line(proc)
    proc = fp("serve", "-o", db, "--port", "0", "--token", "has space")
    assert proc.returncode == 2
    single_error_line(proc)
    for threads in ("100000", "-1", "1025"):
        proc = fp("serve", "-o", db, "--port", "0", "--threads", threads)
        assert proc.returncode == 2, describe(proc)
        assert "--threads must be from 1 to 1024" in single_error_line(proc), threads
    one = Served(db, "--threads", "1", "--token", "t1")
    try:
        assert one.request("/api/info", {"Authorization": "Bearer t1"})[0] == 200
    finally:
        assert one.stop()[0] == 0


def test_run_does_not_load_the_web_server(db, tmp_path):
    # The server lives in a module next to the binary, loaded by `serve` only: `run` stays free
    # of cpp-httplib's OpenSSL and brotli (DESIGN.md's memory and start-up targets).
    libs = subprocess.run(["ldd", FOOTPRINT], capture_output=True, text=True).stdout
    assert "httplib" not in libs and "libssl" not in libs, libs
    env = clean_env(FOOTPRINT_SERVE_MODULE=str(tmp_path / "missing.so"))
    proc = fp("serve", "-o", db, "--port", "0", env=env)
    assert proc.returncode == 1
    assert "cannot load the web server module" in single_error_line(proc)


TABLE_NOW = time.time_ns()
# name, status, lr (a number or text), team tag, seconds before now it started, seconds long.
TABLE_RUNS = [
    ("Bravo", "ok", 0.1, "a", 900, 30),
    ("alpha", "failed", "0.01", "b", 800, 5),
    ("charlie", "ok", 0.01, "a", 700, 60),
    ("delta", "killed", 0.001, "b", 600, 1),
    ("Echo", "ok", None, "a", 500, 30),
]
# Still marked running, its monitor gone (another host, no heartbeat for an hour): it reads as
# interrupted, ended at its last heartbeat.
TABLE_STUCK = ("foxtrot", "running", 0.1, "b", 400, None)


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    """A database of runs for the runs table's sorts and filters, and its server."""
    path = str(tmp_path_factory.mktemp("table") / "fp.db")
    run_ok(path, ["true"], "-n", "golf", "-d", "the first run", "--tag", "team=a",
           "--param", "lr=0.5", "--param", "seed=7")
    with sqlite3.connect(path) as con:
        for i, (name, status, lr, team, ago, length) in enumerate(TABLE_RUNS + [TABLE_STUCK]):
            start = TABLE_NOW - ago * 10**9
            params = {} if lr is None else {"lr": lr}
            ended = None if length is None else start + length * 10**9
            heartbeat = start + 10**9 if length is None else None
            con.execute(
                "INSERT INTO runs(id, name, command, cwd, host, user, started_at_ns, ended_at_ns,"
                " status, meta, heartbeat_ns) VALUES (?, ?, ?, '/', 'elsewhere', 'u', ?, ?, ?, ?,"
                " ?)", (f"00000000-0000-4000-8000-0000000007{i:02d}", name,
                        json.dumps(["train.py", f"--Epochs={i}"]), start, ended, status,
                        json.dumps({"tags": {"team": team}, "params": params}), heartbeat))
    con.close()
    s = Served(path)
    yield s
    rc, _, err = s.stop()
    assert rc == 0, err


def names(page):
    return [r["name"] for r in page["runs"]]


def test_runs_table_sorts_by_each_column(table):
    assert names(table.get("/api/runs", sort="name", order="asc")) == [
        "alpha", "Bravo", "charlie", "delta", "Echo", "foxtrot", "golf"]  # case-blind
    assert names(table.get("/api/runs", sort="started", order="asc"))[:2] == ["Bravo", "alpha"]
    # Ties keep the newest first whichever the order: Bravo and Echo both lasted 30 s.
    by_duration = names(table.get("/api/runs", sort="duration", order="desc"))
    assert by_duration[:3] == ["charlie", "Echo", "Bravo"] and by_duration[-1] == "golf"
    assert names(table.get("/api/runs", sort="duration", order="asc"))[:3] == [
        "golf", "foxtrot", "delta"]  # the stuck run lasted until its heartbeat, 1 s
    by_status = table.get("/api/runs", sort="status", order="asc", limit=2, offset=1)
    assert by_status["total"] == 7 and names(by_status) == ["foxtrot", "delta"]  # f, i, k, ok
    assert [r["status"] for r in table.get("/api/runs", sort="status")["runs"]][:4] == [
        "ok"] * 4
    # A param sorts numbers as numbers, whether stored as text or not; runs without it last.
    assert names(table.get("/api/runs", sort="param:lr", order="asc")) == [
        "delta", "charlie", "alpha", "foxtrot", "Bravo", "golf", "Echo"]
    page = table.get("/api/runs", sort="cpu", order="desc")
    assert page["sort"] == "cpu" and page["order"] == "desc" and names(page)[0] == "golf"
    assert page["runs"][0]["figures"]["cpu_s"] > 0 and page["runs"][1]["figures"]["cpu_s"] is None
    assert page["param_keys"] == ["lr", "seed"] and page["tag_keys"] == ["team"]
    for bad in ({"sort": "colour"}, {"order": "up"}, {"sort": ""}):
        code, _, body = table.request("/api/runs?" + urllib.parse.urlencode(bad))
        assert (code, bad) == (200 if bad == {"sort": ""} else 400, bad), body
        assert code == 200 or "must be" in json.loads(body)["error"]


def test_runs_table_filters_by_params_tags_status_and_text(table):
    assert sorted(names(table.get("/api/runs", param="lr=0.01"))) == ["alpha", "charlie"]
    assert names(table.get("/api/runs", param="lr")) != [] and \
        table.get("/api/runs", param="lr")["total"] == 6
    assert table.get("/api/runs", param="lr=0.1", tag="team=b")["total"] == 1  # foxtrot
    # The search box: status:NAME, tag:KEY=VALUE and KEY=VALUE filter; other words search.
    assert names(table.get("/api/runs", q="status:failed")) == ["alpha"]
    assert names(table.get("/api/runs", q="status:interrupted")) == ["foxtrot"]
    assert table.get("/api/runs", q="status:running")["total"] == 0
    assert sorted(names(table.get("/api/runs", q="tag:team=b lr=0.1"))) == ["foxtrot"]
    assert names(table.get("/api/runs", q="status:ok lr=0.01")) == ["charlie"]
    assert names(table.get("/api/runs", q="=3")) == ["delta"]  # in a command word, any case
    assert table.get("/api/runs", q="EPOCHS")["total"] == 6
    assert names(table.get("/api/runs", q="FIRST RUN")) == ["golf"]  # the description
    assert names(table.get("/api/runs", q="0701")) == ["alpha"]  # in the id
    code, _, body = table.request("/api/runs?q=status%3Adone")
    assert code == 400 and "status must be" in json.loads(body)["error"]


def test_runs_table_pages_in_sql_as_it_sorts_in_memory(table):
    """The store's SQL answers a page unless a tag or param filter needs every run; a filter
    on a tag every run has takes the in-memory path: both must give the same pages."""
    queries = [{}, {"q": "status:interrupted"}, {"q": "status:ok"}, {"q": "train"},
               {"q": "ECHO"}, {"from": "2000-01-01"}, {"experiment": ""}]
    for sort in ("started", "name", "status", "duration"):
        for order in ("asc", "desc"):
            for query in queries:
                for offset in (0, 2):
                    params = dict(query, sort=sort, order=order, limit=3, offset=offset)
                    sql = table.get("/api/runs", **params)
                    memory = table.get("/api/runs", tag="team", **params)
                    for page in (sql, memory):
                        for run in page["runs"]:
                            run.pop("duration_s")  # a running run's grows between requests
                    assert sql == memory, params
    tree = table.get("/api/tree", q="status:interrupted")
    assert tree["total"] == 1 and tree == table.get("/api/tree", q="status:interrupted",
                                                    tag="team")


def test_a_runs_full_record(table):
    golf = table.get("/api/runs", q="golf")["runs"][0]
    record = table.get("/api/runs/" + golf["id"])
    run = record["run"]
    assert run["description"] == "the first run" and run["exit_code"] == 0
    assert run["tags"] == {"team": "a"} and run["params"] == {"lr": "0.5", "seed": "7"}
    assert run["command"] == ["true"] and run["cwd"] and run["host"] and run["user"]
    assert {"hardware", "monitor", "footprint_version", "sources"} <= set(record["meta"])
    assert record["totals"]["monitor_cpu_s"] > 0  # footprint's own cost
    stuck = table.get("/api/runs/" + "00000000-0000-4000-8000-000000000705")["run"]
    assert stuck["status"] == "interrupted" and stuck["duration_s"] == pytest.approx(1)


def test_a_runs_artifacts_download_as_recorded_and_nothing_else(tmp_path):
    """/api/runs/RUN/artifacts/NAME hands out the file a run recorded under NAME, whole, to a
    read token; a name it did not record (a path among them), a file changed or gone since,
    and a request without a token get no file."""
    db = str(tmp_path / "fp.db")
    run_ok(db, ["/bin/true"], "-n", "traced")
    payload = os.urandom(300_000)  # larger than one chunk of the answer
    (tmp_path / "trace.json").write_bytes(payload)
    (tmp_path / "changed.bin").write_bytes(b"0123456789")
    (tmp_path / "secret").write_bytes(b"not an artifact")
    with sqlite3.connect(db) as con:
        (run_id,) = con.execute("SELECT id FROM runs WHERE name = 'traced'").fetchone()
        # The rows a run's artifacts get (footprint.Benchmark.artifact, a profiler's traces).
        con.executemany("INSERT INTO artifacts(run_id, name, path, sha256, size) VALUES "
                        "(?, ?, ?, ?, ?)",
                        [(run_id, "torch/trace 1.json", str(tmp_path / "trace.json"),
                          hashlib.sha256(payload).hexdigest(), len(payload)),
                         (run_id, "changed", str(tmp_path / "changed.bin"), "", 20),
                         (run_id, "gone", str(tmp_path / "gone.bin"), "", 5)])
    con.close()
    tokens = tmp_path / "tokens"
    tokens.write_text("read bob bob-0123456789abcdef\n")
    s = Served(db, "--tokens", str(tokens))
    read = {"Authorization": "Bearer bob-0123456789abcdef"}
    base = f"/api/runs/{run_id}/artifacts/"
    try:
        code, headers, body = s.request(base + urllib.parse.quote("torch/trace 1.json", safe=""),
                                        read)
        assert code == 200 and body == payload, (code, len(body))
        assert headers["content-disposition"] == 'attachment; filename="trace_1.json"'
        assert headers["content-type"] == "application/octet-stream"
        assert s.request(base + "torch%2Ftrace%201.json")[0] == 401  # no token
        for name in ("..%2F..%2F" + "secret", urllib.parse.quote(str(tmp_path / "secret"), safe=""),
                     "secret", ""):
            code, _, body = s.request(base + name, read)
            assert code == 404 and b"not an artifact" not in body, (name, body)
            assert "has no artifact named" in json.loads(body)["error"]
        code, _, body = s.request(base + "changed", read)
        assert code == 409 and "has 10 bytes, not the recorded 20" in json.loads(body)["error"]
        code, _, body = s.request(base + "gone", read)
        assert code == 404 and "is gone" in json.loads(body)["error"]
    finally:
        assert s.stop()[0] == 0
