"""footprint load --http: the command runs an HTTP server (tests/workloads/http_sut.py, which
logs when it received each query, sent its first byte and finished, on the run's timeline: the
ground truth). Checked: streamed answers (server-sent events) give the time to first token and
per output token within 2 % of the server's own plus the measured transport overhead; every
query's times are in the order they happened; the server stopped with SIGTERM at the end is an
ok run; HTTP errors are counted and make the load invalid; a server that dies mid-load, one that
never listens (told, and given up after --ready-timeout: the transport's wait is tested
exactly on a driven clock in tests/unit/http_response_test.cc), and a URL that is not a valid
http:// URL each get one clear line."""
import subprocess
import sys
import time

import pytest

from fp_helpers import (FOOTPRINT, HTTP_SUT as SUT, clean_env, describe, fp, free_port,
                        load_queries, nearest_rank, show, single_error_line)


def load(tmp_path, mode, args, *options, expect_rc=0):
    db, log, port = tmp_path / f"{mode}.db", tmp_path / f"{mode}.log", free_port()
    proc = fp("load", "-o", db, "--no-git", "-q", *options, "--http",
              f"http://127.0.0.1:{port}/v1/generate", "--", sys.executable, SUT, mode, port, log,
              *args)
    assert proc.returncode == expect_rc, describe(proc)
    truth = {}
    for line in log.read_text().splitlines():
        qid, received, first, done = map(int, line.split())
        truth[qid] = {"received_ns": received, "first_ns": first, "done_ns": done}
    s = show(db)
    queries = load_queries(db, s["run"]["id"])
    return {"show": s, "truth": truth, "queries": queries, "proc": proc}


def test_streamed_answers_give_time_to_first_token_and_per_token(tmp_path):
    tokens = 10
    r = load(tmp_path, "stream", (20, 5, tokens), "--scenario", "server", "--qps", 40,
             "--duration", "2s", "--min-queries", 60)
    s = r["show"]
    assert s["run"]["status"] == "ok" and s["run"]["exit_code"] == 0  # stopped by footprint
    load_ = s["load"]
    assert load_["queries"] == load_["issued"] == len(r["truth"]) >= 60
    assert load_["tokens"] == tokens * load_["queries"] and load_["failed"] == 0
    ttft, tpot, ttft_truth, tpot_truth, ttft_over, late_first, late_end = ([] for _ in range(7))
    for qid, t in r["truth"].items():
        q = r["queries"][qid]
        assert q["tokens"] == tokens
        assert q["scheduled_ns"] <= q["issued_ns"] <= t["received_ns"] <= t["first_ns"] <= \
            q["first_byte_ns"] <= t["done_ns"] <= q["completed_ns"], (qid, q, t)
        ttft.append((q["first_byte_ns"] - q["scheduled_ns"]) / 1e9)
        ttft_truth.append((t["first_ns"] - t["received_ns"]) / 1e9)
        ttft_over.append(ttft[-1] - ttft_truth[-1])  # issuing, connecting, the way back
        tpot.append((q["completed_ns"] - q["first_byte_ns"]) / 1e9 / (tokens - 1))
        tpot_truth.append((t["done_ns"] - t["first_ns"]) / 1e9 / (tokens - 1))
        # A first token read late shortens the span measured, a last one read late lengthens it.
        late_first.append((q["first_byte_ns"] - t["first_ns"]) / 1e9 / (tokens - 1))
        late_end.append((q["completed_ns"] - t["done_ns"]) / 1e9 / (tokens - 1))
    for name, p in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99)):
        assert load_["ttft_s"][name] == pytest.approx(nearest_rank(ttft, p), abs=1e-9)
        assert load_["tpot_s"][name] == pytest.approx(nearest_rank(tpot, p), abs=1e-9)
        truth = nearest_rank(ttft_truth, p)
        assert truth * 0.98 <= load_["ttft_s"][name] <= truth * 1.02 + max(ttft_over), name
        truth = nearest_rank(tpot_truth, p)
        assert truth * 0.98 - max(late_first) <= load_["tpot_s"][name] <= \
            truth * 1.02 + max(late_end), name
    # 20 ms to the first token, 5 ms a token after it, as the server was told.
    assert 0.020 <= load_["ttft_s"]["p50"] and 0.005 <= load_["tpot_s"]["p50"]
    totals = s["totals"]
    assert totals["load_ttft_p50_s"] == load_["ttft_s"]["p50"]
    assert totals["load_tpot_p99_s"] == load_["tpot_s"]["p99"]
    text = fp("show", "-o", tmp_path / "stream.db").stdout
    assert "time to first token (from the scheduled time): p50 " in text
    assert "time per output token after the first: p50 " in text


def test_http_errors_are_counted_and_make_the_load_invalid(tmp_path):
    r = load(tmp_path, "error", (1,), "--scenario", "single", "--duration", "0.3s",
             "--min-queries", 20, "--latency-bound", "1s")
    load_ = r["show"]["load"]
    failed = [qid for qid in r["queries"] if qid % 4 == 3]
    assert load_["failed"] == len(failed) and load_["queries"] == load_["issued"] - len(failed)
    assert all(r["queries"][qid]["failed"] and r["queries"][qid]["latency_s"] is None
               for qid in failed)
    assert load_["first_failure"].startswith("query 3: HTTP/1.") and "500" in \
        load_["first_failure"]
    assert load_["validity"] == "invalid"
    warnings = [l for l in r["proc"].stderr.splitlines() if "failed, e.g." in l]
    assert len(warnings) == 1 and f"{len(failed)} queries failed" in warnings[0]


def test_a_server_that_dies_ends_the_load_and_keeps_what_was_measured(tmp_path):
    r = load(tmp_path, "die", (1,), "--scenario", "single", "--duration", "5s", expect_rc=3)
    s = r["show"]
    assert s["run"]["status"] == "failed" and s["run"]["exit_code"] == 3
    assert s["load"]["queries"] == 10 == len(r["truth"])
    assert s["load"]["ended_because"].startswith("the server (the command) exited after answering 10")
    assert "footprint: warning: the load ended early: the server (the command) exited" in \
        r["proc"].stderr


def test_a_command_that_never_listens_gets_no_query(tmp_path):
    db = tmp_path / "deaf.db"
    proc = fp("load", "-o", db, "--no-git", "--http", f"http://127.0.0.1:{free_port()}/",
              "--", "sleep", "0.3")
    assert proc.returncode == 0, describe(proc)
    assert "the command exited before its server took a connection" in proc.stderr
    assert show(db)["load"]["issued"] == 0


def test_a_server_that_never_listens_is_told_and_given_up(tmp_path):
    db, url = tmp_path / "deaf.db", f"http://127.0.0.1:{free_port()}/v1"
    began = time.monotonic()
    proc = subprocess.Popen([FOOTPRINT, "load", "-o", db, "--no-git", "-q", "--ready-timeout",
                             "6s", "--http", url, "--", "sleep", "60"], stderr=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, text=True, env=clean_env())
    lines = [(time.monotonic() - began, line) for line in proc.stderr]
    assert proc.wait(timeout=60) == 125, lines
    waiting = [(t, l) for t, l in lines if f"waiting for the server at {url} to take a" in l]
    assert len(waiting) == 1 and "6.000 s (--ready-timeout)" in waiting[0][1], lines
    given_up = [(t, l) for t, l in lines if "the load never started" in l]
    assert len(given_up) == 1 and given_up[0][0] >= 6 and waiting[0][0] < given_up[0][0], lines
    assert f"the server at {url} took no connection within 6.000 s (--ready-timeout" in \
        given_up[0][1]
    s = show(db)  # stopped by footprint, yet not an ok run: the load never started
    assert s["run"]["status"] == "killed" and s["load"]["issued"] == 0


@pytest.mark.parametrize("url, message", [
    ("https://127.0.0.1:8443/", "is not an http:// URL"),
    ("http://no-such-host.invalid:80/", "cannot be resolved"),
    ("http://127.0.0.1:99999/", "has no valid port"),
    ("http://127.0.0.1:0/", "has no valid port"),
    ("http://127.0.0.1:80x/", "has no valid port"),
    ("http://127.0.0.1:/", "has no valid port"),
    ("http://[::1/", "unclosed '['"),
    ("http://[::1]x/", "has no valid port"),
    ("http://:8000/", "names no host"),
    ("http://user@127.0.0.1:8000/", "a user"),
    ("http://127.0.0.1:8000/a b", "a space or a control character"),
    ("http://127.0.0.1:8000/a#b", "has a fragment"),
])
def test_a_bad_url_is_one_line_and_nothing_runs(tmp_path, url, message):
    db = tmp_path / "bad.db"
    proc = fp("load", "-o", db, "--http", url, "--", "true")
    assert proc.returncode == 2, describe(proc)
    assert message in single_error_line(proc)
    assert not db.exists()
