"""footprint load -r N: N runs of one load stored as one group, as `run -r` stores them, so
that `show group:` gives the statistics of the load's figures over the repetitions; -r with a
sweep or --find-peak (which make runs of their own) is refused with one line."""
import pytest

from fp_helpers import describe, fp, runs_json, show, single_error_line, wl


def test_repetitions_of_a_load_are_one_group(tmp_path):
    db = tmp_path / "group.db"
    proc = fp("load", "-o", db, "--no-git", "-q", "-r", 3, "--scenario", "single", "--duration",
              "0s", "--min-queries", 20, "--", wl("sut"), "fixed", 1, 1, tmp_path / "sut.log")
    assert proc.returncode == 0, describe(proc)
    runs = runs_json(db)
    assert len(runs) == 3 and len({r["group_id"] for r in runs}) == 1
    assert sorted(r["repetition"] for r in runs) == [1, 2, 3]
    group_id = runs[0]["group_id"]
    assert f"group {group_id}: 3 of 3 repetitions" in proc.stderr
    group = show(db, "group:last")
    assert group["group"]["id"] == group_id and group["group"]["planned_repetitions"] == 3
    assert group["figures"]["load_queries"]["values"] == [20.0, 20.0, 20.0]
    assert group["figures"]["load_latency_p90_s"]["n"] == 3
    for run in runs:  # each repetition is a whole load run of its own
        assert show(db, run["id"])["load"]["queries"] == 20


@pytest.mark.parametrize("options, message", [
    (["-r", "0"], "-r takes 1 to"),
    (["-r", "2", "--scenario", "server", "--qps", "10,20"], "-r repeats one load"),
    (["-r", "2", "--find-peak", "--scenario", "server", "--latency-bound", "5ms"],
     "-r and --find-peak each make a group"),
])
def test_bad_repetitions_are_one_line_and_nothing_runs(tmp_path, options, message):
    db = tmp_path / "bad.db"
    proc = fp("load", "-o", db, *options, "--", "true")
    assert proc.returncode == 2, describe(proc)
    assert message in single_error_line(proc)
    assert not db.exists()
