"""The terminal summary of `show`: units for people, sparklines only on a UTF-8 terminal,
colour only on a terminal and never with NO_COLOR (https://no-color.org), --json clean.
A pseudo-terminal stands in for a real one."""
import json

import pytest

from fp_helpers import clean_env, describe, fp, on_pty, run_ok, wl

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
