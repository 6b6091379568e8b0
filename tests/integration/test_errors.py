"""footprint's own failures: `run` exits 125 with one "footprint: ..." line and never starts
the command; runs/show exit 2 (usage), 3 (database) or 4 (no such run)."""
import os
import shutil
import sqlite3
import subprocess
import tempfile

import pytest

from fp_helpers import FOOTPRINT, describe, fp, run_ok, single_error_line


def refused(cwd, *options, **kw):
    """`footprint run OPTIONS -- touch marker`: asserts exit 125, one error line, no marker."""
    marker = os.path.join(cwd, "marker")
    proc = fp("run", *options, "--", "touch", marker, cwd=cwd, **kw)
    assert proc.returncode == 125, describe(proc)
    assert proc.stdout == ""
    line = single_error_line(proc)
    assert not os.path.exists(marker), "the command ran"
    return line


@pytest.mark.parametrize(
    "options, mentions",
    [
        pytest.param(["-m", "cpu,bogus"], "bogus", id="-m cpu,bogus"),
        pytest.param(["-m", ","], None, id="-m ,"),
        pytest.param(["-i", "0.5ms"], "1ms", id="-i 0.5ms"),
        pytest.param(["-i", "0"], "1ms", id="-i 0"),
        pytest.param(["-i", "abc"], "abc", id="-i abc"),
        pytest.param(["-i", "-5ms"], "-5ms", id="-i -5ms"),
        pytest.param(["--interval", "bogus=10ms"], "bogus", id="--interval bogus=10ms"),
        pytest.param(["--interval", "memory=0.5ms"], "memory", id="--interval memory=0.5ms"),
        pytest.param(["--interval", "memory=fast"], "fast", id="--interval memory=fast"),
        pytest.param(["--tag", "novalue"], "novalue", id="--tag novalue"),
        pytest.param(["--param", "=1"], "=1", id="--param =1"),
        pytest.param(["--no-such-option"], "--no-such-option", id="--no-such-option"),
        # An option where a value was expected is not taken for the value.
        pytest.param(["--gpus", "--http", "100000"], "--http", id="--gpus --http 100000"),
        pytest.param(["-n", "--tag", "k=v"], "--tag", id="-n --tag k=v"),
    ],
)
def test_bad_run_options_are_refused_before_anything_runs(tmp_path, options, mentions):
    db = tmp_path / "fp.db"
    line = refused(tmp_path, "-o", db, "--no-git", *options)
    if mentions:
        assert mentions in line
    assert not db.exists(), "options are checked before the database is touched"


@pytest.mark.parametrize(
    "args", [["run"], ["run", "--"], ["run", "-n", "x", "-q", "--"]], ids=" ".join
)
def test_missing_command_is_refused(tmp_path, args):
    proc = fp(*args[:1], "-o", tmp_path / "fp.db", *args[1:], cwd=tmp_path)
    assert proc.returncode == 125, describe(proc)
    line = single_error_line(proc)
    assert "command" in line
    assert not (tmp_path / "fp.db").exists()


def test_database_in_a_missing_folder_is_refused(tmp_path):
    db = tmp_path / "missing" / "sub" / "fp.db"
    line = refused(tmp_path, "-o", db, "--no-git")
    assert str(db) in line
    assert not (tmp_path / "missing").exists()


def test_database_in_a_folder_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "file").write_text("x")
    db = tmp_path / "file" / "fp.db"
    line = refused(tmp_path, "-o", db, "--no-git")
    assert str(db) in line


@pytest.fixture
def unprivileged():
    """(folder every user can enter, subprocess kwargs that run as an unprivileged user).

    root writes into read-only folders anyway, so as root footprint runs as nobody."""
    base = tempfile.mkdtemp(prefix="fp-it-", dir="/tmp")
    os.chmod(base, 0o755)
    kw = {"user": 65534, "group": 65534, "extra_groups": []} if os.geteuid() == 0 else {}
    try:  # a clone inside a private folder (mktemp -d makes them 0700) is out of nobody's reach
        subprocess.run([FOOTPRINT, "--version"], capture_output=True, timeout=30, **kw)
    except PermissionError:
        shutil.rmtree(base)
        pytest.skip(f"{FOOTPRINT} cannot be run as user nobody (a folder above it is private): "
                    "clone into a folder every user may enter to run this test")
    yield base, kw
    for root, dirs, _ in os.walk(base):
        for d in dirs:
            os.chmod(os.path.join(root, d), 0o755)
    shutil.rmtree(base)


def test_database_in_a_read_only_folder_is_refused(unprivileged):
    base, kw = unprivileged
    ro = os.path.join(base, "ro")
    os.mkdir(ro)
    os.chmod(ro, 0o555)  # no one but root may create files here
    cwd = os.path.join(base, "cwd")
    os.mkdir(cwd)
    os.chmod(cwd, 0o777)  # where the command would leave its marker
    db = os.path.join(ro, "fp.db")
    line = refused(cwd, "-o", db, "--no-git", **kw)
    assert db in line
    assert os.listdir(ro) == []


def test_read_only_database_file_is_refused(unprivileged):
    base, kw = unprivileged
    db = os.path.join(base, "fp.db")
    run_ok(db, ["true"], "--no-git")
    # root's file, so nobody may read it but not write it (the owner, when not root, neither).
    os.chmod(db, 0o644 if os.geteuid() == 0 else 0o444)
    cwd = os.path.join(base, "cwd")
    os.mkdir(cwd)
    os.chmod(cwd, 0o777)
    os.chmod(base, 0o777)  # the folder is writable; the file is not
    line = refused(cwd, "-o", db, "--no-git", **kw)
    assert db in line
    # Others can still read it.
    proc = fp("show", "-o", db, "--json", **kw)
    assert proc.returncode == 0, describe(proc)


def test_garbage_file_as_database_is_refused_and_left_alone(tmp_path):
    db = tmp_path / "garbage.db"
    content = b"this is not a database\n" * 400
    db.write_bytes(content)
    line = refused(tmp_path, "-o", db, "--no-git")
    assert str(db) in line
    assert db.read_bytes() == content
    for sub in (["runs"], ["show"], ["show", "--json", "last"]):
        proc = fp(*sub, "-o", db)
        assert proc.returncode == 3, describe(proc)
        assert str(db) in single_error_line(proc)
    assert db.read_bytes() == content


def test_corrupted_footprint_database_is_refused(tmp_path):
    db = tmp_path / "corrupt.db"
    run_ok(db, ["true"], "--no-git")
    data = bytearray(db.read_bytes())
    page = 4096
    assert len(data) > 2 * page
    data[page:] = b"\xa5" * (len(data) - page)  # every page but the header and schema
    db.write_bytes(bytes(data))
    line = refused(tmp_path, "-o", db, "--no-git")
    assert str(db) in line
    for sub in (["runs"], ["show", "last"]):
        proc = fp(*sub, "-o", db)
        assert proc.returncode == 3, describe(proc)
        assert str(db) in single_error_line(proc)


def test_database_of_a_newer_schema_is_refused_and_left_alone(tmp_path):
    db = tmp_path / "newer.db"
    run_ok(db, ["true"], "--no-git")
    con = sqlite3.connect(db)
    con.execute("PRAGMA user_version = 99")
    con.commit()
    con.close()
    line = refused(tmp_path, "-o", db, "--no-git")
    assert str(db) in line and "newer" in line
    for sub in (["runs"], ["show", "last"]):
        proc = fp(*sub, "-o", db)
        assert proc.returncode == 3, describe(proc)
        assert "newer" in single_error_line(proc)
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA user_version").fetchone() == (99,)
    assert con.execute("SELECT count(*) FROM runs").fetchone() == (1,)
    con.close()


def test_sqlite_database_of_another_program_is_refused(tmp_path):
    db = tmp_path / "other.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE things(x)")
    con.commit()
    con.close()
    line = refused(tmp_path, "-o", db, "--no-git")
    assert str(db) in line
    con = sqlite3.connect(db)
    tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    con.close()
    assert tables == ["things"]


def test_show_of_an_unknown_run_exits_4(tmp_path):
    db = tmp_path / "fp.db"
    run_ok(db, ["true"], "--no-git")
    for spec in ["no-such-run", "ffffffff-ffff", "zzzz"]:
        proc = fp("show", "-o", db, spec)
        assert proc.returncode == 4, describe(proc)
        assert spec in single_error_line(proc)
    proc = fp("show", "-o", db, "--json", "last", "no-such-run")
    assert proc.returncode == 4, describe(proc)
    assert proc.stdout == ""


def test_show_and_runs_of_a_missing_database_say_so_and_create_nothing(tmp_path):
    db = tmp_path / "none.db"
    for sub in (["show"], ["show", "--json", "last"], ["runs"], ["runs", "--json"]):
        proc = fp(*sub, "-o", db)
        # A database error (3) or "not found" (4): either tells a script what happened.
        assert proc.returncode in (3, 4), describe(proc)
        assert proc.stdout == ""
        assert str(db) in single_error_line(proc)
        assert not db.exists()
        assert os.listdir(tmp_path) == []


@pytest.mark.parametrize(
    "args",
    [[], ["frobnicate"], ["show", "--bogus"], ["runs", "extra-arg"], ["doctor", "--bogus"]],
    ids=lambda a: " ".join(a) or "nothing",
)
def test_usage_errors_of_other_subcommands_exit_2(tmp_path, args):
    proc = fp(*args, cwd=tmp_path)
    assert proc.returncode == 2, describe(proc)
    single_error_line(proc)
    assert os.listdir(tmp_path) == []


SUBCOMMANDS = ["run", "load", "profile-cost", "evaluate", "predict", "runs", "show", "compare",
               "export", "plot", "experiment", "import", "push", "agent", "serve", "queue",
               "doctor"]


def test_help_and_a_mistyped_subcommand_list_every_subcommand():
    """footprint builds only the subcommand it is given (a faster start); without one, or with
    a name it does not know, it builds and lists them all."""
    proc = fp("--help")
    assert proc.returncode == 0, describe(proc)
    listed = [line.split()[0] for line in proc.stdout.splitlines()
              if line.startswith("  ") and line.split() and line.split()[0] in SUBCOMMANDS]
    assert listed == SUBCOMMANDS, proc.stdout
    line = single_error_line(fp("rn", "--", "true"))
    assert "unknown subcommand 'rn' (" + ", ".join(SUBCOMMANDS) + ")" in line, line
    proc = fp("show", "--bogus")
    assert "see footprint show --help" in single_error_line(proc)


@pytest.mark.parametrize("subcommand", [
    "run", "load", "runs", "show", "compare", "export", "plot", "serve", "doctor", "experiment",
    "import", "queue",
])
def test_help_speaks_in_words_not_in_parser_internals(subcommand):
    """No option shows the parser's internals: its transform tables and range checks
    (`ENUM:value in {always->1,...}`, `INT:INT in [1 - 100000]`); the help says them in words."""
    proc = fp(subcommand, "--help")
    assert proc.returncode == 0, describe(proc)
    for leak in ("ENUM", "->", " in [", " in {", "INT:", "TEXT:", "FLOAT:", "Excludes:",
                 "Needs:"):
        assert leak not in proc.stdout, (leak, proc.stdout)


# A trigger that the command adds to the database, refusing to store a run's end (as a full
# disk or a lock held too long would), while the rest of the run is written.
REFUSE_ENDS = (
    "import sqlite3, sys\n"
    "c = sqlite3.connect(sys.argv[1], timeout=30)\n"
    "c.execute(\"CREATE TRIGGER IF NOT EXISTS no_end BEFORE UPDATE OF ended_at_ns ON runs \"\n"
    "          \"WHEN NEW.ended_at_ns IS NOT NULL BEGIN SELECT RAISE(ABORT, 'no end'); END\")\n"
    "c.commit()\n")


def test_a_run_whose_end_could_not_be_stored_is_never_said_stored(tmp_path):
    db = tmp_path / "fp.db"
    proc = fp("run", "-o", db, "--no-git", "--", "/usr/bin/python3", "-c", REFUSE_ENDS, db)
    assert proc.returncode == 0, describe(proc)  # the command's own status
    assert "the end of the run could not be stored" in proc.stderr, describe(proc)
    assert "stored in" not in proc.stderr, describe(proc)
    assert "without its end" in proc.stderr and "interrupted" in proc.stderr, describe(proc)
    # A group says how many of its runs lack their end.
    proc = fp("run", "-o", db, "--no-git", "-r", "2", "--", "/usr/bin/python3", "-c",
              REFUSE_ENDS, db)
    assert proc.returncode == 0, describe(proc)
    [group_line] = [l for l in proc.stderr.splitlines() if l.startswith("footprint: group ")]
    assert "2 run(s) without their end" in group_line, describe(proc)
