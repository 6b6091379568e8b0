"""hyperfine's daily workflow in `footprint run`: parameter scans (-P, -L, -D), the hooks
around runs (--setup, --prepare, --conclude, --cleanup), --shell and -N, --output, and the
progress shown while a group runs (ETA in each run's line; a live bar on a terminal)."""
import json
import os
import re

from fp_helpers import describe, fp, on_pty, runs_json, show, single_error_line, wl


def run(db, *args, **kw):
    return fp("run", "-o", db, "--no-git", *args, **kw)


def stored_runs(db):
    """Every run's `show --json` "run" object (params, duration_s...), oldest first."""
    return [show(db, r["id"])["run"] for r in runs_json(db)]


def test_every_combination_runs_in_order_with_its_values_stored(tmp_path):
    db = tmp_path / "scan.db"
    seen = tmp_path / "seen"
    proc = run(db, "-q", "-L", "cc", "gcc,clang", "-P", "n", "1", "3", "--",
               "sh", "-c", f"echo {{cc}} {{n}} >> {seen}")
    assert proc.returncode == 0, describe(proc)
    # The first parameter varies slowest; the command saw each combination once.
    expected = [f"{cc} {n}" for cc in ("gcc", "clang") for n in (1, 2, 3)]
    assert seen.read_text().splitlines() == expected
    runs = stored_runs(db)
    assert [f"{r['params']['cc']} {r['params']['n']}" for r in runs] == expected
    assert all(r["group_id"] in ("", None) for r in runs)  # single runs: no -r
    assert runs[0]["command"] == ["sh", "-c", f"echo gcc 1 >> {seen}"]


def test_scan_of_groups_ends_with_each_against_the_fastest(tmp_path):
    """Two service times chosen here (sleep 0.05 s and 0.25 s), 3 repetitions each: the
    summary names the fastest and gives the other's ratio as the runs' own durations say."""
    db = tmp_path / "groups.db"
    proc = run(db, "-r", 3, "-D", "0.2", "-P", "t", "0.05", "0.25", "--", "sleep", "{t}")
    assert proc.returncode == 0, describe(proc)
    runs = stored_runs(db)
    assert len(runs) == 6 and len({r["group_id"] for r in runs}) == 2
    durations = {}
    for r in runs:
        durations.setdefault(r["params"]["t"], []).append(r["duration_s"])
    ratio = (sum(durations["0.25"]) / 3) / (sum(durations["0.05"]) / 3)
    err = proc.stderr
    assert "footprint: fastest: 't=0.05'" in err, err
    verdict = re.search(r"'t=0.25' ran ([0-9.]+) ± ([0-9.]+) times slower than 't=0.05'", err)
    assert verdict, err
    assert float(verdict.group(1)) == round(ratio, 2), (verdict.group(0), durations)
    groups = sorted({r["group_id"][:8] for r in runs})
    assert re.search(r"in full: footprint compare group:(\w{8}) group:(\w{8})", err), err
    for g in groups:
        assert f"group:{g}" in err


def test_bad_scans_are_refused_in_one_line_before_anything_runs(tmp_path):
    db = tmp_path / "bad.db"
    cases = {
        ("-P", "n", "3", "1", "--", "echo", "{n}"): "-P n: MIN 3 is above MAX 1",
        ("-D", "0", "-P", "n", "1", "3", "--", "echo", "{n}"): "the step -D must be above 0",
        ("-L", "x", "a,b", "--", "true"): "{x} appears neither in the command",
        ("-L", "n", "1", "-L", "n", "2", "--", "echo", "{n}"): "parameter 'n' is scanned twice",
        ("-L", "2n", "1", "--", "echo", "{2n}"): "must be letters, digits and _",
        ("--shell", "bash", "-N", "--", "true"): "--shell SHELL and -N (no shell) exclude",
        ("-N", "--setup", "echo 'open", "--", "true"): "--setup: unterminated '",
        ("-P", "n", "1", "3", "echo", "{n}"): "the command comes after --",
    }
    for args, message in cases.items():
        proc = run(db, *args)
        assert proc.returncode == 125, describe(proc)
        assert message in single_error_line(proc), (args, proc.stderr)
    assert not db.exists() or runs_json(db) == []


def test_hooks_run_in_order_and_a_failing_one_stops_the_group(tmp_path):
    db = tmp_path / "hooks.db"
    log = tmp_path / "log"
    hooks = ["--setup", f"echo setup >> {log}", "--prepare", f"echo prepare >> {log}",
             "--conclude", f"echo conclude >> {log}", "--cleanup", f"echo cleanup >> {log}"]
    proc = run(db, "-q", "-r", 2, *hooks, "--", "sh", "-c", f"echo run >> {log}")
    assert proc.returncode == 0, describe(proc)
    assert log.read_text().split() == ["setup"] + ["prepare", "run", "conclude"] * 2 + ["cleanup"]

    # The second prepare fails: one run stored, the cleanup ran, footprint exits with 9.
    log.unlink()
    proc = run(db, "-r", 3, "--prepare", f"test ! -s {log} || exit 9",
               "--cleanup", f"echo cleanup >> {log}", "--", "sh", "-c", f"echo run >> {log}")
    assert proc.returncode == 9, describe(proc)
    assert "footprint: --prepare exited with status 9 before run 2 of 3" in proc.stderr
    assert "1 of 3 repetitions" in proc.stderr and "stopped: a hook failed" in proc.stderr
    assert log.read_text().split() == ["run", "cleanup"]


def test_no_shell_runs_hooks_as_words(tmp_path):
    db = tmp_path / "words.db"
    proc = run(db, "-q", "-N", "--setup", "touch 'a b' >", "--", "true", cwd=tmp_path)
    assert proc.returncode == 0, describe(proc)
    assert (tmp_path / "a b").exists() and (tmp_path / ">").exists()  # no redirection


def test_shell_runs_the_command_line_and_names_it_after_its_first_program(tmp_path):
    db = tmp_path / "shell.db"
    out = tmp_path / "up"
    proc = run(db, "-q", "--shell", "bash", "--", f"echo hi | tr a-z A-Z > {out}")
    assert proc.returncode == 0, describe(proc)
    assert out.read_text() == "HI\n"
    (r,) = stored_runs(db)
    assert r["command"] == ["bash", "-c", f"echo hi | tr a-z A-Z > {out}"]
    assert r["name"] == "echo"


def test_output_goes_to_the_file_not_to_footprints_streams(tmp_path):
    """The command's and the hooks' output, as hyperfine's --output; footprint's own lines
    stay on its stderr."""
    db = tmp_path / "out.db"
    out = tmp_path / "output.txt"
    proc = run(db, "-r", 2, "--output", out, "--prepare", "echo hook",
               "--", "sh", "-c", "echo to-out; echo to-err >&2")
    assert proc.returncode == 0, describe(proc)
    assert out.read_text() == "hook\nto-out\nto-err\n" * 2  # the hooks' output goes there too
    assert "to-out" not in proc.stdout + proc.stderr
    assert "footprint: group" in proc.stderr  # footprint's own lines stay where they were


def test_each_runs_line_says_how_long_the_rest_will_take(tmp_path):
    proc = run(tmp_path / "eta.db", "-r", 3, "--warmup", 1, "--", wl("exit_with"), 0)
    assert proc.returncode == 0, describe(proc)
    lines = [l for l in proc.stderr.splitlines() if "exit_with ok" in l]
    assert len(lines) == 4, proc.stderr
    for line in lines[:3]:
        assert re.match(r"footprint: \[(warm-up 1/1|[12]/3), ETA \d", line), line
    assert re.match(r"footprint: \[3/3\] \S*exit_with ok", lines[3]), lines[3]


def test_a_live_bar_on_a_terminal_when_the_output_goes_elsewhere(tmp_path):
    """On a pseudo-terminal, with the command's output in a file, a bar with the runs done
    and the ETA is redrawn in place (carriage return, erase line) while the runs go on."""
    status, out = on_pty(["run", "-o", tmp_path / "bar.db", "--no-git", "-r", "3",
                          "--output", os.devnull, "--", "sleep", "0.5"])
    assert status == 0, out
    assert "\r\x1b[Kfootprint: [------------------------] 0/3 runs" in out, out
    assert re.search(r"\r\x1b\[Kfootprint: \[########-+\] 1/3 runs, ETA \d", out), out
    assert "footprint: group" in out, out
    assert out.endswith("\r\x1b[K"), repr(out[-300:])  # the bar is gone at the end
