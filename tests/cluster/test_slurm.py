"""footprint inside Slurm (docs/cluster.md): a run started by a task of a step records the job,
the step and the task, checked against what slurmd told that very task."""
import json
import socket

from fp_helpers import FOOTPRINT, describe, fp, show, wl


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
