"""footprint experiment on GPUs, against the fake NVML library and fake nvidia-smi /
nvidia-cuda-mps-control on PATH (tests/fakes/bin), which log the commands they are given:
devices resolved to UUIDs, MPS and MIG set up in order and torn down on success and failure,
GPU rows refused before anything starts on a machine without a GPU."""
import os
import sqlite3
import signal
import subprocess
import textwrap

from fp_helpers import FOOTPRINT, clean_env, describe, fp, wait_for
from test_experiment import HEADER, plan_runs
from test_gpu import fake_lib

FAKE_BIN = os.path.join(os.path.dirname(__file__), "..", "fakes", "bin")

# Logs that it ran and the CUDA variables it was given; "fail" makes it fail, "slow" sleeps.
DUMP = """\
echo "run $1" >> "$FAKE_GPU_LOG"
env | grep -E '^CUDA_(VISIBLE|MPS)' | sort > "$OUT_DIR/$1"
[ "$1" != slow ] || exec sleep 60
[ "$1" != fail ]
"""


class FakeGpuMachine:
    def __init__(self, tmp_path, **env):
        self.tmp = tmp_path
        self.log = tmp_path / "gpu.log"
        self.log.write_text("")
        self.script = tmp_path / "nvml-script"
        self.script.write_text('gpu name="NVIDIA A100-SXM4-80GB" uuid=GPU-11111111-aaaa mig=1\n'
                               'gpu name="NVIDIA A100-SXM4-80GB" uuid=GPU-22222222-bbbb\n')
        self.out = tmp_path / "out"
        self.out.mkdir()
        (tmp_path / "dump.sh").write_text(DUMP)
        self.env = clean_env(**{"FOOTPRINT_NVML_LIBRARY": fake_lib(),
                                "FAKE_NVML_SCRIPT": self.script, "FAKE_GPU_LOG": self.log,
                                "OUT_DIR": self.out,
                                "PATH": os.path.abspath(FAKE_BIN) + ":" + os.environ["PATH"],
                                **env})
        self.env.pop("CUDA_VISIBLE_DEVICES", None)
        self.db = tmp_path / "fp.db"

    def run(self, rows, *options):
        plan = self.tmp / "plan.csv"
        plan.write_text(HEADER + textwrap.dedent(rows))
        return fp("experiment", "-o", self.db, "--no-git", plan, *options, env=self.env)

    def lines(self):
        return self.log.read_text().splitlines()

    def cuda_env(self, name):
        return dict(line.split("=", 1) for line in (self.out / name).read_text().splitlines())


def test_devices_become_uuids(tmp_path):
    m = FakeGpuMachine(tmp_path)
    proc = m.run("""\
        e, 1, , , 1,   -, dump.sh, smi, one
        e, 1, , , 0+1, -, dump.sh, smi, both
        """)
    assert proc.returncode == 0, describe(proc)
    assert m.cuda_env("one") == {"CUDA_VISIBLE_DEVICES": "GPU-22222222-bbbb"}
    assert m.cuda_env("both") == {"CUDA_VISIBLE_DEVICES": "GPU-11111111-aaaa,GPU-22222222-bbbb"}
    runs = {r["key"]: r for r in plan_runs(m.db)}
    assert runs["e/1/1"]["meta"]["repro"]["env"]["CUDA_VISIBLE_DEVICES"] == "GPU-22222222-bbbb"
    assert runs["e/1/1"]["meta"]["repro"]["driver"] == "550.54.15"


def test_mps_started_for_the_workload_and_stopped_after(tmp_path):
    m = FakeGpuMachine(tmp_path)
    proc = m.run("""\
        e, 1, , , 0, mps:50, dump.sh, smi, a
        e, 1, , , 0, mps,    dump.sh, smi, b
        e, 2, , , 1, -,      dump.sh, smi, c
        """)
    assert proc.returncode == 0, describe(proc)
    lines = m.lines()
    assert lines[0].startswith("mps-control -d CUDA_VISIBLE_DEVICES=GPU-11111111-aaaa pipe=/tmp/")
    assert sorted(lines[1:3]) == ["run a", "run b"]
    assert lines[3].startswith("mps-control quit pipe=/tmp/")
    assert lines[4:] == ["run c"]
    pipe = lines[0].split("pipe=")[1].split()[0]
    a, b = m.cuda_env("a"), m.cuda_env("b")
    assert a["CUDA_MPS_PIPE_DIRECTORY"] == b["CUDA_MPS_PIPE_DIRECTORY"] == pipe
    assert a["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] == "50"
    assert "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE" not in b
    assert not str(pipe).startswith(str(tmp_path)) and not os.path.exists(pipe)
    assert "CUDA_MPS_PIPE_DIRECTORY" not in m.cuda_env("c")


def test_mps_stopped_when_a_run_fails(tmp_path):
    m = FakeGpuMachine(tmp_path)
    proc = m.run("""\
        e, 1, , , 0, mps, dump.sh, smi, fail
        e, 1, , , 0, mps, dump.sh, smi, ok
        """)
    assert proc.returncode == 1, describe(proc)
    assert m.lines()[-1].startswith("mps-control quit")


def test_mig_instances_created_per_run_and_destroyed_in_reverse(tmp_path):
    m = FakeGpuMachine(tmp_path)
    proc = m.run("""\
        e, 1, , , 0, 3g.40gb, dump.sh, smi, a
        e, 1, , , 0, 3g.40gb, dump.sh, smi, b
        """)
    assert proc.returncode == 0, describe(proc)
    lines = m.lines()
    assert lines[:2] == ["nvidia-smi mig -i 0 -cgi 3g.40gb -C"] * 2
    assert sorted(lines[2:4]) == ["run a", "run b"]
    assert lines[4:] == ["nvidia-smi mig -i 0 -gi 2 -ci 0 -dci", "nvidia-smi mig -i 0 -gi 2 -dgi",
                         "nvidia-smi mig -i 0 -gi 1 -ci 0 -dci", "nvidia-smi mig -i 0 -gi 1 -dgi"]
    assert {m.cuda_env("a")["CUDA_VISIBLE_DEVICES"], m.cuda_env("b")["CUDA_VISIBLE_DEVICES"]} == {
        "MIG-fake-0-1", "MIG-fake-0-2"}
    assert "mig gpu" not in m.script.read_text()  # every instance is gone again


def test_mig_failure_undoes_what_was_made_and_runs_nothing(tmp_path):
    m = FakeGpuMachine(tmp_path, FAKE_SMI_FAIL_CGI=2)
    proc = m.run("""\
        e, 1, , , 0, 3g.40gb, dump.sh, smi, a
        e, 1, , , 0, 3g.40gb, dump.sh, smi, b
        """)
    assert proc.returncode == 1, describe(proc)
    assert "could not create a MIG instance 3g.40gb on GPU 0" in proc.stderr
    assert m.lines() == ["nvidia-smi mig -i 0 -cgi 3g.40gb -C", "nvidia-smi mig -i 0 -cgi 3g.40gb -C",
                         "nvidia-smi mig -i 0 -gi 1 -ci 0 -dci", "nvidia-smi mig -i 0 -gi 1 -dgi"]
    assert not m.db.exists() or plan_runs(m.db) == []


def test_gpu_rows_refused_without_a_gpu_but_dry_run_prints_them(tmp_path):
    m = FakeGpuMachine(tmp_path, FOOTPRINT_NVML_LIBRARY=tmp_path / "no-such-libnvidia-ml.so.1")
    rows = """\
        e, 1, , , -, -,   dump.sh, top, cpu-only
        e, 2, , , 0, mps, dump.sh, smi, a
        """
    proc = m.run(rows)
    assert proc.returncode == 1, describe(proc)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "run e/2/1 needs a GPU but" in lines[0], describe(proc)
    assert m.lines() == [] and not os.listdir(m.out)  # nothing started, not even the CPU row
    proc = m.run(rows, "--dry-run")
    assert proc.returncode == 0, describe(proc)
    assert "e/2/1" in proc.stdout and "mps" in proc.stdout


def _sleeping_in_group(pgid):
    """Whether a `sleep` process of process group PGID exists."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        if comm == "sleep" and int(fields[2]) == pgid:
            return True
    return False


def test_ctrl_c_stops_the_workload_and_tears_down(tmp_path):
    m = FakeGpuMachine(tmp_path)
    plan = tmp_path / "plan.csv"
    plan.write_text(HEADER + "e, 1, , , 0, 3g.40gb, dump.sh, smi, slow\n"
                             "e, 2, , , 0, -, dump.sh, smi, never\n")
    proc = subprocess.Popen([FOOTPRINT, "experiment", "-o", str(m.db), "--no-git", str(plan)],
                            env=m.env, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        wait_for(lambda: "run slow" in m.log.read_text(), 30, "the run to start")
        # Until the script has exec'd its sleep: a SIGINT that reached the shell just before
        # the exec would be forgotten by it, and the sleep would run its 60 s.
        wait_for(lambda: _sleeping_in_group(proc.pid), 30, "the workload's sleep")
        os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole group
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 128 + signal.SIGINT, err
    assert "--resume goes on" in err
    assert m.lines()[-2:] == ["nvidia-smi mig -i 0 -gi 1 -ci 0 -dci",
                              "nvidia-smi mig -i 0 -gi 1 -dgi"]
    assert "run never" not in m.lines()
    assert [r["status"] for r in plan_runs(m.db)] == ["killed"]


def test_dcgmi_listener_records_sm_activity_from_dcgm(tmp_path):
    """radT's dcgmi listener: the row records the profiling fields, here from a fake DCGM host
    engine on an A100 (no GPM in NVML), with DCGM named as their source."""
    from fp_helpers import WORKLOADS  # noqa: PLC0415
    dcgm = os.path.join(WORKLOADS, "fake_dcgm", "libdcgm.so.4")
    assert os.path.exists(dcgm), f"the fake libdcgm {dcgm} was not built"
    script = tmp_path / "dcgm-script"
    script.write_text("gpu sm_active=0.42 tensor=0.3 pcie_rx=2500000 unsupported=1011,1012\n"
                      "gpu sm_active=0\n")
    m = FakeGpuMachine(tmp_path, FOOTPRINT_DCGM_LIBRARY=dcgm, FAKE_DCGM_SCRIPT=script)
    (tmp_path / "busy.sh").write_text("sleep 0.6\n")
    proc = m.run("""\
        e, 1, , , 0, -, busy.sh, dcgmi, a
        """)
    assert proc.returncode == 0, describe(proc)
    run = next(r for r in plan_runs(m.db) if r["key"] == "e/1/1")
    activity = run["meta"]["gpu"]["devices"]["gpu:0"]["activity"]
    assert activity["gpu.sm_active"] == ("DCGM field 1002 (SM_ACTIVE), host engine at 127.0.0.1,"
                                         " watched every 100 ms")
    con = sqlite3.connect(m.db)
    values = dict(con.execute(
        "SELECT se.metric, AVG(sa.value) FROM series se JOIN samples sa ON sa.series_id = se.id "
        "WHERE se.run_id = ? AND se.entity = 'gpu:0' GROUP BY se.metric", (run["id"],)))
    assert values["gpu.sm_active"] == 42
    assert values["gpu.tensor_active"] == 30
    assert values["gpu.pcie.rx"] == 2500000
    # What neither GPM (an A100 has none) nor DCGM serves is absent, with both reasons.
    assert "gpu.nvlink.rx" not in values
    why = run["meta"]["gpu"]["unsupported"]["gpu.nvlink.rx@gpu:0"]
    assert "does not support GPM" in why and "DCGM field 1012 (NVLINK_RX_BYTES)" in why, why
