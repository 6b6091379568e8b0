"""One timeline: a Python program under `footprint run` joins that run; `python3 -m footprint`
is the command line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import footprint as fp
from fp_python import PYTHON, child_env, footprint_command, run_footprint, write_script

USES_API = """
    import json, os, sys, time
    import footprint as fp

    bm = fp.Benchmark("ignored-when-joined.db", description="ignored", join=True)

    @fp.supervise([fp.Memory(interval=0.005), fp.CPU(interval=0.005)], bm, name="burn")
    def burn(seconds):
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            pass

    with bm.scope("stage"):
        burn(0.3)
        child = __import__("subprocess").run(["sleep", "0.2"])
    fp.LossTracker(bm).track([1.0, 0.5])
    print(json.dumps({"run_id": bm.run_id, "joined": bm.joined, "db": bm.db,
                      "args": sys.argv[1:]}), flush=True)
    bm.close()
    sys.exit(int(os.environ.get("EXIT_WITH", "0")))
"""


def test_a_program_under_footprint_run_joins_its_run(tmp_path, db):
    script = write_script(tmp_path, USES_API)
    result = run_footprint("run", "-o", str(db), "-n", "joined", "-i", "20ms", "--",
                           PYTHON, str(script), "a b", "c", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    told = json.loads(result.stdout)
    assert told["joined"] is True and told["args"] == ["a b", "c"]
    assert not (tmp_path / "ignored-when-joined.db").exists()

    data = fp.load(db)
    assert len(data.runs) == 1  # one run: the process tree's and the API's
    run = data.runs.iloc[0]
    assert run["id"] == told["run_id"] and run["name"] == "joined" and run["status"] == "ok"
    assert os.path.samefile(told["db"], db)
    s = data.scopes.set_index("name")
    assert s.loc["burn", "parent"] == "stage"
    assert s.loc["burn", "duration_s"] >= 0.3 and s.loc["stage", "duration_s"] >= 0.5
    # The scopes lie on the run's timeline, inside the command's lifetime.
    assert 0 < s.loc["stage", "start_s"] and s.loc["stage", "end_s"] < run["duration_s"]
    assert list(data.values["name"]) == ["loss", "loss"]
    assert set(data.values["run_id"]) == {run["id"]}
    # The run's series are the whole tree's, sampled from outside (at -i 20ms: the
    # supervise() intervals do not apply to a joined run).
    during = data.during(int(s.loc["burn", "id"]), "cpu")
    assert len(during) >= 5 and during["value"].max() > 10  # busy (a share of a core if loaded)
    assert (during["entity"] == "tree").all()
    stage = data.during(int(s.loc["stage", "id"]), "processes")
    assert stage["value"].max() >= 2  # python and its sleep child: the whole tree
    assert data.totals.set_index("name").loc["cpu_user_s", "value"] > 0.03


def test_python_m_footprint_runs_a_script_like_the_cli(tmp_path, db):
    write_script(tmp_path, USES_API, name="pipeline.py")
    env = child_env(EXIT_WITH="3")
    result = subprocess.run([PYTHON, "-m", "footprint", "run", "-o", str(db), "-q", "--",
                             "pipeline.py", "x"], env=env, cwd=tmp_path, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 3, result.stderr  # the command's exit status
    assert json.loads(result.stdout)["args"] == ["x"]
    assert result.stderr == ""  # -q: no summary
    data = fp.load(db)
    run = data.runs.iloc[0]
    assert run["name"] == "pipeline.py" and run["status"] == "failed" and run["exit_code"] == 3
    assert run["command"] == [sys.executable, "pipeline.py", "x"]
    assert set(data.scopes["name"]) == {"stage", "burn"}

    # Other subcommands behave as the binary does: same output, same exit status.
    for args in (["show", "-o", str(db), "last", "--json"], ["runs", "-o", str(db), "--json"],
                 ["show", "-o", str(db), "nosuchrun"]):
        ours = subprocess.run([PYTHON, "-m", "footprint", *args], env=child_env(),
                              capture_output=True, text=True, timeout=60)
        theirs = subprocess.run(footprint_command() + args, env=child_env(),
                                capture_output=True, text=True, timeout=60)
        assert ours.returncode == theirs.returncode, args
        assert ours.stdout == theirs.stdout, args
        assert ours.stderr == theirs.stderr, args
    shown = json.loads(subprocess.run([PYTHON, "-m", "footprint", "show", "-o", str(db),
                                       "--json"], env=child_env(), capture_output=True,
                                      text=True, timeout=60).stdout)
    assert shown["run"]["id"] == run["id"]
    assert {s["name"] for s in shown["scopes"]} == {"stage", "burn"}


def test_python_m_footprint_failures_and_signals(tmp_path, db):
    usage = subprocess.run([PYTHON, "-m", "footprint", "run", "-o", str(db), "-m", "bogus",
                            "--", "true"], env=child_env(), capture_output=True, text=True,
                           timeout=60)
    assert usage.returncode == 125
    assert usage.stderr.startswith("footprint: unknown metric 'bogus'")
    missing = subprocess.run([PYTHON, "-m", "footprint", "run", "-o", str(db), "-q", "--",
                              "no-such-command-xyz"], env=child_env(), capture_output=True,
                             text=True, timeout=60)
    assert missing.returncode == 127
    # The command does not inherit the SIGPIPE and SIGXFSZ that Python ignores.
    status = subprocess.run([PYTHON, "-m", "footprint", "run", "-o", str(db), "-q", "--",
                             "cat", "/proc/self/status"], env=child_env(), capture_output=True,
                            text=True, timeout=60)
    assert status.returncode == 0, status.stderr
    ignored = int(next(line.split()[1] for line in status.stdout.splitlines()
                       if line.startswith("SigIgn:")), 16)
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):
        assert not ignored & (1 << (sig - 1)), sig
