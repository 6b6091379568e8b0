"""The queue of `footprint serve` on a Slurm partition (docs/evaluation.md): a plan queued for
slurm:debug runs through `experiment --executor slurm` on the one-node cluster of the tests;
cancelling it cancels its Slurm job (scancel: a stopped footprint leaves its jobs running), the
job leaves squeue and the queue stores the job cancelled."""
import json
import re
import signal
import subprocess

from fp_helpers import FOOTPRINT, clean_env, fp, wait_for, wl


def queue_job(db, job):
    return next(j for j in json.loads(fp("queue", "list", "-o", db, "--json").stdout)
                if j["id"] == job)


def test_a_plan_on_a_slurm_partition_runs_there_and_is_cancelled_with_scancel(slurm, tmp_path):
    db = str(tmp_path / "fp.db")
    assert fp("run", "-q", "-o", db, "--", "true").returncode == 0
    plans = tmp_path / "plans"
    plans.mkdir()
    (plans / "long.csv").write_text(
        "Experiment,Workload,Name,Devices,Collocation,File,Listeners,Params\n"
        f"sq,long,long,-,-,{wl('burn')},-,1 0.5 120\n")  # burns, then idles alive
    added = fp("queue", "add", "-o", db, "--plans", plans, "plan", "long.csv",
               "--target", "slurm:debug")
    assert added.returncode == 0, added.stderr
    job = int(added.stdout)
    serve = subprocess.Popen([FOOTPRINT, "serve", "-o", db, "--port", "0", "--plans", plans],
                             env=clean_env(SLURM_CONF=slurm.conf), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        assert re.search(r"http://127\.0\.0\.1:\d+/", serve.stdout.readline())

        def slurm_job():
            log = fp("queue", "log", "-o", db, str(job)).stderr
            m = re.search(r"submitted as job (\d+)", log)
            return m and m.group(1)
        slurm_id = wait_for(slurm_job, 60, "the plan's Slurm job submitted")
        runs = lambda: json.loads(fp("runs", "-o", db, "--json").stdout)  # noqa: E731
        wait_for(lambda: any(r["name"] == "long" and r["status"] == "running" for r in runs()),
                 60, "the run started by its Slurm step")
        assert fp("queue", "cancel", "-o", db, str(job)).returncode == 0
        wait_for(lambda: slurm.run("squeue", "-h", "-j", slurm_id).stdout.strip() == "", 30,
                 f"Slurm job {slurm_id} gone from squeue")
        ended = wait_for(lambda: queue_job(db, job)["state"] == "cancelled" and queue_job(db, job),
                         30, "the queued job stored cancelled")
        assert ended["target"] == "slurm:debug" and ended["reason"].startswith("cancelled:")
    finally:
        serve.send_signal(signal.SIGTERM)
        serve.communicate(timeout=60)
    assert serve.returncode == 0
