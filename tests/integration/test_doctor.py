"""footprint doctor: what can be measured here, and why not."""
import json
import subprocess

from fp_helpers import FOOTPRINT, cgroup_dirs, clean_env, describe, fp

CHECKS = {"process tree", "tree walk", "subreaper", "io accounting", "cgroup cpu",
          "cgroup memory", "system", "rapl", "perf instructions", "perf cycles",
          "perf cache-misses", "database"}


def test_doctor_reports_every_check(tmp_path):
    proc = fp("doctor", cwd=tmp_path)
    assert proc.returncode == 0, describe(proc)
    lines = proc.stdout.splitlines()
    assert "CHECK" in lines[0] and "DETAIL" in lines[0]
    rows = {}
    for line in lines[1:]:
        if line.startswith(" "):
            continue  # a detail line of the check above (a GPU's metrics)
        verdict, rest = line.split(None, 1)
        assert verdict in ("ok", "NO"), line
        for c in CHECKS:
            if rest.startswith(c + " "):
                rows[c] = verdict
    assert set(rows) == CHECKS  # at least these; more may come (GPUs, energy counters)
    assert rows["process tree"] == "ok" and rows["subreaper"] == "ok"
    assert rows["system"] == "ok" and rows["database"] == "ok"
    assert list(tmp_path.iterdir()) == []  # no database is created


def test_doctor_json_is_stable_and_agrees_with_text(tmp_path):
    proc = subprocess.run([FOOTPRINT, "doctor", "--json"], capture_output=True, text=True,
                          env=clean_env(), cwd=tmp_path, timeout=60)
    assert proc.returncode == 0, describe(proc)
    checks = json.loads(proc.stdout)
    assert isinstance(checks, list)
    assert {c["check"] for c in checks} >= CHECKS
    for c in checks:
        assert set(c) == {"check", "ok", "detail", "enables", "lines"}, c
        assert isinstance(c["ok"], bool) and c["detail"] and c["enables"], c
        assert isinstance(c["lines"], list), c
    by_name = {c["check"]: c for c in checks}
    for name in ("process tree", "tree walk", "subreaper", "io accounting", "system",
                 "database"):
        assert by_name[name]["ok"], by_name[name]
    text = fp("doctor", cwd=tmp_path).stdout
    for c in checks:
        assert any(l.split(None, 1)[0] == ("ok" if c["ok"] else "NO") and c["check"] in l
                   for l in text.splitlines()), (c, text)


def test_doctor_cleans_up_its_probe_cgroup():
    proc = subprocess.Popen([FOOTPRINT, "doctor", "--json"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=clean_env())
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert cgroup_dirs(f"footprint-doctor-{proc.pid}") == []


def test_cgroup_checks_agree_with_runs(tmp_path, doctor):
    """doctor says a run gets a cgroup exactly when runs do get one."""
    db = tmp_path / "fp.db"
    proc = fp("run", "-o", db, "-q", "--no-git", "--", "true")
    assert proc.returncode == 0, describe(proc)
    meta = json.loads(fp("show", "-o", db, "--json").stdout)["meta"]
    assert doctor["cgroup cpu"]["ok"] == meta["sources"]["cpu"].startswith("cgroup"), meta
    assert doctor["cgroup cpu"]["ok"] == ("cgroup_user_s" in meta["accounting"])
    if doctor["cgroup memory"]["ok"]:
        assert "cgroup_charged_peak_bytes" in meta["memory_peaks"], meta["memory_peaks"]
