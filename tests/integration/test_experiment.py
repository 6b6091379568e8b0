"""footprint experiment: radT's CSV plans run as workloads of collocated runs, each measured
in its own tree; status write-back; resume after SIGKILL."""
import json
import os
import re
import signal
import subprocess
import textwrap
import time

import pytest

from fp_helpers import (FOOTPRINT, HIGH_PRIORITY, asan_build, clean_env, connect, describe, fp,
                        wait_for, wl)

HEADER = "Experiment, Workload, Status, Run, Devices, Collocation, File,     Listeners,     Params\n"


def plan_runs(db):
    """Every run of the database as a dict (meta parsed, totals attached), oldest first."""
    with connect(db) as con:
        con.row_factory = lambda cur, row: {d[0]: v for d, v in zip(cur.description, row)}
        runs = con.execute(
            "SELECT id, experiment, workload, status, started_at_ns, ended_at_ns, meta, command "
            "FROM runs ORDER BY started_at_ns").fetchall()
        for r in runs:
            r["meta"] = json.loads(r["meta"])
            r["command"] = json.loads(r["command"])
            r["key"] = r["meta"].get("experiment", {}).get("key")
            r["totals"] = {t["name"]: t["value"] for t in con.execute(
                "SELECT name, value FROM run_totals WHERE run_id = ?", (r["id"],))}
    con.close()
    return runs


def cpu_s(run):
    return run["totals"]["cpu_user_s"] + run["totals"]["cpu_system_s"]


def exit_cost(tmp_path, argv):
    """CPU a workload spends after its own report, at its exit (freeing its memory; under ASan,
    LeakSanitizer's scan too): its rusage as reaped here, less what it reported, for the same
    workload started alone without footprint."""
    truth = tmp_path / f"exit-{len(list(tmp_path.iterdir()))}"
    truth.mkdir()
    proc = subprocess.Popen([str(a) for a in argv], env=clean_env(FP_WORKLOAD_REPORT=str(truth)))
    _, status, ru = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    assert proc.returncode == 0
    [report] = [json.loads(f.read_text()) for f in truth.iterdir()]
    return max(0.0, ru.ru_utime + ru.ru_stime - report["cpu_s"])


def test_collocated_runs_are_measured_apart(tmp_path):
    # 3 workloads x 2 collocated runs, each pair unlike: a busy thread beside a memory
    # holder, two busy threads of different lengths, two memory holders of different sizes.
    burn, touch = wl("burn"), wl("touch_memory")
    plan = tmp_path / "plan.csv"
    plan.write_text(HEADER + textwrap.dedent(f"""\
        lab, 1, , , -, -, {burn},  top, 1 1.2
        lab, 1, , , -, -, {touch}, top, 200 1.2
        lab, 2, , , -, -, {burn},  top, 1 1.0
        lab, 2, , , -, -, {burn},  top, 1 0.4
        lab, 3, , , -, -, {touch}, top, 60 0.6
        lab, 3, , , -, -, {touch}, top, 240 0.6
        """))
    db = tmp_path / "fp.db"
    # Ground truth: each workload reports its own getrusage and high-water mark at exit.
    truth_dir = tmp_path / "truth"
    truth_dir.mkdir()
    proc = fp("experiment", "-o", db, plan, **HIGH_PRIORITY,
              env=clean_env(FP_WORKLOAD_REPORT=str(truth_dir)))
    assert proc.returncode == 0, describe(proc)
    runs = plan_runs(db)
    assert len(runs) == 6
    by_key = {r["key"]: r for r in runs}
    assert sorted(by_key) == ["lab/1/1", "lab/1/2", "lab/2/1", "lab/2/2", "lab/3/1", "lab/3/2"]
    for r in runs:
        assert r["status"] == "ok" and r["experiment"] == "lab"
        assert r["workload"] == r["key"].split("/")[1]
    reports = [json.loads(f.read_text()) for f in truth_dir.iterdir()]
    assert len(reports) == 6
    args_of = {"lab/1/1": "1 1.2", "lab/1/2": "200 1.2", "lab/2/1": "1 1.0", "lab/2/2": "1 0.4",
               "lab/3/1": "60 0.6", "lab/3/2": "240 0.6"}
    mib = 1 << 20
    # What a process does after its report, measured on the same workloads alone: the largest.
    after_report = max(exit_cost(tmp_path, [burn, 1, 0]), exit_cost(tmp_path, [touch, 240, 0]))
    for key, args in args_of.items():
        own = next(r for r in reports if r["args"] == args)
        totals = by_key[key]["totals"]
        # Each run has exactly its own process's CPU time (the kernel's account of the same
        # process, as footprint reaped it) and not the neighbour's, whatever the machine's speed
        # and load. Loose by 3 % + 40 ms + what the process does after its report, which it
        # cannot measure: its exit (22 ms for the 200 MiB holder on an AMD EPYC VM, 58 ms for a
        # busy thread under ASan, whose leak check runs at exit), measured above alone and
        # counted twice, for an exit that shares the cores with its neighbour's (under ASan
        # beside a build: 131 ms for the 240 MiB holder whose exit took 85 ms alone). A run
        # credited with its neighbour's figures still fails: the pairs differ by 140-200 MiB of
        # memory and 0.6 s of wall time, checked below.
        acct = by_key[key]["meta"]["accounting"]
        rusage = acct["rusage_user_s"] + acct["rusage_system_s"]
        slack = 0.03 * own["cpu_s"] + 0.04 + 2 * after_report
        assert abs(rusage - own["cpu_s"]) <= slack, (key, own, acct, after_report)
        # The run's total comes from its cgroup, which is also charged for kernel work done on
        # the process's behalf that no per-process account holds (freeing and reclaiming its
        # pages), so it may exceed the process's own figure by 10 % + 60 ms (the exit above
        # included, twice as above).
        highest = own["cpu_s"] * 1.1 + 0.06 + 2 * after_report
        assert own["cpu_s"] - 0.02 <= cpu_s(by_key[key]) <= highest, (key, own, acct, after_report)
        # Its own memory: never below its high-water mark, and far from the neighbour's (under
        # ASan a process's peak carries ~75 MiB of shadow memory).
        assert own["maxrss_bytes"] <= totals["peak_memory_bytes"] < own["maxrss_bytes"] + 100 * mib
    # The pairs are unlike, so a run credited with its neighbour's figures would show it:
    # the holders differ by 140-200 MiB, the busy threads by 0.6 s of wall time.
    assert by_key["lab/1/2"]["totals"]["peak_memory_bytes"] >= 200 * mib
    assert by_key["lab/3/2"]["totals"]["peak_memory_bytes"] >= 240 * mib
    # The runs of a workload start together (the barrier) and so overlap for most of the
    # shorter one, whatever delays a busy machine adds to a start; workloads follow each other
    # without overlapping.
    for w in "123":
        a, b = by_key[f"lab/{w}/1"], by_key[f"lab/{w}/2"]
        together = min(a["ended_at_ns"], b["ended_at_ns"]) - max(a["started_at_ns"],
                                                                  b["started_at_ns"])
        shorter = min(r["ended_at_ns"] - r["started_at_ns"] for r in (a, b))
        assert together >= 0.5 * shorter, (a, b)
    for w, nxt in (("1", "2"), ("2", "3")):
        end = max(by_key[f"lab/{w}/{i}"]["ended_at_ns"] for i in "12")
        start = min(by_key[f"lab/{nxt}/{i}"]["started_at_ns"] for i in "12")
        assert end <= start


def test_radt_csv_every_column_and_status_copy(tmp_path):
    # A radT plan as users write it: padded columns, quoted params, a .py and a .sh script next
    # to the plan, an executable, Status and Run columns to be filled in.
    (tmp_path / "train.py").write_text(
        "import sys, os\nopen(os.environ['OUT'] + '.py', 'w').write(repr(sys.argv[1:]))\n")
    (tmp_path / "prep.sh").write_text('printf "%s|" "$@" > "$OUT.sh"\n')
    out = tmp_path / "out"
    plan = tmp_path / "plan.csv"
    plan_text = HEADER + textwrap.dedent(f'''\
        e1,   w1,  ,   ,  -,  -,  train.py, smi+top, "--name 'my run' --lr 0.1"
        e1,   w1,  ,   ,  -,  -,  prep.sh,  top,     "--msg ""a, b"""
        e1,   w2,  ,   ,  -,  -,  {wl("exit_with")}, top+iostat, 3
        ''')
    plan.write_text(plan_text)
    db = tmp_path / "fp.db"
    status_copy = tmp_path / "status.csv"
    env = clean_env(OUT=str(out))
    proc = fp("experiment", "-o", db, plan, "--python", "/usr/bin/python3", "--write-status",
              status_copy, env=env)
    assert proc.returncode == 1, describe(proc)  # the exit_with run failed
    assert (tmp_path / "out.py").read_text() == "['--name', 'my run', '--lr', '0.1']"
    assert (tmp_path / "out.sh").read_text() == "--msg|a, b|"
    runs = {r["key"]: r for r in plan_runs(db)}
    assert runs["e1/w1/1"]["command"] == ["/usr/bin/python3", str(tmp_path / "train.py"),
                                          "--name", "my run", "--lr", "0.1"]
    assert runs["e1/w1/2"]["command"][0] == "bash"
    assert runs["e1/w2/1"]["status"] == "failed"
    # Progress: the second workload starts after 2 of the 3 runs, with the time left.
    assert re.search(r"workload w2: starting 1 run\(s\) together \(2 of 3 runs done, ETA \d",
                     proc.stderr), proc.stderr
    # The copy: the same plan with Status and Run filled in, the padding kept.
    lines = status_copy.read_text().splitlines()
    assert lines[0] == HEADER.rstrip("\n")
    cells = [[c.strip() for c in line.split(",")] for line in lines[1:]]
    assert [c[2] for c in cells] == ["FINISHED", "FINISHED", "FAILED"]  # radT's words
    assert [c[3] for c in cells] == [runs[k]["id"] for k in ("e1/w1/1", "e1/w1/2", "e1/w2/1")]
    assert lines[1].startswith("e1,   w1,  ")
    assert plan.read_text() == plan_text  # the plan itself is never written


def test_radt_plan_for_gpus_on_the_cpu_with_collocated_output_told_apart(tmp_path):
    # radT's examples: plans in csv/, scripts in pytorch/ (File ../pytorch/...), Devices 0 and
    # the smi listener. Here NVML is missing, so every run that asks for GPU metrics warns.
    (tmp_path / "csv").mkdir()
    (tmp_path / "pytorch").mkdir()
    (tmp_path / "pytorch" / "say.py").write_text(
        "import os, sys\n"
        "for i in range(3):\n    print(sys.argv[1], i, flush=True)\n"
        "print('gpus', repr(os.environ['CUDA_VISIBLE_DEVICES']),\n"
        "      'unbuffered', os.environ['PYTHONUNBUFFERED'], end='')\n")
    plan = tmp_path / "csv" / "plan.csv"
    plan.write_text(
        "Experiment,Workload,Name,Status,Run,Devices,Collocation,File,Listeners,Params\n"
        "e,1,left,,,0,-,../pytorch/say.py,smi+top,left\n"
        "e,1,right,,,0,-,../pytorch/say.py,smi,right\n")
    db = tmp_path / "fp.db"
    env = clean_env(FOOTPRINT_NVML_LIBRARY=str(tmp_path / "no-libnvidia-ml.so.1"))
    env.pop("PYTHONUNBUFFERED", None)  # footprint sets it
    dry = fp("experiment", "-o", db, plan, "--dry-run", env=env)
    assert dry.returncode == 0, describe(dry)
    assert re.search(r"key +name +status", dry.stdout), dry.stdout  # radT's Name column
    assert re.search(r"e/1/1 +left +pending", dry.stdout), dry.stdout
    proc = fp("experiment", "-o", db, plan, "--devices", "cpu", "--python", "/usr/bin/python3",
              env=env)
    assert proc.returncode == 0, describe(proc)
    assert "2 run(s) that name GPUs run on the CPU (--devices cpu)" in proc.stderr
    # Each line of the collocated runs behind radT's prefix (ljust(20)), a last line without
    # its end included; the commands see no GPU, and Python writes them unbuffered, as radT's.
    expected = [f"{f'[RUN -_{letter}]:':<20} {word} {i}" for letter, word in
                (("A", "left"), ("B", "right")) for i in range(3)]
    expected += [f"{f'[RUN -_{letter}]:':<20} gpus '' unbuffered 1" for letter in "AB"]
    assert sorted(proc.stdout.splitlines()) == sorted(expected), describe(proc)
    # The GPU warning once for the plan, not once per run.
    assert proc.stderr.count("warning: gpu, gpu.memory") == 1, describe(proc)
    scripts = os.path.realpath(tmp_path / "pytorch")
    for run in plan_runs(db):  # csv/../pytorch stored as the folder it names
        assert run["command"][1] == os.path.join(scripts, "say.py")
        assert run["meta"]["experiment"]["plan"] == os.path.realpath(plan)
    with connect(db) as con:
        assert {cwd for (cwd,) in con.execute("SELECT cwd FROM runs")} == {scripts}
    con.close()


def test_dry_run_prints_the_plan_and_runs_nothing(tmp_path):
    plan = tmp_path / "plan.yaml"
    plan.write_text(textwrap.dedent(f"""\
        experiment: sweep
        workloads:
          - name: pair
            grid: {{threads: [1, 2]}}
            runs:
              - command: {wl("burn")} {{threads}} 0.1
                copies: 2
                env: {{MODE: fast}}
        """))
    db = tmp_path / "fp.db"
    proc = fp("experiment", "-o", db, plan, "--dry-run")
    assert proc.returncode == 0, describe(proc)
    assert "2 workload(s), 4 run(s)" in proc.stdout
    assert "sweep/pair[threads=2]/1.2" in proc.stdout
    assert f"{wl('burn')} 2 0.1" in proc.stdout and "MODE=fast" in proc.stdout
    assert not db.exists()


def test_bad_plan_is_one_line_and_exit_2(tmp_path):
    plan = tmp_path / "plan.csv"
    plan.write_text("Experiment, Workload, Flie\n1, 1, x\n")
    proc = fp("experiment", "-o", tmp_path / "fp.db", plan)
    assert proc.returncode == 2, describe(proc)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "unknown column 'Flie'" in lines[0], describe(proc)


def fp_bounded(tmp_path, *args, timeout_s=30):
    """Runs `footprint ARGS...`; returns its exit status, its stderr and its peak resident
    memory in bytes (ru_maxrss, from wait4). Fails the test if it runs past `timeout_s`."""
    err_path = tmp_path / f"stderr-{time.monotonic_ns()}"
    with open(err_path, "w") as err:
        proc = subprocess.Popen([FOOTPRINT, *map(str, args)], stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=err, env=clean_env())
    deadline = time.monotonic() + timeout_s
    while True:
        pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            proc.kill()
            os.wait4(proc.pid, 0)
            proc.returncode = -9
            pytest.fail(f"footprint {args} still ran after {timeout_s} s")
        time.sleep(0.02)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, err_path.read_text(), ru.ru_maxrss * 1024


# footprint's own cost, not an input's: 20 MB here, 663 MB once. AddressSanitizer's allocator
# and shadow hold several times what footprint does (322 MB once for this test's 20 MB).
MAX_RSS = (600 if asan_build() else 200) * 2**20


@pytest.mark.parametrize("command, what", [("experiment", "plan"), ("evaluate", "manifest")])
def test_fifos_and_devices_are_refused_at_once(tmp_path, command, what):
    # /dev/zero was read until memory ran out (experiment: 3.5 GB in 12 s; evaluate: 0.9 GB),
    # and a FIFO blocked the reader forever: each is now refused, before it is opened.
    fifo = tmp_path / f"{what}.yaml"
    os.mkfifo(fifo)
    for path, kind in (("/dev/zero", "a device"), (fifo, "a FIFO")):
        rc, err, peak = fp_bounded(tmp_path, command, "--dry-run", "-o", tmp_path / "fp.db",
                                   path, timeout_s=10)
        assert rc == 2, err
        assert err.count("\n") == 1 and f"the {what} {path} is {kind}" in err, err
        assert "name a regular file" in err
        assert peak < MAX_RSS, peak


def test_huge_plans_are_refused_before_they_are_built(tmp_path):
    # 200,000 listed workloads (5.6 MB): yaml-cpp's tree of them took 663 MB before the plan
    # was refused; its nodes are now counted as it is parsed, the tree never built.
    plan = tmp_path / "listed.yaml"
    plan.write_text("experiment: e\nworkloads:\n" + "  - runs: [{command: true}]\n" * 200_000)
    rc, err, peak = fp_bounded(tmp_path, "experiment", "--dry-run", plan)
    assert rc == 2, err
    assert err.count("\n") == 1 and "line 83335: more than 500000 YAML nodes" in err, err
    assert peak < MAX_RSS, peak
    # The runs of every workload are counted before any run is made: 100,000 runs with 2 kB of
    # environment each were built (290 MB) before the second workload passed the limit.
    plan = tmp_path / "repeated.yaml"
    plan.write_text("experiment: e\nworkloads:\n  - repetitions: 100000\n"
                    f"    runs: [{{command: true, env: {{A: {'x' * 2000}}}}}]\n"
                    "  - runs: [{command: true}]\n")
    rc, err, peak = fp_bounded(tmp_path, "experiment", "--dry-run", plan)
    assert rc == 2, err
    assert "workload 2 makes 1 combination(s) x 1 run(s) x 1 repetition(s): more than 100000 runs" \
        in err, err
    assert peak < MAX_RSS, peak


def test_resume_after_sigkill_runs_only_what_is_missing(tmp_path):
    burn = wl("burn")
    rows = "".join(f"k, {w}, , , -, -, {burn}, top, 1 {0.4 if w != 2 else 3}\n" * 2
                   for w in (1, 2, 3))
    plan = tmp_path / "plan.csv"
    plan.write_text(HEADER + rows)
    db = tmp_path / "fp.db"
    proc = subprocess.Popen([FOOTPRINT, "experiment", "-o", str(db), str(plan)],
                            env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)

    def workload_2_running():
        if not db.exists():
            return False
        try:
            return sum(r["workload"] == "2" and r["status"] == "running"
                       for r in plan_runs(db)) == 2
        except Exception:  # the database may be mid-creation
            return False

    try:
        wait_for(workload_2_running, 60, "workload 2 to start")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        # Its monitors stop their commands and store them (killed) instead of running on.
        wait_for(lambda: all(r["status"] != "running" for r in plan_runs(db)), 30,
                 "the orphaned monitors to store their runs")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    before = plan_runs(db)
    assert sorted(r["key"] for r in before if r["status"] == "ok") == ["k/1/1", "k/1/2"]
    # Killed while running, or failed when footprint died before releasing them.
    assert {r["status"] for r in before if r["workload"] == "2"} <= {
        "killed", "interrupted", "failed"}
    assert not any(r["workload"] == "3" for r in before)
    # The longest run of workload 2 must not be rerun for nothing: make it short now.
    plan.write_text(HEADER + rows.replace(" 1 3\n", " 1 0.4\n"))
    proc = fp("experiment", "-o", db, plan, "--resume")
    assert proc.returncode == 0, describe(proc)
    assert "2 already ok" in proc.stderr
    after = plan_runs(db)
    new = after[len(before):]
    assert sorted(r["key"] for r in new) == ["k/2/1", "k/2/2", "k/3/1", "k/3/2"]
    assert all(r["status"] == "ok" for r in new)
    # And once everything is ok, --resume runs nothing.
    proc = fp("experiment", "-o", db, plan, "--resume")
    assert proc.returncode == 0, describe(proc)
    assert len(plan_runs(db)) == len(after)


def test_reproducibility_record_shown_and_compared(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "train.py").write_text("import sys\n")
    (repo / "data.csv").write_text("1,2\n")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git[:3] + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-q", "-m", "x"], check=True)
    plan = repo / "plan.yaml"
    plan.write_text(textwrap.dedent("""\
        experiment: repro
        python: /usr/bin/python3
        workloads:
          - name: w
            runs:
              - file: train.py
                params: {lr: "0.1"}
                env: {OMP_NUM_THREADS: "1"}
                inputs: [data.csv]
        """))
    db = tmp_path / "fp.db"
    env = clean_env(FP_TEST_SECRET_TOKEN="hunter2")
    assert fp("experiment", "-o", db, plan, env=env).returncode == 0
    (repo / "data.csv").write_text("1,3\n")  # a changed input, and a dirty repository
    proc = fp("experiment", "-o", db, plan, env=env)
    assert proc.returncode == 0, describe(proc)
    first, second = plan_runs(db)
    r = first["meta"]["repro"]
    assert r["command"] == ["/usr/bin/python3", str(repo / "train.py"), "--lr", "0.1"]
    assert r["params"] == {"lr": "0.1"}
    assert r["env"]["OMP_NUM_THREADS"] == "1"
    assert r["env"]["FP_TEST_SECRET_TOKEN"] == "<redacted>"
    assert "hunter2" not in json.dumps(first["meta"])
    assert r["script"]["git"]["dirty"] is False and len(r["script"]["git"]["commit"]) == 40
    assert r["interpreter"]["path"] == "/usr/bin/python3"
    assert "pytest" in {k.lower() for k in r["interpreter"]["packages"]}
    import hashlib
    assert r["inputs"][str(repo / "data.csv")] == hashlib.sha256(b"1,2\n").hexdigest()
    assert second["meta"]["repro"]["script"]["git"]["dirty"] is True
    # show: a compact block.
    proc = fp("show", "-o", db, first["id"])
    assert proc.returncode == 0, describe(proc)
    assert "plan     repro/w/1 in " + str(plan) in proc.stdout
    assert "interp   /usr/bin/python3 3." in proc.stdout and "packages" in proc.stdout
    assert "(redacted)" not in proc.stdout and "redacted)" in proc.stdout
    # compare: one warning line per difference.
    proc = fp("compare", "-o", db, first["id"], second["id"])
    assert proc.returncode == 0, describe(proc)
    warnings = [l for l in proc.stderr.splitlines() if l.startswith("footprint: warning:")]
    assert any("script git dirty: false vs true" in w for w in warnings), proc.stderr
    assert any(f"input {repo / 'data.csv'}:" in w for w in warnings), proc.stderr
    assert len(warnings) == 2, proc.stderr


def test_docs_worked_example_runs_as_written(tmp_path):
    """docs/experiments.md's CSV example runs (with a stand-in train.py) and its YAML plans
    (footprint's and radT's sweep) parse and expand as the page says."""
    import re
    doc = (os.path.join(os.path.dirname(__file__), "..", "..", "docs", "experiments.md"))
    text = open(doc).read()
    csv = re.search(r"^```csv\n(.*?)^```$", text, flags=re.M | re.S).group(1)
    blocks = re.findall(r"^```yaml\n(.*?)^```$", text, flags=re.M | re.S)
    [yaml] = [b for b in blocks if "workloads:" in b]
    [radt_sweep] = [b for b in blocks if "method:" in b]
    (tmp_path / "train.py").write_text("import sys\n")
    (tmp_path / "plan.csv").write_text(csv)
    db = tmp_path / "fp.db"
    proc = fp("experiment", "-o", db, tmp_path / "plan.csv", "--python", "/usr/bin/python3",
              "--write-status", tmp_path / "plan-status.csv", cwd=tmp_path)
    assert proc.returncode == 0, describe(proc)
    assert "3 run(s) ran, 0 not ok" in proc.stderr
    runs = plan_runs(db)
    big = [r for r in runs if r["key"] == "resnet/large/1"][0]
    assert big["command"][-4:] == ["--batch-size", "256", "--name", "big run"]
    (tmp_path / "sweep.yaml").write_text(yaml)
    proc = fp("experiment", "-o", db, tmp_path / "sweep.yaml", "--dry-run", cwd=tmp_path)
    assert proc.returncode == 0, describe(proc)
    assert "8 workload(s), 16 run(s)" in proc.stdout
    assert "sweep/bs[batch=32,lr=0.1]#1/train.2" in proc.stdout
    # radT's sweep as the page shows it: 5 x 3 combinations, one workload each.
    (tmp_path / "radt.yaml").write_text(radt_sweep)
    proc = fp("experiment", "-o", db, tmp_path / "radt.yaml", "--dry-run", cwd=tmp_path)
    assert proc.returncode == 0, describe(proc)
    assert "15 workload(s), 15 run(s)" in proc.stdout
