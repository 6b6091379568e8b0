"""footprint inside Slurm (docs/cluster.md): a run started by a task of a step records the job,
the step and the task, checked against what slurmd told that very task; the per-node agent
counts each node once, its CPU time checked against each task's own /usr/bin/time, on one node
and across two (two slurmd on this host)."""
import json
import os
import shutil
import signal
import socket
import subprocess
import time

import pytest

from fp_helpers import FOOTPRINT, asan_build, clean_env, describe, fp, show, wait_for, wl

BROWSER_TESTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "browser")
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")


def test_each_task_of_a_step_records_its_job_step_and_task(slurm, tmp_path):
    db = tmp_path / "fp.db"
    proc = slurm.run(
        "srun", "--ntasks=2", "sh", "-c",
        f'echo "$SLURM_JOB_ID $SLURM_STEP_ID" > {tmp_path}/truth.$SLURM_PROCID && '
        f'exec {FOOTPRINT} run -o {db} -q -n task$SLURM_PROCID -- {wl("burn")} 1 0.2')
    assert proc.returncode == 0, f"{proc.stdout}{proc.stderr}{slurm.logs()}"
    for task in (0, 1):
        job, step = (tmp_path / f"truth.{task}").read_text().split()
        summary = show(db, f"task{task}")
        assert summary["meta"]["slurm"] == {
            "job_id": int(job), "step_id": int(step), "task": task, "local_task": task,
            "tasks": 2, "tasks_per_node": 2, "node": socket.gethostname(), "node_id": 0,
            "nodes": socket.gethostname(), "num_nodes": 1, "cluster": "fp",
            "partition": "debug", "cpus_on_node": summary["meta"]["slurm"]["cpus_on_node"],
        }, json.dumps(summary["meta"]["slurm"])
        text = fp("show", "-o", db, f"task{task}")
        assert f"slurm    job {job} step {step}, task {task} of 2 on {socket.gethostname()}" \
            in text.stdout, describe(text)


def test_a_run_outside_slurm_records_none(tmp_path):
    db = tmp_path / "fp.db"
    assert fp("run", "-o", db, "-q", "--", "true").returncode == 0
    assert "slurm" not in show(db)["meta"]


def test_the_agent_counts_a_node_once_however_many_tasks_it_runs(slurm, tmp_path):
    """Two tasks of one step on the node, one agent beside them: one part for the node, whose
    CPU time is the two tasks' own (each task's /usr/bin/time), not twice it."""
    db = tmp_path / "fp.db"
    script = tmp_path / "job.sh"
    script.write_text(f"""#!/bin/sh
srun --overlap --ntasks=1 --ntasks-per-node=1 {FOOTPRINT} agent -o {db} -n train -i 50ms \\
    --wait 60 > {tmp_path}/agent.out 2>&1 &
srun --ntasks=2 --ntasks-per-node=2 sh -c \\
    'exec /usr/bin/time -f "%U %S" -o {tmp_path}/truth.$SLURM_PROCID {wl("burn")} 1 1.5'
echo "$SLURM_JOB_ID" > {tmp_path}/job
wait
""")
    proc = slurm.run("sbatch", "--wait", "-N1", "-n2", "-o", tmp_path / "job.out", script)
    agent_out = (tmp_path / "agent.out").read_text() if (tmp_path / "agent.out").exists() else ""
    assert proc.returncode == 0, f"{proc.stdout}{proc.stderr}{agent_out}{slurm.logs()}"
    own = [sum(map(float, (tmp_path / f"truth.{task}").read_text().split())) for task in (0, 1)]
    truth = sum(own)
    job = int((tmp_path / "job").read_text())
    summary = show(db, "train")
    slurm_meta = summary["meta"]["slurm"]
    assert slurm_meta["job_id"] == job and slurm_meta["tasks_per_node"] == 2, slurm_meta
    assert "task" not in slurm_meta, slurm_meta
    assert summary["meta"]["span"] == {"key": f"fp:{job}.{slurm_meta['step_id']}",
                                       "host": socket.gethostname(), "hosts": 1}
    cpu = summary["totals"]["cpu_user_s"] + summary["totals"]["cpu_system_s"]
    print(f"agent cpu {cpu:.3f} s, tasks' own {truth:.3f} s\n{agent_out}")
    assert min(own) > 0.1, own  # both tasks ran: once per node is not once per task
    assert abs(cpu - truth) <= 0.05 * truth + 0.1, (cpu, truth, agent_out)
    runs = json.loads(fp("runs", "-o", db, "--json").stdout)
    assert len(runs) == 1, runs  # one part for the node, not one per task


def test_one_run_across_two_nodes_a_part_per_node_and_their_sums(slurm2, pg_uri, tmp_path):
    """Two nodes (two slurmd), two tasks each, an agent per node writing to PostgreSQL: two
    parts of one run, each with its node's tasks' CPU time, and `show` sums them."""
    script = tmp_path / "job.sh"
    script.write_text(f"""#!/bin/sh
srun --overlap -N2 --ntasks-per-node=1 {FOOTPRINT} agent -o {pg_uri} -n train -i 50ms \\
    --wait 60 > {tmp_path}/agent.out 2>&1 &
srun -N2 --ntasks-per-node=2 sh -c \\
    'exec /usr/bin/time -f "%U %S" -o {tmp_path}/truth.$SLURMD_NODENAME.$SLURM_LOCALID \\
     {wl("burn")} 1 1.0'
wait
""")
    proc = slurm2.run("sbatch", "--wait", "-N2", "--ntasks-per-node=2", "-o",
                      tmp_path / "job.out", script)
    agent_out = (tmp_path / "agent.out").read_text() if (tmp_path / "agent.out").exists() else ""
    assert proc.returncode == 0, f"{proc.stdout}{proc.stderr}{agent_out}{slurm2.logs()}"
    truth = {node: sum(float(x) for task in (0, 1)
                       for x in (tmp_path / f"truth.{node}.{task}").read_text().split())
             for node in slurm2.nodes}
    summary = show(pg_uri, "train")
    parts = {part["host"]: part for part in summary["hosts"]}
    assert len(parts) == len(summary["hosts"]), summary["hosts"]  # one part per node
    assert agent_out.count("leaves the node to its first agent") == 2, agent_out
    assert sorted(parts) == slurm2.nodes and summary["hosts_expected"] == 2, summary["hosts"]
    print(f"agents {[(h, p['totals']['cpu_user_s']) for h, p in parts.items()]}, truth {truth}")
    for node, part in parts.items():
        cpu = part["totals"]["cpu_user_s"] + part["totals"]["cpu_system_s"]
        assert abs(cpu - truth[node]) <= 0.05 * truth[node] + 0.1, (node, cpu, truth, agent_out)
        assert part["status"] == "ok", part
    total = summary["totals"]["cpu_user_s"] + summary["totals"]["cpu_system_s"]
    assert total == pytest.approx(sum(p["totals"]["cpu_user_s"] + p["totals"]["cpu_system_s"]
                                      for p in parts.values()))
    assert summary["totals"]["duration_s"] == max(p["totals"]["duration_s"]
                                                  for p in parts.values())
    cpu_entities = {m["entity"] for m in summary["metrics"] if m["metric"] == "cpu"}
    assert cpu_entities == set(slurm2.nodes), cpu_entities  # each node's series, by its name
    text = fp("show", "-o", pg_uri, "train").stdout
    assert "hosts    2 of 2 reported" in text and all(f"  {n}  ok" in text
                                                      for n in slurm2.nodes), text
    page = tmp_path / "train.html"
    proc = fp("plot", "-o", pg_uri, "-u", "train", "--out", page)
    assert proc.returncode == 0, describe(proc)
    html = page.read_text()
    assert all(f"train @ {node} · " in html for node in slurm2.nodes)  # a line per host
    check_host_sums(page, tmp_path)


def check_host_sums(page, tmp_path):
    """In Chromium (where the page's script runs), each metric of the two-node run has a line
    per host and one of their sum, which is never below the largest host's peak nor above the
    sum of their peaks."""
    node = shutil.which("node")
    playwright = os.path.join(os.environ.get("NODE_PATH", ""), "playwright-core")
    if not (node and os.path.isdir(playwright) and os.access(CHROMIUM, os.X_OK)):
        print("the summed lines are not checked: no node, playwright-core or Chromium")
        return
    shots = tmp_path / "shots"
    shots.mkdir()
    check = subprocess.run([node, os.path.join(BROWSER_TESTS, "check_plot.cjs"), str(page),
                            str(shots)], capture_output=True, text=True, timeout=180)
    assert check.returncode == 0, describe(check)
    charts = json.loads(check.stdout)["charts"]
    (cpu,) = [c for c in charts if c["title"].startswith("cpu (")]
    hosts = [s for s in cpu["series"] if s["name"].startswith("train @ ")]
    (total,) = [s for s in cpu["series"] if s["name"] == "train · sum of 2 hosts"]
    peaks = [s["max"] for s in hosts]
    print(f"cpu peaks per host {peaks}, of their sum {total['max']}")
    assert len(hosts) == 2 and total["points"] >= max(s["points"] for s in hosts), cpu
    assert max(peaks) - 1e-6 <= total["max"] <= sum(peaks) + 1e-6, cpu


def test_the_agent_says_what_is_wrong_outside_a_job_and_when_no_step_starts(slurm, tmp_path):
    db = tmp_path / "fp.db"
    outside = fp("agent", "-o", db)
    assert outside.returncode == 2 and "SLURM_JOB_ID is not set" in outside.stderr, \
        describe(outside)
    bad = fp("agent", "-o", db, "--step", "x.1")
    assert bad.returncode == 2 and "--step takes STEP or JOB.STEP" in bad.stderr, describe(bad)
    late = slurm.run("srun", "-n1", FOOTPRINT, "agent", "-o", db, "--step", "99", "--wait", "1")
    assert late.returncode == 4, f"{late.stdout}{late.stderr}"
    assert "did not start on this node within 1 s" in late.stderr, late.stderr
    assert not db.exists() or json.loads(fp("runs", "-o", db, "--json").stdout) == []


def slurm_plan(tmp_path, rows):
    plan = tmp_path / "plan.csv"
    plan.write_text("Experiment,Workload,Name,Devices,Collocation,File,Listeners,Params\n" +
                    "".join(f"sx,{workload},{name},-,-,{wl(program)},-,{params}\n"
                            for workload, name, program, params in rows))
    return plan


def run_json(db, name):
    return next(r for r in json.loads(fp("runs", "-o", db, "--json").stdout) if r["name"] == name)


def counted_sacct(tmp_path):
    """A PATH whose sacct counts its calls (a line each in the file returned) and runs the real
    one."""
    shim = tmp_path / "shim"
    shim.mkdir()
    calls = tmp_path / "sacct.calls"
    real = shutil.which("sacct")
    (shim / "sacct").write_text(f'#!/bin/sh\necho "$*" >> {calls}\nexec {real} "$@"\n')
    (shim / "sacct").chmod(0o755)
    return f"{shim}:{os.environ['PATH']}", calls


def test_executor_slurm_a_job_per_workload_a_step_per_run_and_sstat_beside_it(slurm, tmp_path):
    """A collocated workload of two runs, then a workload of one: two jobs, the second after
    the first, each run a step whose footprint measures it. What sstat last saw of each step
    is reported and stored beside footprint's figures. The runs burn, then idle alive, so that
    sstat (live processes only, whole seconds) has seen all of their CPU time. This Slurm keeps
    no accounts: sacct is asked once, not per poll or per job."""
    plan = slurm_plan(tmp_path, [("together", "burn", "burn", "1 2.3 2.5"),
                                 ("together", "memory", "touch_memory", "200 4"),
                                 ("after", "burn1", "burn", "1 1.2 2.5")])
    db = tmp_path / "fp.db"
    path, sacct_calls = counted_sacct(tmp_path)
    proc = fp("experiment", plan, "-o", db, "--executor", "slurm", "--poll", "300ms",
              "--slurm-dir", tmp_path / "spool", env=clean_env(SLURM_CONF=slurm.conf, PATH=path),
              timeout=300)
    assert proc.returncode == 0, describe(proc) + slurm.logs()
    assert len(sacct_calls.read_text().splitlines()) == 1, sacct_calls.read_text()
    assert proc.stderr.count("submitted as job") == 2, proc.stderr
    runs = {name: run_json(db, name) for name in ("burn", "memory", "burn1")}
    summaries = {name: show(db, run["id"]) for name, run in runs.items()}
    steps = {name: s["meta"]["slurm"] for name, s in summaries.items()}
    assert steps["burn"]["job_id"] == steps["memory"]["job_id"] != steps["burn1"]["job_id"]
    assert steps["burn"]["step_id"] != steps["memory"]["step_id"], steps  # a step per run
    together_end = max(summaries[n]["run"]["ended_at_ns"] for n in ("burn", "memory"))
    assert summaries["burn1"]["run"]["started_at_ns"] >= together_end  # one after the other
    skew = abs(summaries["burn"]["run"]["started_at_ns"] -
               summaries["memory"]["run"]["started_at_ns"]) / 1e9
    checked = {}
    asan = asan_build()
    for name, summary in summaries.items():
        values = {v["name"]: v for v in summary["values"]}
        t = summary["totals"]
        cpu = t["cpu_user_s"] + t["cpu_system_s"] + t["monitor_cpu_s"]
        # footprint's figure beside MaxRSS: the tree's peak, its own, and the peaks of the sstat
        # and of the helper that runs it (processes of the step, which the step's footprint asks)
        rss = values["sstat.max_rss_bytes"]["data"]["footprint"]
        sstat_own = rss - t["rss_sum_peak_bytes"] - t["monitor_peak_rss_bytes"]
        # (under ASan the helper, a fork of footprint, holds the sanitizer's heap)
        assert 0 < sstat_own and (asan or sstat_own < 64 * 2**20), (name, sstat_own)
        sstat_cpu, sstat_rss = values["sstat.cpu_s"]["value"], values["sstat.max_rss_bytes"]["value"]
        checked[name] = (cpu, sstat_cpu, rss / 2**20, sstat_rss / 2**20)
        # Whole seconds of the processes alive at its last gathering: below the tree's and
        # footprint's by less than a second, never above what footprint counts of the step (with
        # its sstat helper and the sstat calls that helper made: processes of the step too).
        step_cpu = values["sstat.cpu_s"]["data"]["footprint"]
        assert cpu <= step_cpu < cpu + 0.5, (name, cpu, step_cpu)
        assert cpu - 1.05 <= sstat_cpu <= step_cpu + 0.05, (name, checked[name], proc.stdout)
        # The task's largest RSS: at least the command's own peak (held to the end), at most
        # that plus footprint's own peak (a sanitizer build's footprint holds far more, and
        # its peak need not fall on one of sstat's readings). An ASan build once broke the
        # upper bound: sstat saw 261 MiB against 199 MiB (the burn's peak and footprint's
        # since the run's start, both mostly the sanitizer's memory). What the sanitizer holds
        # is not what this bound checks, so it is checked in real builds.
        own = t["rss_sum_peak_bytes"]
        assert 0.95 * own - 4 * 2**20 <= sstat_rss, (name, checked[name])
        assert asan or sstat_rss <= 1.05 * rss + 4 * 2**20, (name, checked[name])
    print(f"start skew {skew * 1e3:.0f} ms; (footprint cpu, sstat cpu, footprint MiB, sstat MiB) "
          f"{checked}\n{proc.stdout}")
    assert checked["memory"][2] >= 200  # the 200 MiB touched, seen by both
    assert "sstat cross-check" in proc.stdout and "sx/together/1" in proc.stdout, proc.stdout


def test_executor_slurm_resumes_from_the_queue_after_footprint_stopped(slurm, postgres, pg_uri,
                                                                      tmp_path):
    """footprint stopped while its jobs are queued: the jobs go on; --resume waits for the
    queued ones instead of submitting them again, and each run is stored once, in PostgreSQL,
    whose password is written nowhere (the steps get the URI through the environment)."""
    plan = slurm_plan(tmp_path, [("first", "a", "burn", "1 3"),
                                 ("second", "b", "burn", "1 0.5")])
    name = pg_uri.split("?")[0].rsplit("/", 1)[1]
    postgres.sql("CREATE ROLE slurmer LOGIN PASSWORD 'hunter3-pw'", name)
    postgres.sql(f"ALTER DATABASE {name} OWNER TO slurmer", name)
    db = postgres.uri(name, "slurmer", "hunter3-pw")
    env = clean_env(SLURM_CONF=slurm.conf)
    args = ["experiment", plan, "-o", db, "--executor", "slurm", "--poll", "300ms",
            "--slurm-dir", tmp_path / "spool"]
    first = subprocess.Popen([FOOTPRINT, *map(str, args)], env=env, stderr=subprocess.PIPE,
                             text=True)
    wait_for(lambda: (tmp_path / "spool" / "plan.2.sh").exists(), 60, "the second job")
    time.sleep(0.5)
    first.send_signal(signal.SIGTERM)
    stderr = first.communicate(timeout=60)[1]
    assert first.returncode == 128 + signal.SIGTERM, stderr
    assert "job(s) still queued:" in stderr, stderr
    again = fp(*args, env=env, timeout=300)
    assert again.returncode == 2 and "--resume" in again.stderr, describe(again)
    resumed = fp(*args, "--resume", env=env, timeout=300)
    assert resumed.returncode == 0, describe(resumed) + slurm.logs()
    assert "submitted as job" not in resumed.stderr, resumed.stderr
    assert resumed.stderr.count("found in the queue") == 2, resumed.stderr
    runs = json.loads(fp("runs", "-o", db, "--json").stdout)
    assert sorted(r["name"] for r in runs) == ["a", "b"], runs  # each once
    assert all(r["status"] == "ok" for r in runs), runs
    # Each step stored its own sstat reading, whichever footprint waited for its job: none is
    # lost to the stop. Never above what footprint counts of the step (whole seconds, of live
    # processes; footprint counts the tree, itself, its sstat helper and the helper's calls).
    for r in runs:
        summary = show(db, r["id"])
        values = {v["name"]: v for v in summary["values"]}
        slurm_meta = summary["meta"]["slurm"]
        cpu = values["sstat.cpu_s"]["data"]["footprint"]
        assert values["sstat.cpu_s"]["data"]["step"] == \
            f"{slurm_meta['job_id']}.{slurm_meta['step_id']}", values
        assert 0 <= values["sstat.cpu_s"]["value"] <= cpu + 0.05, values
        assert values["sstat.max_rss_bytes"]["value"] > 0, values
    assert resumed.stdout.count("sstat cross-check") == 1, resumed.stdout
    said = stderr + again.stderr + resumed.stderr + resumed.stdout
    written = "".join(f.read_text() for f in (tmp_path / "spool").iterdir())
    assert "hunter3-pw" not in said + written and "slurmer" in written + said


def test_executor_slurm_refuses_what_it_cannot_do(tmp_path):
    plan = tmp_path / "plan.csv"
    plan.write_text("Experiment,Workload,Name,Devices,Collocation,File,Listeners,Params\n"
                    f"sx,w,a,0,mps,{wl('burn')},-,1 0.1\n")
    proc = fp("experiment", plan, "-o", tmp_path / "fp.db", "--executor", "slurm")
    assert proc.returncode == 2 and "does not set up MPS or MIG" in proc.stderr, describe(proc)
    key = fp("experiment", plan, "-o", tmp_path / "fp.db", "--run-key", "sx/w/9")
    assert key.returncode == 2 and "no run 'sx/w/9'" in key.stderr, describe(key)


def process_table():
    """(pid, ppid, exe, cmdline) of every process that can be read now."""
    table = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            exe = os.readlink(f"/proc/{pid}/exe")
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{pid}/cmdline") as f:
                cmdline = f.read().split("\0")
        except (OSError, ValueError, IndexError):
            continue
        table.append((int(pid), ppid, exe, cmdline))
    return table


def sstat_helper_of(key):
    """The pid of the process a step's footprint forked to run sstat (a footprint of that
    run's key whose parent is one too, caught while it runs sstat); None until there is one."""
    table = process_table()
    fp_exe = os.path.realpath(FOOTPRINT)
    of_key = {pid for pid, _, exe, cmd in table if exe == fp_exe and key in cmd}
    forks = {pid for pid, ppid, _, _ in table if pid in of_key and ppid in of_key}
    running_sstat = {ppid for _, ppid, exe, _ in table if exe.endswith("/sstat")}
    found = forks & running_sstat
    return found.pop() if len(found) == 1 else None


def accounts_of_process(pid):
    """A live process's CPU time with its waited-for children's (s), and its peak RSS (bytes)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    with open(f"/proc/{pid}/status") as f:
        hwm = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    return sum(int(t) for t in fields[11:15]) / os.sysconf("SC_CLK_TCK"), hwm * 1024


def test_executor_slurm_takes_sacct_where_a_step_stored_no_sstat_reading(slurm_accounting,
                                                                         tmp_path):
    """Slurm with an accounting database. The burn's step loses its sstat helper (SIGKILL), so
    it stores no sstat reading: once the job ended, footprint stores sacct's TotalCPU and
    MaxRSS of that step beside its own figures, checked against the burn's own accounts. The
    other step keeps its own sstat reading."""
    slurm = slurm_accounting
    plan = slurm_plan(tmp_path, [("together", "burn", "burn", "1 2.5 0.5"),
                                 ("together", "memory", "touch_memory", "200 3")])
    db, reports = tmp_path / "fp.db", tmp_path / "reports"
    reports.mkdir()
    run = subprocess.Popen(
        [FOOTPRINT, "experiment", str(plan), "-o", str(db), "--executor", "slurm", "--poll",
         "300ms", "--slurm-dir", str(tmp_path / "spool")],
        env=clean_env(SLURM_CONF=slurm.conf, FP_WORKLOAD_REPORT=reports),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        helper = wait_for(lambda: sstat_helper_of("sx/together/1"), 120, "the burn's helper")
        helper_cpu, helper_rss = accounts_of_process(helper)
        os.kill(helper, signal.SIGKILL)
        out, err = run.communicate(timeout=300)
    finally:
        if run.poll() is None:  # the test failed: footprint must not outlive the cluster
            run.kill()
            run.communicate()
    assert run.returncode == 0, f"{out}{err}{slurm.logs()}"
    summaries = {name: show(db, run_json(db, name)["id"]) for name in ("burn", "memory")}
    values = {name: {v["name"]: v for v in s["values"]} for name, s in summaries.items()}
    assert not any(n.startswith("sstat.") for n in values["burn"]), values["burn"]
    assert "sacct.cpu_s" not in values["memory"], values["memory"]  # its own sstat reading
    assert values["memory"]["sstat.max_rss_bytes"]["value"] >= 200 * 2**20, values["memory"]
    cpu, rss = values["burn"]["sacct.cpu_s"], values["burn"]["sacct.max_rss_bytes"]
    slurm_meta = summaries["burn"]["meta"]["slurm"]
    assert cpu["data"]["kind"] == rss["data"]["kind"] == "sacct", cpu
    assert cpu["data"]["step"] == f"{slurm_meta['job_id']}.{slurm_meta['step_id']}", cpu
    by_args = {r["args"]: r for r in (json.loads(p.read_text()) for p in reports.iterdir())}
    burn_report = by_args["1 2.5 0.5"]
    t = summaries["burn"]["totals"]
    footprint_cpu = t["cpu_user_s"] + t["cpu_system_s"] + t["monitor_cpu_s"]
    print(f"sacct TotalCPU {cpu['value']:.3f} s, footprint {footprint_cpu:.3f} s, the burn's own "
          f"{burn_report['cpu_s']:.3f} s, the helper's until killed {helper_cpu:.2f} s; sacct "
          f"MaxRSS {rss['value'] / 2**20:.1f} MiB, footprint {rss['data']['footprint'] / 2**20:.1f}"
          f" MiB, the burn's own {burn_report['maxrss_bytes'] / 2**20:.1f} MiB, the helper's "
          f"{helper_rss / 2**20:.1f} MiB\n{out}")
    assert cpu["data"]["footprint"] == pytest.approx(footprint_cpu)
    # TotalCPU: the kernel's account of every process of the step that was waited for: the
    # burn, footprint, and the helper with the sstat runs it waited for, which footprint does
    # not count. Beyond those, within 0.1 s: footprint's own work after its measurement
    # ended (storing the run: 12 and 18 ms here) and /proc's clock ticks (10 ms). Not checked
    # above in an ASan build, whose footprint ends with LeakSanitizer's scan of its heap.
    assert burn_report["cpu_s"] <= cpu["value"], cpu
    assert footprint_cpu - 0.02 <= cpu["value"], cpu
    assert asan_build() or cpu["value"] <= footprint_cpu + helper_cpu + 0.1, cpu
    # MaxRSS: the largest sum over the task's processes jobacct_gather read: at least the
    # burn's; at most footprint's figure (the burn's peak and its own) with the helper's peak
    # and an sstat's (Debian's: about 10 MiB). Not checked above in an ASan build, whose
    # helper, a fork of footprint, holds the sanitizer's heap.
    assert burn_report["maxrss_bytes"] <= rss["value"], rss
    assert asan_build() or rss["value"] <= rss["data"]["footprint"] + helper_rss + 32 * 2**20
    assert "sacct, at the step's end" in out and "sx/together/1" in out, out
    text = fp("show", "-o", db, run_json(db, "burn")["id"]).stdout
    assert f"sacct of step {cpu['data']['step']}; footprint" in text, text
