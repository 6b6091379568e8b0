"""The terminal summary of `show`: units for people, sparklines only on a UTF-8 terminal,
colour only on a terminal and never with NO_COLOR (https://no-color.org), --json clean.
A pseudo-terminal stands in for a real one."""
import json
import subprocess
import textwrap

import pytest

from fp_helpers import (FOOTPRINT, TIMEOUT_S, clean_env, describe, fp, on_pty, run_ok, runs_json,
                        show, wl)

BARS = set("▁▂▃▄▅▆▇█")


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    db = tmp_path_factory.mktemp("term") / "fp.db"
    run_ok(db, [wl("touch_memory"), 64, 0.5], "-i", "20ms", "--no-git")
    run_ok(db, ["true"], "-r", 3, "--no-git")
    return db


def test_sparklines_and_colour_on_a_utf8_terminal(db):
    status, out = on_pty(["show", "-o", db, runs_first(db)], LANG="C.UTF-8", NO_COLOR="")
    assert status == 0, out
    lines = {l.split()[0]: l for l in out.splitlines() if l.strip() and l.startswith("  ")}
    for metric in ("cpu", "memory"):
        assert BARS & set(lines[metric]), lines[metric]
    assert not BARS & set(lines["sys.cpu"])  # only the main series get one
    assert "trend" in out
    assert "\x1b[" in out  # headings in bold: a terminal, and NO_COLOR empty does not count


def runs_first(db):
    proc = fp("runs", "-o", db, "--json")
    return json.loads(proc.stdout)[0]["id"]


def test_no_color_turns_colour_off_but_keeps_sparklines(db):
    status, out = on_pty(["show", "-o", db, runs_first(db)], LANG="C.UTF-8", NO_COLOR="1")
    assert status == 0, out
    assert "\x1b[" not in out
    assert BARS & set(out)
    status, out = on_pty(["show", "-o", db, "group:last"], LANG="C.UTF-8", NO_COLOR="1")
    assert status == 0 and "\x1b[" not in out and BARS & set(out), out  # runs' sparkline


def test_no_sparklines_without_utf8_or_when_asked(db):
    for args, env in (([], {"LANG": "C", "LC_ALL": "C"}),
                      (["--no-sparklines"], {"LANG": "C.UTF-8"})):
        status, out = on_pty(["show", "-o", db, runs_first(db), *args], **env)
        assert status == 0, out
        assert not BARS & set(out), (args, env, out)
        assert "trend" not in out


def test_no_decoration_when_not_a_terminal(db):
    proc = fp("show", "-o", db, runs_first(db), env=clean_env(LANG="C.UTF-8"))
    assert proc.returncode == 0, describe(proc)
    assert "\x1b[" not in proc.stdout and not BARS & set(proc.stdout)
    forced = fp("show", "-o", db, runs_first(db), "--color", "always",
                env=clean_env(LANG="C.UTF-8"))
    assert "\x1b[1m" in forced.stdout


def test_json_on_a_terminal_is_plain_json(db):
    for spec in (runs_first(db), "group:last"):
        status, out = on_pty(["show", "-o", db, spec, "--json", "--color", "always"],
                             LANG="C.UTF-8")
        assert status == 0, out
        assert "\x1b[" not in out and not BARS & set(out)
        json.loads(out)
    status, out = on_pty(["compare", "-o", db, "group:last", runs_first(db), "--json"],
                         LANG="C.UTF-8")
    assert status == 0 and "\x1b[" not in out, out
    json.loads(out)


def test_units_are_scaled_for_people(db):
    out = fp("show", "-o", db, runs_first(db)).stdout
    # touch_memory 64: a peak of at least 64 MiB, shown in MiB, never as a bare byte count.
    peak = next(l for l in out.splitlines() if l.strip().startswith("peak memory"))
    assert "MiB" in peak, peak
    duration = next(l for l in out.splitlines() if l.strip().startswith("duration"))
    assert duration.rstrip().endswith(("ms", "s")), duration
    assert "µs" in out or "ms" in out


def test_escape_sequences_in_stored_text_never_reach_the_terminal(tmp_path):
    # A run named to set the terminal's title and break the table, with a description, a tag
    # and a command word doing the same; twice, so that the views of groups show it too.
    db = tmp_path / "fp.db"
    hostile = "esc\x1b]0;pwned\x07\nsecond line\x9b31m"
    run_ok(db, ["sh", "-c", "true", hostile], "-n", hostile, "-d", hostile, "--tag", "k=" + hostile,
           "--no-git", "-r", "2")
    for args in (["runs", "-o", db], ["show", "-o", db], ["show", "-o", db, "group:last"],
                 ["compare", "-o", db, "group:last", "last"]):
        status, out = on_pty(args)
        assert status == 0, out
        assert "\x1b]" not in out and "\x07" not in out and "\x9b" not in out, (args, out)
        assert "esc\\e]0;pwned\\x07\\nsecond line\\x9b31m" in out, (args, out)
    status, out = on_pty(["runs", "-o", db])
    assert len([l for l in out.splitlines() if l.strip()]) == 3  # the header and two rows
    # A bad argument quoting the hostile text is one inert line too.
    status, out = on_pty(["run", "-o", db, "-i", hostile, "--", "true"])
    assert status == 125 and len([l for l in out.splitlines() if l.strip()]) == 1, out
    assert "\x1b]" not in out and "\\e]0;pwned" in out, out


# Unicode's bidirectional controls: they reorder what a terminal shows (U+202E turns
# "exe.txt" into "txt.exe").
BIDI = {0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)}


def assert_inert(proc, what):
    """Neither stream holds ESC, BEL or another control (C0 but the newline, DEL, C1), a
    bidirectional control or anything that is not UTF-8: nothing a terminal would act on."""
    for name, data in (("stdout", proc.stdout), ("stderr", proc.stderr)):
        text = data.decode("utf-8")  # strict: a stray byte such as 0x9b (CSI) fails here
        bad = [c for c in text if (ord(c) < 0x20 and c != "\n") or 0x7F <= ord(c) <= 0x9F
               or ord(c) in BIDI]
        assert not bad, (what, name, bad, text)


def raw_fp(*args, expect_rc=0):
    """`footprint ARGS...` with its output as bytes, as a terminal would receive them."""
    proc = subprocess.run([FOOTPRINT, *map(str, args)], capture_output=True, env=clean_env(),
                          timeout=TIMEOUT_S)
    assert proc.returncode == expect_rc, (args, proc.returncode, proc.stdout, proc.stderr)
    return proc


def test_no_control_or_bidi_character_of_names_params_or_env_reaches_the_terminal(tmp_path):
    # Names, params and environment of an experiment plan and of a run, holding a window title
    # (OSC ... BEL), a screen clear, C1's CSI, and bidirectional overrides and isolates.
    plan = tmp_path / "plan.yaml"
    plan.write_text(textwrap.dedent("""\
        experiment: "ex\\e]0;pwn\\a\\u202Eexe.txt"
        workloads:
          - name: "wl\\e[2J\\x9B"
            runs:
              - name: "run\\u2066\\u202D"
                command: [true]
                params: {"p\\e[2J\\u202E": "one\\e]0;x\\a\\u2067"}
                env: {"E\\u202ENV": "one\\e[31m\\u202A\\x85"}
          - name: "wl2\\u200F"
            runs:
              - command: [true]
                params: {"p\\e[2J\\u202E": "two\\u061C"}
                env: {"E\\u202ENV": "two\\u200E"}
        """))
    db = tmp_path / "fp.db"
    hostile = "n\x1b]0;pwn\x07\x1b[2J\u202eexe.txt\u2069\x9b31m"
    for proc in (raw_fp("experiment", "-o", db, plan, "--dry-run"),
                 raw_fp("experiment", "-o", db, plan),
                 raw_fp("run", "-o", db, "--no-git", "-n", hostile, "--param", hostile + "=" +
                        hostile, "--tag", "t=" + hostile, "--", "sh", "-c", "true", hostile)):
        assert_inert(proc, proc.args)
        assert b"\\u202e" in proc.stdout + proc.stderr, proc.args
    runs = [r["id"] for r in runs_json(db)]
    assert len(runs) == 3
    plan_lines = raw_fp("experiment", "-o", db, plan, "--dry-run").stdout.decode().splitlines()
    assert ("workload 1: experiment ex\\e]0;pwn\\x07\\u202eexe.txt, workload wl\\e[2J\\x9b"
            in plan_lines)
    for args in (["experiment", "-o", db, plan, "--dry-run"], ["runs", "-o", db],
                 ["show", "-o", db, runs[0]], ["show", "-o", db, runs[2]],
                 ["compare", "-o", db, runs[0], runs[1]], ["compare", "-o", db, runs[0], runs[2]]):
        proc = raw_fp(*args)
        assert_inert(proc, args)
        assert b"\\u202e" in proc.stdout + proc.stderr, args
    # compare says how the plan's runs differ, names and values shown, inert.
    differences = raw_fp("compare", "-o", db, runs[0], runs[1]).stderr.decode()
    assert "param p\\e[2J\\u202e: one\\e]0;x\\x07\\u2067 vs two\\u061c" in differences
    assert "env E\\u202eNV: one\\e[31m\\u202a\\x85 vs two\\u200e" in differences
    # --json keeps the stored text as it is (JSON escapes what needs it).
    assert show(db, runs[2])["run"]["name"] == hostile


def test_a_long_name_is_shortened_in_the_runs_table_and_whole_in_json(tmp_path):
    db = tmp_path / "fp.db"
    long_name = "n" * 100_000
    run_ok(db, ["true"], "-n", long_name, "--no-git")
    run_ok(db, ["true"], "-n", "short", "--no-git")
    proc = fp("runs", "-o", db)
    assert proc.returncode == 0, describe(proc)
    header, first, second = proc.stdout.splitlines()
    # The NAME column is at most 40 wide: no line is padded to the long name's length.
    assert max(len(header), len(first), len(second)) < 150, proc.stdout
    assert "n" * 39 + "…" in first and "n" * 40 not in first
    assert " short " in second
    assert [r["name"] for r in runs_json(db)] == [long_name, "short"]
