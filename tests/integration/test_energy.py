"""Opt-in energy and hardware-counter metrics through the footprint binary: RAPL against a fake
powercap tree (FOOTPRINT_SYSFS_ROOT) with a wrap-around in the middle of the run, the machine's
own (absent) RAPL, and perf events counted over a real process tree.

This VM has neither RAPL nor hardware counters, so the tree is counted with the software event
task-clock substituted through FOOTPRINT_PERF_EVENTS: the same code path (inherited events,
enable on exec, scaled reads), checked against the kernel's CPU accounting.
"""
import json
import os

import pytest

from fp_helpers import clean_env, describe, fp, metric, raw_samples, run_ok, show, \
    single_error_line, wl

MAX_UJ = 1_000_000


def machine_steal_s():
    """The machine's steal time so far (/proc/stat, all CPUs), in seconds."""
    with open("/proc/stat") as f:
        fields = f.readline().split()
    return int(fields[8]) / os.sysconf("SC_CLK_TCK")


def fake_powercap(root, zones):
    """zones: {zone: (name, energy_uj)} under ROOT/class/powercap."""
    for zone, (name, energy) in zones.items():
        d = root / "class" / "powercap" / zone
        d.mkdir(parents=True)
        (d / "name").write_text(name + "\n")
        (d / "max_energy_range_uj").write_text(f"{MAX_UJ}\n")
        (d / "energy_uj").write_text(f"{energy}\n")
    return root


def test_rapl_wrap_around_mid_run_is_exact(tmp_path):
    root = fake_powercap(tmp_path / "sys", {
        "intel-rapl:0": ("package-0", 999_000),
        "intel-rapl:0:0": ("core", 10),
        "intel-rapl:0:1": ("dram", 100),
        "intel-rapl-mmio:0": ("package-0", 999_000),
    })
    pkg = root / "class/powercap/intel-rapl:0/energy_uj"
    dram = root / "class/powercap/intel-rapl:0:1/energy_uj"
    db = tmp_path / "fp.db"
    # The package counter passes its maximum (1000 uJ to the top, then 5000), DRAM does not.
    script = f"sleep 0.3; printf 5000 > {pkg}; printf 700 > {dram}; sleep 0.3"
    proc = fp("run", "-o", db, "--no-git", "-i", "20ms", "-m", "default,energy.*", "--",
              "sh", "-c", script, env=clean_env(FOOTPRINT_SYSFS_ROOT=root))
    assert proc.returncode == 0, describe(proc)
    assert "warning" not in proc.stderr, describe(proc)
    s = show(db)
    assert s["totals"]["cpu_energy_j"] == pytest.approx(0.006, abs=1e-12)
    assert s["totals"]["dram_energy_j"] == pytest.approx(0.0006, abs=1e-12)
    samples = raw_samples(db, s["run"]["id"], "energy.cpu")
    values = [v for _, v in samples]
    assert len(values) >= 10 and values[0] == 0.0
    assert values == sorted(values), values  # energy since run start never goes back
    assert values[-1] == pytest.approx(0.006, abs=1e-12)
    assert metric(s, "energy.cpu")["unit"] == "J"
    assert metric(s, "energy.cpu")["entity"] == "system"
    domains = {d["zone"]: d for d in s["meta"]["rapl"]["domains"]}
    assert domains["intel-rapl:0"]["wraps"] == 1
    assert domains["intel-rapl-mmio:0"]["counted_in"] is None  # the same package, once
    assert domains["intel-rapl:0:0"]["counted_in"] is None
    text = fp("show", "-o", db).stdout
    assert "cpu energy" in text and "dram energy" in text, text


def test_rapl_absent_here_warns_once_after_the_run(tmp_path):
    db = tmp_path / "fp.db"
    empty = tmp_path / "sys"
    empty.mkdir()
    proc = fp("run", "-o", db, "--no-git", "-m", "default,energy.*", "--", "true",
              env=clean_env(FOOTPRINT_SYSFS_ROOT=empty))
    assert proc.returncode == 0, describe(proc)
    warnings = [l for l in proc.stderr.splitlines() if l.startswith("footprint: warning:")]
    assert len(warnings) == 1, describe(proc)
    assert warnings[0].startswith(
        "footprint: warning: energy.cpu, energy.dram: no RAPL domains: "), warnings
    assert "footprint doctor explains" in warnings[0]
    # The summary follows the warning: the warning is said after the run, not before.
    assert proc.stderr.index("warning") < proc.stderr.index("stored in")
    s = show(db)
    assert s["totals"]["cpu_energy_j"] is None and s["totals"]["dram_energy_j"] is None
    assert "no RAPL domains" in s["meta"]["rapl"]["unavailable"]["energy.cpu"]
    assert not [m for m in s["metrics"] if m["metric"].startswith("energy.")]


def test_energy_not_asked_for_is_not_mentioned(tmp_path):
    db = tmp_path / "fp.db"
    proc = fp("run", "-o", db, "--no-git", "--", "true")
    assert proc.returncode == 0 and "warning" not in proc.stderr, describe(proc)
    meta = show(db)["meta"]
    assert "rapl" not in meta and "perf" not in meta


def test_perf_task_clock_of_the_tree_matches_the_kernel(tmp_path, cgroup_cpu):
    db = tmp_path / "fp.db"
    truth = tmp_path / "truth"
    truth.mkdir()
    steal_at_start = machine_steal_s()
    proc = fp("run", "-o", db, "--no-git", "-i", "20ms", "-m", "cpu,perf.*", "--",
              wl("spawn_tree"), "2", "2", "0.3",
              env=clean_env(FOOTPRINT_PERF_EVENTS="perf.cycles=task-clock",
                            FP_WORKLOAD_REPORT=truth))
    steal = machine_steal_s() - steal_at_start
    assert proc.returncode == 0, describe(proc)
    assert "perf.cycles counts task-clock" in proc.stderr, describe(proc)
    s = show(db)
    t = s["totals"]
    acct = s["meta"]["accounting"]
    rusage = acct["rusage_user_s"] + acct["rusage_system_s"]
    # Every process of the tree is counted, those that exited before the end included: at
    # least the CPU time each of the 7 measured of itself after exec, at most the tree's
    # rusage plus the machine's steal time (perf's clock runs on while the hypervisor steals
    # the vCPU, the scheduler's accounts do not).
    reports = [json.loads(f.read_text()) for f in truth.iterdir()]
    assert len(reports) == 7
    measured = sum(r["cpu_since_start_s"] for r in reports)
    assert measured > 0.1
    task_clock = t["perf_cycles"] / 1e9
    assert measured * 0.99 - 0.002 <= task_clock <= rusage * 1.03 + steal + 0.02, \
        (measured, rusage, steal, t, s["meta"])
    m = metric(s, "perf.cycles")
    assert m["unit"] == "1/s" and m["entity"] == "tree" and m["count"] >= 10
    events = s["meta"]["perf"]["events"]
    assert events["perf.cycles"]["event"] == "task-clock"
    assert s["meta"]["perf"]["inherited_by_children"] is True
    text = fp("show", "-o", db).stdout
    assert "event task-clock, whole tree" in text, text


def test_perf_hardware_counters_or_the_reason(tmp_path, doctor):
    db = tmp_path / "fp.db"
    proc = run_ok(db, [wl("burn"), "1", "0.2"], "--no-git", "-m", "default,perf.*")
    s = show(db)
    if doctor["perf instructions"]["ok"]:
        assert s["totals"]["perf_instructions"] > 1e6, s["totals"]
    else:
        assert s["totals"]["perf_instructions"] is None  # unknown, never 0
        reason = doctor["perf instructions"]["detail"]
        assert s["meta"]["perf"]["unavailable"]["perf.instructions"] == reason
        lines = [l for l in proc.stderr.splitlines() if reason in l]
        assert len(lines) == 1 and "perf.instructions" in lines[0], describe(proc)


def test_bad_perf_event_substitution_is_refused_before_running(tmp_path):
    marker = tmp_path / "ran"
    proc = fp("run", "-o", tmp_path / "fp.db", "--", "touch", marker,
              env=clean_env(FOOTPRINT_PERF_EVENTS="perf.cycles=warp-drive"))
    assert proc.returncode == 125, describe(proc)
    line = single_error_line(proc)
    assert "FOOTPRINT_PERF_EVENTS" in line and "warp-drive" in line
    assert not marker.exists()


def test_doctor_reports_rapl_of_a_fake_tree_and_perf_events(tmp_path):
    root = fake_powercap(tmp_path / "sys", {"intel-rapl:0": ("package-0", 1),
                                            "intel-rapl:0:0": ("dram", 1)})
    proc = fp("doctor", "--json", env=clean_env(FOOTPRINT_SYSFS_ROOT=root))
    assert proc.returncode == 0, describe(proc)
    checks = {c["check"]: c for c in json.loads(proc.stdout)}
    assert checks["rapl"]["ok"], checks["rapl"]
    assert "package-0 (intel-rapl:0)" in checks["rapl"]["detail"]
    assert "dram (intel-rapl:0:0)" in checks["rapl"]["detail"]
    for name in ("perf instructions", "perf cycles", "perf cache-misses"):
        c = checks[name]
        assert c["detail"] and c["enables"].startswith("perf."), c
        if not c["ok"]:
            assert "perf_event_open" in c["detail"] or "kernel" in c["detail"], c
