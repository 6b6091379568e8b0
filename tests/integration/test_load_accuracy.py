"""footprint load's accuracy mode and sample order, against fp_sut: in accuracy mode every
sample of the answers file is issued once and the command's RESULTs are scored (the SUT answers
a known fraction right, so the score is known exactly) and written as MLPerf's
mlperf_log_accuracy.json; in performance mode the sample indices are drawn uniformly from the
performance sample set with their own seed, apart from the schedule's."""
import collections
import json
import sys

import pytest

from fp_helpers import (HTTP_SUT, clean_env, describe, fp, free_port, load_queries, show,
                        single_error_line, wl)


def answers_file(tmp_path, count):
    path = tmp_path / "answers.txt"
    path.write_text("".join(f"label-{i}\n" for i in range(count)))
    return path


def run_load(db, tmp_path, *options, wrong_every=4, expect_rc=0):
    proc = fp("load", "-o", db, "--no-git", *options, "--", wl("sut"), "accuracy", 1, 2,
              tmp_path / "sut.log", env=clean_env(SUT_WRONG_EVERY=str(wrong_every)))
    assert proc.returncode == expect_rc, describe(proc)
    s = show(db)
    return proc, s, load_queries(db, s["run"]["id"])


@pytest.mark.parametrize("scenario, per_query, count, wrong_every", [
    ("single", 1, 40, 4),   # indices 0, 4, ..., 36 wrong: 30 of 40 right
    ("multi", 8, 30, 3),    # 0, 3, ..., 27 wrong: 20 of 30 right; the last query has 6
    ("offline", 1, 50, 5),  # 40 of 50
])
def test_accuracy_mode_scores_every_sample_once(tmp_path, scenario, per_query, count,
                                                wrong_every):
    db = tmp_path / "accuracy.db"
    logs = tmp_path / "mlperf"
    logs.mkdir()
    proc, s, queries = run_load(
        db, tmp_path, "--scenario", scenario, "--samples-per-query", per_query, "--mode",
        "AccuracyOnly", "--answers", answers_file(tmp_path, count), "--mlperf-log", logs,
        wrong_every=wrong_every)
    wrong = len(range(0, count, wrong_every))
    right = count - wrong
    load = s["load"]
    assert load["options"]["mode"] == "accuracy"
    assert load["accuracy"] == {"samples": count, "correct": right, "fraction": right / count}
    assert s["totals"]["load_accuracy"] == right / count
    assert f"accuracy: {100 * right / count:.2f} % ({right} of {count} samples" in proc.stderr
    issued = [i for q in queries.values() for i in q["sample_indices"]]
    assert sorted(issued) == list(range(count))  # every sample once, whatever the duration
    assert all(len(q["sample_indices"]) <= per_query for q in queries.values())
    log = json.loads((logs / "mlperf_log_accuracy.json").read_text())
    assert sorted(e["seq_id"] for e in log) == list(range(count))
    by_index = {e["qsl_idx"]: bytes.fromhex(e["data"]).decode() for e in log}
    assert by_index == {i: "wrong" if i % wrong_every == 0 else f"label-{i}"
                        for i in range(count)}


def sample_indices(db, tmp_path, *options):
    _, s, queries = run_load(db, tmp_path, "--duration", "0s", *options)
    return [i for q in queries.values() for i in q["sample_indices"]], s


def test_sample_indices_are_uniform_over_the_performance_set_and_seeded_apart(tmp_path):
    server = ["--scenario", "server", "--qps", "2000", "--min-queries", "600",
              "--performance-sample-count", "10"]
    first, s = sample_indices(tmp_path / "a.db", tmp_path, *server, "--sample-seed", "3")
    assert s["load"]["options"]["performance_sample_count"] == 10
    assert s["load"]["options"]["sample_seed"] == 3
    counts = collections.Counter(first)
    assert set(counts) == set(range(10))
    # Pearson's chi-square, 9 degrees of freedom: 27.9 is its 0.999 quantile.
    expected = len(first) / 10
    assert sum((c - expected) ** 2 / expected for c in counts.values()) < 27.9
    again, _ = sample_indices(tmp_path / "b.db", tmp_path, *server, "--sample-seed", "3",
                              "--seed", "9")
    assert again == first  # another schedule, the same sample order
    other, _ = sample_indices(tmp_path / "c.db", tmp_path, *server, "--sample-seed", "4")
    assert other != first


def test_the_answers_set_the_performance_sample_count(tmp_path):
    indices, s = sample_indices(tmp_path / "a.db", tmp_path, "--min-queries", "50", "--answers",
                                answers_file(tmp_path, 7))
    assert s["load"]["options"]["performance_sample_count"] == 7
    assert set(indices) <= set(range(7)) and "accuracy" not in s["load"]


@pytest.mark.parametrize("options, message", [
    (["--mode", "accuracy"], "--mode accuracy scores the command's answers: give --answers"),
    (["--mode", "sometimes"], "unknown --mode 'sometimes'"),
    (["--mlperf-log", "/nonexistent/logs"], "is not a folder: create it first"),
    (["--performance-sample-count", "-3"], "--performance-sample-count must be at least 1"),
    (["--answers", "/nonexistent/answers.txt"], "answers file"),
])
def test_bad_accuracy_options_are_one_line_and_nothing_runs(tmp_path, options, message):
    db = tmp_path / "bad.db"
    proc = fp("load", "-o", db, *options, "--", "true")
    assert proc.returncode == 2, describe(proc)
    assert message in single_error_line(proc)
    assert not db.exists()


@pytest.mark.parametrize("scenario, streamed, count, wrong_every", [
    ("offline", 0, 40, 4),  # a text/plain body: 30 of 40 right
    ("multi", 1, 30, 3),    # server-sent events, two per sample: 20 of 30 right
])
def test_accuracy_mode_over_http_scores_each_body(tmp_path, scenario, streamed, count,
                                                  wrong_every):
    db = tmp_path / "http-accuracy.db"
    port = free_port()
    proc = fp("load", "-o", db, "--no-git", "--scenario", scenario, "--samples-per-query", 4,
              "--mode", "accuracy", "--answers", answers_file(tmp_path, count), "--http",
              f"http://127.0.0.1:{port}/", "--", sys.executable, HTTP_SUT, "accuracy", port,
              tmp_path / "sut.log", wrong_every, streamed, env=clean_env())
    assert proc.returncode == 0, describe(proc)
    s = show(db)
    right = sum(1 for i in range(count) if i % wrong_every)
    assert s["load"]["accuracy"] == {"samples": count, "correct": right,
                                     "fraction": right / count}
    queries = load_queries(db, s["run"]["id"])
    issued = sorted(i for q in queries.values() for i in q["sample_indices"])
    assert issued == list(range(count))
    for q in queries.values():  # each RESULT is the body (or the events' data joined) as sent
        assert q["result"] == ",".join("wrong" if i % wrong_every == 0 else f"label-{i}"
                                       for i in q["sample_indices"])
