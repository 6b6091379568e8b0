"""footprint load --mlperf-log DIR: MLPerf's log files, read the way MLPerf's own tools read
them (tools/submission/log_parser.py of mlcommons/inference: each line of the detail log that
starts with ':::MLLOG' is json.loads of the rest, key -> value, the first of a key winning;
the submission checker's regular expressions on the summary), checked against the run."""
import json
import re

import pytest

from fp_helpers import describe, fp, show, wl


def mlperf_detail(path):
    """log_parser.MLPerfLog's reading of a detail log: {key: value of its first message}, and
    the messages."""
    marker = ":::MLLOG"
    messages = []
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f):
            line = line.rstrip()
            if i == 0:
                assert line.find(marker) == 0, line
            if line.find(marker) == 0:
                messages.append(json.loads(line[len(marker):]))
    values = {}
    for m in messages:
        assert set(m) >= {"key", "value", "time_ms", "namespace", "event_type", "metadata"}
        values.setdefault(m["key"], m["value"])
    return values, messages


def summary_fields(path):
    """The submission checker's reading of a summary log: validity and `name : value` pairs."""
    valid, fields = False, {}
    for line in path.read_text().splitlines():
        valid = valid or bool(re.match(r"^Result\s+is\s*\:\s+VALID", line))
        m = re.match(r"^\s*([\w\s.\(\)\/]+)\s*\:\s*([\w\+\.][\w\+\.\s]*)", line)
        if m:
            fields[m.group(1).strip()] = m.group(2).strip()
    return valid, fields


def run(tmp_path, scenario, *options, mode="fixed"):
    logs = tmp_path / "logs"
    logs.mkdir()
    db = tmp_path / "m.db"
    proc = fp("load", "-o", db, "--no-git", "-q", "--scenario", scenario, "--mlperf-log", logs,
              *options, "--", wl("sut"), mode, 2, 4, tmp_path / "sut.log")
    assert proc.returncode == 0, describe(proc)
    return show(db)["load"], logs


@pytest.mark.parametrize("scenario, options, result_key, expect_valid", [
    ("single", ["--min-queries", "80", "--duration", "0s"], "early_stopping_latency_ss", True),
    # 500 queries: LoadGen's early stopping needs 459 under the bound for a p99 claim
    ("server", ["--qps", "500", "--min-queries", "500", "--duration", "0s",
                "--latency-bound", "100ms", "--sample-seed", "5", "--seed", "6"],
     "result_completed_samples_per_sec", True),
    ("server", ["--qps", "200", "--min-queries", "300", "--duration", "0s",
                "--latency-bound", "1ms"], "result_completed_samples_per_sec", False),
    ("offline", ["--min-queries", "64"], "result_samples_per_second", True),
])
def test_mlperf_logs_read_as_mlperfs_tools_read_them(tmp_path, scenario, options, result_key,
                                                     expect_valid):
    load, logs = run(tmp_path, scenario, *options)
    o = load["options"]
    values, messages = mlperf_detail(logs / "mlperf_log_detail.txt")
    names = {"single": "SingleStream", "server": "Server", "offline": "Offline"}
    assert values["effective_scenario"] == names[scenario]
    assert values["effective_test_mode"] == "PerformanceOnly"
    assert values["result_validity"] == ("VALID" if expect_valid else "INVALID")
    assert (load["validity"] in (None, "valid")) == expect_valid
    assert values["early_stopping_met"] == load["early_stopping_met"]
    assert values["result_query_count"] == load["queries"]
    assert values["effective_sample_index_rng_seed"] == o["sample_seed"]
    assert values["effective_schedule_rng_seed"] == o["seed"]
    assert values["effective_performance_sample_count"] == o["performance_sample_count"]
    assert values["effective_min_query_count"] == o["min_queries"]
    assert values["result_samples_per_second"] == pytest.approx(load["samples_per_s"])
    for name, percent in [("p50", "50.00"), ("p90", "90.00"), ("p99", "99.00")]:
        assert values[f"result_{percent}_percentile_latency_ns"] == \
            round(load["latency_s"][name] * 1e9)
    estimate = load["early_stopping_estimate_s"]
    expected = {"early_stopping_latency_ss": round(estimate * 1e9) if estimate else 0,
                "result_completed_samples_per_sec": pytest.approx(load["samples_per_s"]),
                "result_samples_per_second": pytest.approx(load["samples_per_s"])}
    assert values[result_key] == expected[result_key]
    assert not [m for m in messages if m["metadata"]["is_error"]]
    valid, fields = summary_fields(logs / "mlperf_log_summary.txt")
    assert valid == expect_valid
    assert fields["Scenario"] == names[scenario] and fields["Mode"] == "PerformanceOnly"
    assert int(fields["sample_index_rng_seed"]) == o["sample_seed"]
    assert int(fields["performance_sample_count"]) == o["performance_sample_count"]
    assert int(fields["99.00 percentile latency (ns)"]) == round(load["latency_s"]["p99"] * 1e9)
    assert not (logs / "mlperf_log_accuracy.json").exists()


def test_accuracy_mode_logs_its_mode_and_the_accuracy_file(tmp_path):
    answers = tmp_path / "answers.txt"
    answers.write_text("".join(f"label-{i}\n" for i in range(12)))
    load, logs = run(tmp_path, "single", "--mode", "accuracy", "--answers", answers,
                     mode="accuracy")
    values, _ = mlperf_detail(logs / "mlperf_log_detail.txt")
    assert values["effective_test_mode"] == "AccuracyOnly"
    _, fields = summary_fields(logs / "mlperf_log_summary.txt")
    assert fields["Mode"] == "AccuracyOnly"
    assert float(fields["Accuracy"]) == pytest.approx(load["accuracy"]["fraction"]) == 9 / 12
    assert len(json.loads((logs / "mlperf_log_accuracy.json").read_text())) == 12
