"""A run across two nodes whose second agent is killed (SIGKILL) in the middle of the step
(docs/cluster.md, "Every part counted"): the dead part contributes what it stored, and the
totals say they are partial and which part is."""
import os
import signal
import subprocess
import time

import pytest

from fp_helpers import FOOTPRINT, fp, show, wait_for, wl
from test_postgres import database_of


def agent_on(node):
    """The pid of the `footprint agent` that measures NODE (its task was told SLURMD_NODENAME),
    or None."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            if argv[0] != FOOTPRINT.encode() or argv[1:2] != [b"agent"]:
                continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                if f"SLURMD_NODENAME={node}".encode() in f.read().split(b"\0"):
                    return int(pid)
        except OSError:
            continue
    return None


def test_a_killed_agents_part_counts_what_it_stored(slurm2, postgres, pg_uri, tmp_path):
    db = database_of(pg_uri)
    script = tmp_path / "job.sh"
    script.write_text(f"""#!/bin/sh
srun --overlap -N2 --ntasks-per-node=1 {FOOTPRINT} agent -o {pg_uri} -n parts -i 50ms \\
    --wait 60 > {tmp_path}/agent.out 2>&1 &
srun -N2 --ntasks-per-node=1 sh -c 'echo $$ > {tmp_path}/began.$SLURMD_NODENAME; \\
    exec /usr/bin/time -f "%U %S %e" -o {tmp_path}/truth.$SLURMD_NODENAME {wl("burn")} 1 4'
wait
""")
    job = subprocess.Popen(["sbatch", "--wait", "-N2", "--ntasks-per-node=1", "-o",
                            tmp_path / "job.out", script], env=slurm2.env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    began = tmp_path / "began.fp-n2"
    wait_for(lambda: began.exists() and began.read_text().strip(), 60, "the step on fp-n2")
    time.sleep(2)
    agent = wait_for(lambda: agent_on("fp-n2"), 10, "fp-n2's agent")
    # The burn's CPU as its kernel accounts it at the kill (it is /usr/bin/time's child; the
    # step's shell became /usr/bin/time).
    timer = began.read_text().strip()
    with open(f"/proc/{timer}/task/{timer}/children") as f:
        burn = f.read().split()[0]
    with open(f"/proc/{burn}/stat") as f:
        ticks = f.read().rsplit(")", 1)[1].split()[11:13]  # utime, stime
    killed_ns = time.time_ns()
    os.kill(agent, signal.SIGKILL)
    burn_cpu_at_kill = sum(map(int, ticks)) / os.sysconf("SC_CLK_TCK")
    out, err = job.communicate(timeout=120)
    agent_out = (tmp_path / "agent.out").read_text()
    assert job.returncode == 0, f"{out}{err}{agent_out}{slurm2.logs()}"

    summary = show(pg_uri, "parts")
    parts = {part["host"]: part for part in summary["hosts"]}
    assert sorted(parts) == ["fp-n1", "fp-n2"], summary["hosts"]
    whole, dead = parts["fp-n1"], parts["fp-n2"]
    assert whole["status"] == "ok" and not whole["partial"], whole
    assert dead["status"] == "interrupted" and dead["partial"], dead
    # Its samples as the server counts them, and the CPU they add up to: the burn's own CPU at
    # the kill, less what one thread can burn between the part's last stored sample and the kill.
    [[stored]] = postgres.sql("SELECT sum(c.n) FROM sample_chunks c JOIN series s ON "
                              f"s.id = c.series_id WHERE s.run_id = '{dead['run']}'", db)
    assert dead["samples"] == int(stored) > 0, (dead, stored)
    _, _, wall = map(float, (tmp_path / "truth.fp-n2").read_text().split())
    measured = dead["totals"]["duration_s"]
    assert 1 < measured < wall, (measured, wall)
    [[started_ns]] = postgres.sql(f"SELECT started_at_ns FROM runs WHERE id = '{dead['run']}'", db)
    unseen_s = max(0.0, (killed_ns - int(started_ns)) / 1e9 - measured)
    cpu = dead["totals"]["cpu_user_s"] + dead["totals"]["cpu_system_s"]
    # 10 % and 0.1 s: the part's CPU is integrated from its samples of the tree's CPU rate.
    assert 0.9 * burn_cpu_at_kill - unseen_s - 0.1 <= cpu <= 1.1 * burn_cpu_at_kill + 0.1, \
        (cpu, burn_cpu_at_kill, unseen_s, dead)
    # The run's totals hold both parts, and say which one is partial.
    both = whole["totals"]["cpu_user_s"] + whole["totals"]["cpu_system_s"] + cpu
    assert summary["totals"]["cpu_user_s"] + summary["totals"]["cpu_system_s"] == \
        pytest.approx(both)
    text = fp("show", "-o", pg_uri, "parts").stdout
    assert "2 of 2 reported; the totals below are their sums, partial: fp-n2 stored no totals" \
        in text, text
    assert f"partial: what its {int(stored)} stored samples add up to" in text, text
