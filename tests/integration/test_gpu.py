"""GPU measurement end to end: footprint run, show and doctor with the fake libnvidia-ml.so.1
(tests/fakes/fake_nvml.c) loaded through FOOTPRINT_NVML_LIBRARY.

The workload is a shell that writes its PID into the file the fake's script names (pid=tree),
then becomes `sleep`: the fake then lists the run's own process as a GPU process, beside a
foreign one (PID 1) that shares the device.
"""
import json
import os
from pathlib import Path

import pytest

from fp_helpers import FOOTPRINT, WORKLOADS, clean_env, describe, fp, metric, raw_samples, show

FAKE_DIR = os.environ.get("FP_FAKE_NVML_DIR") or os.path.join(WORKLOADS, "fake_nvml")

SHARED = """
pids_file {pids}
gpu name="NVIDIA H100 80GB HBM3" uuid=GPU-11111111-aaaa memory_total=85899345920 memory_used=3221225472 util=75 power_mw=300000 energy_period_ms=100 sm_clock=1980 temperature=61 {extra}
process gpu=0 kind=compute pid=tree memory=1073741824
process gpu=0 kind=compute pid=1 memory=2147483648
putil gpu=0 pid=tree sm=60
putil gpu=0 pid=1 sm=20
"""

TWO_GPUS_AND_MIG = """
pids_file {pids}
gpu name="NVIDIA H100 80GB HBM3" uuid=GPU-11111111-aaaa util=10
gpu name="NVIDIA A100-SXM4-40GB" uuid=GPU-22222222-bbbb mig=1 util=20
mig gpu=1 name="NVIDIA A100-SXM4-40GB MIG 3g.20gb" uuid=MIG-33333333-cccc memory_total=21474836480 memory_used=1000 gi=1 ci=0 unsupported=util,power,energy,clock,temperature,putil
process gpu=1 mig=0 kind=compute pid=tree memory=4096
"""


def fake_lib(variant="full"):
    path = os.path.join(FAKE_DIR, variant, "libnvidia-ml.so.1")
    assert os.path.exists(path), f"the fake NVML library {path} was not built"
    return path


class Gpu:
    """A scripted fake GPU machine in tmp_path; run() measures a command on it."""

    def __init__(self, tmp_path, script, variant="full", **env):
        self.tmp = tmp_path
        self.db = tmp_path / "fp.db"
        self.pids = tmp_path / "pids"
        (tmp_path / "script").write_text(script.format(pids=self.pids, extra=""))
        self.env = clean_env(FOOTPRINT_NVML_LIBRARY=fake_lib(variant),
                             FAKE_NVML_SCRIPT=tmp_path / "script", **env)
        self.env.pop("CUDA_VISIBLE_DEVICES", None)
        self.env.update({k: str(v) for k, v in env.items()})

    def command(self, seconds):
        return ["sh", "-c", f"echo $$ > {self.pids}; exec sleep {seconds}"]

    def run(self, *options, seconds=1.0, expect_rc=0):
        proc = fp("run", "-o", self.db, "-q", "--no-git", *options, "--", *self.command(seconds),
                  env=self.env)
        assert proc.returncode == expect_rc, describe(proc)
        return proc

    def show(self):
        return show(self.db, env=self.env)


def entities(summary):
    return {(m["metric"], m["entity"]) for m in summary["metrics"] if m["metric"].startswith("gpu")}


def test_scripted_values_come_out(tmp_path):
    gpu = Gpu(tmp_path, SHARED)
    gpu.run(seconds=1.2)
    s = gpu.show()
    assert metric(s, "gpu", "gpu:0")["mean"] == 75
    assert metric(s, "gpu.memory", "gpu:0")["max"] == 3221225472
    assert metric(s, "gpu.power", "gpu:0")["mean"] == 300
    assert metric(s, "gpu.sm_clock", "gpu:0")["mean"] == 1980
    assert metric(s, "gpu.temperature", "gpu:0")["mean"] == 61
    # The tree's GPU memory and SMs, not those of the foreign process.
    assert metric(s, "gpu.memory.tree", "gpu:0")["max"] == 1073741824
    assert metric(s, "gpu.tree", "gpu:0")["max"] == 60


def test_energy_counter_and_attributed_share(tmp_path):
    gpu = Gpu(tmp_path, SHARED)
    gpu.run(seconds=1.2)
    s = gpu.show()
    t = s["totals"]
    # 300 W between the first and the last pass, read from a counter that steps every 100 ms
    # (30 J a step): within a step of 300 W times the passes' own span (the run's duration is
    # longer by the start and end around them, which ASan and a busy machine stretch).
    span_s = (raw_samples(gpu.db, s["run"]["id"], "gpu.energy")[-1][0] -
              raw_samples(gpu.db, s["run"]["id"], "gpu.energy")[0][0]) / 1e9
    assert t["gpu_energy_j"] == pytest.approx(300 * span_s, abs=30 + 1), (t, span_s)
    assert span_s <= t["duration_s"]
    assert metric(s, "gpu.energy", "gpu:0")["max"] == pytest.approx(t["gpu_energy_j"])
    # Each pass's energy increment is the tree's in proportion to its share of the SMs: 60 of
    # the device's 80 % once the shell has written its PID, 0 of 20 % before (a step or two
    # under ASan). Ground truth from the pass's own samples of both series.
    energy = dict(raw_samples(gpu.db, s["run"]["id"], "gpu.energy"))
    tree_sm = dict(raw_samples(gpu.db, s["run"]["id"], "gpu.tree"))
    passes = sorted(energy)
    assert set(passes) == set(tree_sm), "both come from the same passes"
    assert max(tree_sm.values()) == 60
    expected = sum((energy[b] - energy[a]) * tree_sm[b] / 80 for a, b in zip(passes, passes[1:]))
    assert t["gpu_energy_tree_j"] == pytest.approx(expected, rel=0.01), (expected, t)
    dev = s["meta"]["gpu"]["devices"]["gpu:0"]
    assert dev["energy_source"] == "counter"
    assert dev["energy_update_period_ms"] == pytest.approx(100, rel=0.2)
    assert dev["name"] == "NVIDIA H100 80GB HBM3" and dev["uuid"] == "GPU-11111111-aaaa"


def test_power_integrated_where_there_is_no_counter(tmp_path):
    gpu = Gpu(tmp_path, SHARED.replace("{extra}", "unsupported=energy"))
    gpu.run(seconds=1.0)
    s = gpu.show()
    dev = s["meta"]["gpu"]["devices"]["gpu:0"]
    assert dev["energy_source"] == "power integration"
    assert "energy_update_period_ms" not in dev
    # Integrated from the first to the last sample of a constant 300 W: 300 W times their span.
    power_t = [t for t, _ in raw_samples(gpu.db, s["run"]["id"], "gpu.power")]
    span_s = (power_t[-1] - power_t[0]) / 1e9
    assert s["totals"]["gpu_energy_j"] == pytest.approx(300 * span_s, rel=0.01), (s["totals"], span_s)
    assert 0 < span_s <= s["totals"]["duration_s"]


def test_mig_unsupported_fields_are_recorded_not_zero(tmp_path):
    gpu = Gpu(tmp_path, TWO_GPUS_AND_MIG)
    gpu.run(seconds=0.5)
    s = gpu.show()
    got = entities(s)
    assert ("gpu", "gpu:1/mig:0") not in got
    assert ("gpu.power", "gpu:1/mig:0") not in got
    assert ("gpu.memory", "gpu:1/mig:0") in got
    unsupported = s["meta"]["gpu"]["unsupported"]
    assert "NVML_ERROR_NOT_SUPPORTED" in unsupported["gpu@gpu:1/mig:0"], unsupported
    assert metric(s, "gpu.memory.tree", "gpu:1/mig:0")["max"] == 4096
    assert metric(s, "gpu.memory.tree", "gpu:0")["max"] == 0  # the tree holds nothing there
    # Only what was asked for is said to be unsupported.
    gpu.run("-m", "gpu.memory", seconds=0.1)
    assert gpu.show()["meta"]["gpu"]["unsupported"] == {}


def test_old_driver_without_optional_functions(tmp_path):
    gpu = Gpu(tmp_path, SHARED, variant="minimal")
    gpu.run(seconds=0.5)
    s = gpu.show()
    g = s["meta"]["gpu"]
    assert "nvmlDeviceGetTotalEnergyConsumption" in g["missing_functions"]
    assert g["devices"]["gpu:0"]["energy_source"] == "power integration"
    assert "is not exported" in g["unsupported"]["gpu.tree@gpu:0"]
    assert metric(s, "gpu.memory.tree", "gpu:0")["max"] == 1073741824
    # Shared without per-process utilisation: the tree's energy is unknown, not 0.
    assert s["totals"]["gpu_energy_tree_j"] is None


def test_missing_required_function_leaves_the_run_alone(tmp_path):
    gpu = Gpu(tmp_path, SHARED, variant="broken")
    gpu.run(seconds=0.2)
    s = gpu.show()
    assert "nvmlDeviceGetCount" in s["meta"]["gpu"]["unavailable"]
    assert entities(s) == set()
    assert s["totals"]["gpu_energy_j"] is None
    assert metric(s, "cpu", "tree")["count"] > 0


def test_no_library_no_gpu_block(tmp_path):
    db = tmp_path / "fp.db"
    env = clean_env(FOOTPRINT_NVML_LIBRARY=tmp_path / "none" / "libnvidia-ml.so.1")
    proc = fp("run", "-o", db, "-q", "--no-git", "--", "true", env=env)
    assert proc.returncode == 0, describe(proc)
    s = show(db, env=env)
    assert "cannot load" in s["meta"]["gpu"]["unavailable"]
    assert entities(s) == set()
    text = fp("show", "-o", db, env=env).stdout
    assert "\ngpu\n" not in text


def test_gpu_metrics_asked_for_without_a_gpu_warn_once(tmp_path):
    db = tmp_path / "fp.db"
    env = clean_env(FOOTPRINT_NVML_LIBRARY=tmp_path / "none" / "libnvidia-ml.so.1")
    proc = fp("run", "-o", db, "-q", "--no-git", "-m", "cpu,gpu*", "--", "true", env=env)
    assert proc.returncode == 0, describe(proc)
    warnings = [l for l in proc.stderr.splitlines() if "warning" in l]
    assert len(warnings) == 1, describe(proc)
    assert warnings[0].startswith("footprint: warning: gpu, gpu.tree, gpu.memory")
    assert "cannot load" in warnings[0] and "footprint doctor explains" in warnings[0]
    # The default metrics, alone or extended, say nothing about a machine without GPUs.
    for metrics in (["-m", "default"], ["-m", "all"], []):
        proc = fp("run", "-o", db, "-q", "--no-git", *metrics, "--", "true", env=env)
        assert proc.returncode == 0 and "gpu" not in proc.stderr, describe(proc)


def test_no_gpu_metric_no_nvml(tmp_path):
    gpu = Gpu(tmp_path, SHARED)
    gpu.run("-m", "cpu,memory", seconds=0.1)
    assert "gpu" not in gpu.show()["meta"]


def test_only_gpu_metrics_still_know_the_tree(tmp_path):
    gpu = Gpu(tmp_path, SHARED)
    gpu.run("-m", "gpu.memory.tree", seconds=0.5)
    s = gpu.show()
    assert [m["metric"] for m in s["metrics"]] == ["gpu.memory.tree"]
    assert metric(s, "gpu.memory.tree", "gpu:0")["max"] == 1073741824


def test_gpu_lost_mid_run(tmp_path):
    gpu = Gpu(tmp_path, SHARED.replace("{extra}", "lost_after_ms=400"))
    proc = gpu.run(seconds=1.0)
    assert "warning: GPU gpu:0 (NVIDIA H100 80GB HBM3) was lost" in proc.stderr, proc.stderr
    s = gpu.show()
    assert s["run"]["status"] == "ok"
    dev = s["meta"]["gpu"]["devices"]["gpu:0"]
    assert "NVML_ERROR_GPU_IS_LOST" in dev["lost_reason"]
    # The fake is lost 400 ms after NVML's init, which comes before the run starts: the last
    # GPU sample is at most 0.4 s into the run, and the loss is found by the pass after it.
    # lost_at_s counts from the probe's first pass (the first gpu sample), the samples from the
    # run's start; a millisecond allows for the two clock reads.
    gpu_t = [t for t, _ in raw_samples(gpu.db, s["run"]["id"], "gpu")]
    cpu_t = [t for t, _ in raw_samples(gpu.db, s["run"]["id"], "cpu")]
    assert gpu_t[-1] <= 0.4e9, gpu_t
    found_at = gpu_t[0] + dev["lost_at_s"] * 1e9
    next_pass = min(t for t in cpu_t if t > gpu_t[-1])
    assert gpu_t[-1] < found_at <= next_pass + 1e6, (dev, gpu_t, cpu_t)
    assert cpu_t[-1] > 0.9e9  # the rest went on: the command slept 1 s
    text = fp("show", "-o", gpu.db, env=gpu.env).stdout
    assert "note: gpu:0 was lost" in text, text


@pytest.mark.parametrize("visible, expected", [
    ("1", {"gpu:1", "gpu:1/mig:0"}),
    ("GPU-11111111", {"gpu:0"}),
    ("MIG-33333333-cccc", {"gpu:1", "gpu:1/mig:0"}),
    ("0,9,1", {"gpu:0"}),
])
def test_cuda_visible_devices_selects_the_gpus(tmp_path, visible, expected):
    gpu = Gpu(tmp_path, TWO_GPUS_AND_MIG, CUDA_VISIBLE_DEVICES=visible)
    gpu.run(seconds=0.2)
    s = gpu.show()
    assert {e for _, e in entities(s)} == expected
    sel = s["meta"]["gpu"]["selection"]
    assert sel["from"] == "CUDA_VISIBLE_DEVICES" and sel["list"] == visible
    if visible == "0,9,1":
        assert "'9'" in sel["ignored"]


def test_gpus_option_overrides_and_empty_list_selects_nothing(tmp_path):
    gpu = Gpu(tmp_path, TWO_GPUS_AND_MIG, CUDA_VISIBLE_DEVICES="1")
    gpu.run("--gpus", "0", seconds=0.2)
    s = gpu.show()
    assert {e for _, e in entities(s)} == {"gpu:0"}
    assert s["meta"]["gpu"]["selection"]["from"] == "--gpus"
    gpu.env["CUDA_VISIBLE_DEVICES"] = ""
    gpu.run(seconds=0.2)
    s = gpu.show()
    assert entities(s) == set()
    assert "no GPU selected by CUDA_VISIBLE_DEVICES=''" in s["meta"]["gpu"]["unavailable"]


def test_doctor_lists_gpus_and_their_metrics(tmp_path):
    gpu = Gpu(tmp_path, TWO_GPUS_AND_MIG)
    proc = fp("doctor", "--json", env=gpu.env)
    assert proc.returncode == 0, describe(proc)
    checks = {c["check"]: c for c in json.loads(proc.stdout)}
    assert checks["nvml"]["ok"] and "driver 550.54.15" in checks["nvml"]["detail"]
    assert "NVIDIA H100 80GB HBM3, GPU-11111111-aaaa" in checks["gpu:0"]["detail"]
    assert "MIG enabled" in checks["gpu:1"]["detail"]
    mig = checks["gpu:1/mig:0"]
    assert "MIG-33333333-cccc, 20.0 GiB, GPU instance 1" in mig["detail"], mig
    lines = dict(line.split(": ", 1) for line in mig["lines"])
    assert lines["gpu"].startswith("no, NVML_ERROR_NOT_SUPPORTED"), lines
    assert lines["gpu.memory"].startswith("yes"), lines
    assert lines["gpu.energy.tree"].startswith("no, NVML reports energy per GPU"), lines
    text = fp("doctor", env=gpu.env).stdout
    for line in mig["lines"]:
        assert line in text


def test_doctor_without_nvml_says_why(tmp_path):
    env = clean_env(FOOTPRINT_NVML_LIBRARY=tmp_path / "libnvidia-ml.so.1")
    checks = {c["check"]: c for c in json.loads(fp("doctor", "--json", env=env).stdout)}
    assert not checks["nvml"]["ok"]
    assert "cannot load" in checks["nvml"]["detail"]
    assert not any(name.startswith("gpu:") for name in checks)


def test_show_notes_scopes_shorter_than_the_counter_period(tmp_path):
    package = Path(FOOTPRINT).parent / "python"
    if not (package / "footprint").is_dir():
        pytest.skip("the Python package is not built here (sanitizer builds)")
    gpu = Gpu(tmp_path, SHARED, PYTHONPATH=package)
    program = tmp_path / "scopes.py"
    program.write_text(
        "import time, footprint as fp\n"
        f"open({str(gpu.pids)!r}, 'w').write('%d' % __import__('os').getpid())\n"
        "bm = fp.Benchmark()\n"
        "with bm.scope('short'): time.sleep(0.02)\n"
        "with bm.scope('long'): time.sleep(0.6)\n"
        "bm.close()\n")
    proc = fp("run", "-o", gpu.db, "-q", "--no-git", "--", "/usr/bin/python3", program,
              env=gpu.env)
    assert proc.returncode == 0, describe(proc)
    text = fp("show", "-o", gpu.db, env=gpu.env).stdout
    assert "\ngpu\n" in text, text
    assert "note: scope 'short'" in text and "energy counter" in text, text
    assert "scope 'long'" not in text, text


@pytest.mark.parametrize("tree_bytes, advice", [
    (1073741824, "1g.10gb fits (1 of 7 compute slices, 10 GiB; 7 per H100-80GB)"),
    (16106127360, "1g.20gb fits (1 of 7 compute slices, 20 GiB; 4 per H100-80GB)"),
    (85899345920, "no MIG profile of the H100-80GB holds it"),
])
def test_show_names_the_smallest_mig_profile_that_holds_the_runs_peak(tmp_path, tree_bytes,
                                                                       advice):
    script = SHARED.replace("pid=tree memory=1073741824", f"pid=tree memory={tree_bytes}")
    gpu = Gpu(tmp_path, script)
    gpu.run(seconds=0.5)
    text = fp("show", "-o", gpu.db, env=gpu.env).stdout
    [line] = [line for line in text.splitlines() if "MIG:" in line]
    assert "gpu:0 (NVIDIA H100 80GB HBM3) held at most" in line and advice in line, line


def test_no_mig_advice_on_a_mig_device_nor_for_a_gpu_the_run_did_not_use(tmp_path):
    gpu = Gpu(tmp_path, TWO_GPUS_AND_MIG)  # the tree's memory is on gpu:1's MIG device
    gpu.run(seconds=0.5)
    assert "MIG:" not in fp("show", "-o", gpu.db, env=gpu.env).stdout
