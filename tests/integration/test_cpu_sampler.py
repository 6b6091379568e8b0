"""The tree's cpu at 1 kHz from the kernel's ring buffer (--cpu-sampler ring), and the timer
sampler where the kernel refuses the ring. Ground truth: the run's cgroup (cpu.stat, the
run's cpu totals) and the workload's own getrusage (FP_WORKLOAD_REPORT), in the same test."""
import json
import os
import shutil
import subprocess

import pytest

from fp_helpers import FOOTPRINT, clean_env, cpu_total, describe, raw_samples, run_ok, show, wl

MS = 1_000_000


def paranoid_level():
    with open("/proc/sys/kernel/perf_event_paranoid") as f:
        return int(f.read())


@pytest.fixture
def ring(doctor):
    if not doctor["cpu sampler"]["ok"]:
        pytest.skip("the kernel refuses the ring here: " + doctor["cpu sampler"]["detail"])


def burn_at_1ms(tmp_path, *options, threads=2, seconds=1.0, idle=0.0):
    """fp_burn THREADS SECONDS IDLE with cpu at 1 ms, the rest at 100 ms: (db, show, report)."""
    db = tmp_path / "burn.db"
    truth = tmp_path / "truth"
    truth.mkdir()
    run_ok(db, [wl("burn"), threads, seconds, idle], "--no-git", "-i", "100ms", "-i", "cpu=1ms",
           *options, env=clean_env(FP_WORKLOAD_REPORT=truth))
    [report] = [json.loads(f.read_text()) for f in truth.iterdir()]
    return db, show(db), report


def test_ring_series_is_one_sample_per_ms_adding_up_to_the_cgroups_cpu(tmp_path, ring):
    idle_s = 0.4
    db, s, report = burn_at_1ms(tmp_path, "--cpu-sampler", "ring", idle=idle_s)
    meta = s["meta"]
    assert meta["cpu_sampler"]["sampler"] == "ring", meta["cpu_sampler"]
    samples = raw_samples(db, s["run"]["id"], "cpu")
    times = [t for t, _ in samples]
    # One point per ms of the run, on the ticks t0 + k ms up to the sampler's last drain,
    # which comes after the run's end: what comes after holds no CPU (the count cannot grow
    # faster than time, so the last run before the exit ends before it).
    duration_ms = s["totals"]["duration_s"] * 1e3
    assert times[0] == MS and len(samples) >= duration_ms - 1, (len(samples), duration_ms)
    assert all(b - a == MS for a, b in zip(times, times[1:])), "ticks are 1 ms apart"
    after_end = [v for t, v in samples if t > (duration_ms + 1) * MS]
    assert after_end == [0.0] * len(after_end), after_end
    assert meta["achieved_intervals_ns"]["cpu"] == MS
    assert "cpu" not in meta.get("below_asked_rate", {})
    # The series adds up to what the cgroup counted (cpu.stat, the run's total) to within the
    # last tick's millisecond of each thread, and to the workload's own account.
    integral = sum(v / 100 * 1e-3 for _, v in samples)
    assert integral == pytest.approx(cpu_total(s), rel=0.01, abs=2e-3), (integral, s["totals"])
    assert integral == pytest.approx(report["cpu_s"], rel=0.03, abs=0.01), (integral, report)
    # On the run's timeline: the burn's CPU is in its first second, none in the idle tail
    # (20 ms either side of the burn's end and the exit, for the process's start and exit).
    idle_from, idle_to = (duration_ms - idle_s * 1e3 + 20) * MS, (duration_ms - 20) * MS
    idle_cpu_s = sum(v / 100 * 1e-3 for t, v in samples if idle_from <= t <= idle_to)
    assert idle_cpu_s < 1e-3, (idle_cpu_s, [(t, v) for t, v in samples if v > 0][-5:])
    # The sampler woke for the 100 ms metrics and the drains, not once per ms.
    passes = meta["monitor"]["sampler"]["passes"]
    assert passes <= s["totals"]["duration_s"] * (10 + 4) + 3, passes


def test_timer_sampler_runs_where_the_kernel_refuses_the_ring(tmp_path):
    """Without CAP_PERFMON and CAP_SYS_ADMIN (root, setpriv), perf_event_paranoid >= 1 refuses
    events on a cgroup: auto falls back to cpu.stat at each deadline, ring fails saying why."""
    if os.geteuid() != 0 or not shutil.which("setpriv") or paranoid_level() < 1:
        pytest.skip("needs root, setpriv and kernel.perf_event_paranoid >= 1")
    def run_without_perf_caps(*args, env=None):
        return subprocess.run(["setpriv", "--bounding-set", "-perfmon,-sys_admin", "--inh-caps",
                               "-perfmon,-sys_admin", "--", FOOTPRINT, *map(str, args)],
                              env=env or clean_env(), capture_output=True, text=True, timeout=60)

    db = tmp_path / "refused.db"
    truth = tmp_path / "truth"
    truth.mkdir()
    proc = run_without_perf_caps("run", "-o", db, "-q", "--no-git", "-i", "1ms", "--cpu-sampler",
                                 "ring", "--", wl("burn"), 1, 0.3)
    assert proc.returncode == 125, describe(proc)
    [line] = proc.stderr.strip().splitlines()
    assert "--cpu-sampler ring" in line and "perf_event_paranoid" in line, line
    proc = run_without_perf_caps("run", "-o", db, "-q", "--no-git", "-i", "1ms", "--",
                                 wl("burn"), 1, 1.0, env=clean_env(FP_WORKLOAD_REPORT=truth))
    assert proc.returncode == 0, describe(proc)
    s = show(db)
    sampler = s["meta"]["cpu_sampler"]
    assert sampler["sampler"] == "timer" and "perf_event_paranoid" in sampler["why"], sampler
    [report] = [json.loads(f.read_text()) for f in truth.iterdir()]
    samples = raw_samples(db, s["run"]["id"], "cpu")
    integral = sum(v / 100 * (b - a) / 1e9 for (a, _), (b, v) in zip([(0, 0)] + samples, samples))
    assert integral == pytest.approx(report["cpu_s"], rel=0.03, abs=0.01), (integral, report)


def test_timer_sampler_by_choice_says_so(tmp_path):
    db, s, report = burn_at_1ms(tmp_path, "--cpu-sampler", "timer", threads=1, seconds=0.3)
    assert s["meta"]["cpu_sampler"] == {"sampler": "timer", "why": "--cpu-sampler timer"}
    assert cpu_total(s) == pytest.approx(report["cpu_s"], rel=0.03, abs=0.01)
