"""Nothing stranded (docs/cluster.md, "Nothing stranded"): an agent killed while the server is
down leaves its part in its buffer, on the folder --buffer-dir names; the Slurm Epilog line
`footprint push --all --dir DIR` sends it once the job ends, every sample of it."""
import json
import os
import signal
import socket
import subprocess
import time

from fp_helpers import FOOTPRINT, fp, show, wait_for, wl
from test_parts import agent_on
from test_postgres import database_of


def test_the_epilog_sends_what_a_killed_agent_left(slurm, postgres, pg_uri, tmp_path):
    buffers = tmp_path / "buffers"
    with open(slurm.epilog, "w") as f:
        f.write(f"#!/bin/sh\n{FOOTPRINT} push --all --dir {buffers}\n")
    os.chmod(slurm.epilog, 0o755)
    try:
        killed_agent_then_epilog(slurm, postgres, pg_uri, tmp_path, buffers)
    finally:
        os.unlink(slurm.epilog)


def killed_agent_then_epilog(slurm, postgres, pg_uri, tmp_path, buffers):
    db = database_of(pg_uri)
    script = tmp_path / "job.sh"
    script.write_text(f"""#!/bin/sh
srun --overlap -n1 {FOOTPRINT} agent -o {pg_uri} --buffer-dir {buffers} -n stranded -i 50ms \\
    --wait 60 > {tmp_path}/agent.out 2>&1 &
srun -n1 sh -c 'touch {tmp_path}/began; exec {wl("burn")} 1 3'
wait
""")
    node = socket.gethostname()
    postgres.stop()
    try:
        job = subprocess.Popen(["sbatch", "--wait", "-n1", "-o", tmp_path / "job.out", script],
                               env=slurm.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
        wait_for(lambda: (tmp_path / "began").exists(), 60, "the step")
        time.sleep(1)
        os.kill(wait_for(lambda: agent_on(node), 10, "the agent"), signal.SIGKILL)
        wait_for(lambda: not any(b["live"] for b in listed(buffers)), 10, "the buffer let go")
        [left] = listed(buffers)
        assert left["samples"] > 0 and not left["writer_ended"], left
    finally:
        postgres.start()
    out, err = job.communicate(timeout=120)
    assert job.returncode == 0, f"{out}{err}{slurm.logs()}"
    wait_for(lambda: os.listdir(buffers) == [], 60, "the epilog's push")
    with open(slurm.epilog_log) as f:
        assert "1 buffer(s) sent from" in f.read()
    [[run_id, status]] = postgres.sql("SELECT id, status FROM runs", db)
    [[stored]] = postgres.sql("SELECT sum(c.n) FROM sample_chunks c JOIN series s ON "
                              f"s.id = c.series_id WHERE s.run_id = '{run_id}'", db)
    assert status == "interrupted" and int(stored) == left["samples"], (status, stored, left)
    assert show(pg_uri, run_id)["waiting"] == []


def listed(buffers):
    proc = fp("push", "--list", "--json", "--dir", buffers)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)
