"""radT's profiler listeners (nsys, nsysraw, ncu, ncuraw, ncuattach) through stand-in tools.

Nsight Systems and Nsight Compute are not in Debian: `nsys` and `ncu` here are shell scripts on
PATH that refuse any command line but the one radT 0.2.x passes (exit 64), write a trace of a
known size where -o says, spend CPU and memory of their own after the command (as a profiler
writing its report does) and record, from /proc, what they spent: the ground truth that the
run's profiler figures are checked against.
"""
import hashlib
import json
import os
import stat

import pytest

import fp_helpers
from fp_helpers import describe, fp, show

TRACE_BYTES = 123_457

# radT 0.2.x's WORKLOAD_LISTENERS, with OUT for the trace prefix.
RADT_FLAGS = {
    "nsys": "profile --capture-range nvtx --nvtx-capture profile --cuda-memory-usage=true "
            "--capture-range-end repeat -o OUT -f true -w true -x true -t cuda,nvtx",
    "nsysraw": "profile --cuda-memory-usage true -o OUT -f true -w true -x true -t cuda,nvtx",
    "ncu": "-o OUT -f --nvtx --nvtx-include profile",
    "ncuraw": "-o OUT -f -c 100",
    "ncuattach": "--mode=launch",
}
SUFFIX = {"nsys": ".nsys-rep", "ncu": ".ncu-rep"}

# $1 of the template is the tool; the listener is found by the flags, word for word.
FAKE = r"""#!/bin/bash
tool=$(basename "$0")
log=$FAKE_LOG_DIR/$tool.$$
printf '%s\n' "$@" > "$log.argv"
echo "${NSYS_NVTX_PROFILER_REGISTER_ONLY-unset}" > "$log.env"
args=" $* "
out=
for listener in LISTENERS; do
  want="${FLAGS[$listener]}"
  case "$args" in
    " $want "*) ;;
    *) continue ;;
  esac
  n=$(wc -w <<< "$want")
  words=("$@")
  for ((i = 0; i < n; i++)); do
    [ "${words[i]}" = -o ] && out=${words[i + 1]}
  done
  shift "$n"
  echo "$listener" > "$log.listener"
  "$@"
  status=$?
  if [ -n "$out" ]; then head -c TRACE_BYTES /dev/zero > "$out$SUFFIX"; fi
  ballast=$(head -c 30000000 /dev/zero | tr '\0' x)
  i=0
  while [ "$i" -lt "${FAKE_SPIN:-60000}" ]; do i=$((i + 1)); done
  read -r -a st < /proc/$$/stat
  grep VmHWM /proc/$$/status | tr -s ' ' | cut -d' ' -f2 > "$log.hwm_kib"
  echo $((st[13] + st[14])) > "$log.ticks"
  exit $status
done
echo "$tool: not radT's command line: $args" >&2
exit 64
"""


@pytest.fixture()
def tools(tmp_path):
    """A folder with stand-in nsys and ncu, and the folder where they log."""
    bin_dir, logs = tmp_path / "bin", tmp_path / "logs"
    bin_dir.mkdir()
    logs.mkdir()
    for tool, suffix in SUFFIX.items():
        listeners = [name for name in RADT_FLAGS if name.startswith(tool)]
        flags = " ".join(f'[{name}]="{RADT_FLAGS[name]}"' for name in listeners)
        # The -o value is a path: match any word there.
        script = FAKE.replace("LISTENERS", " ".join(listeners)).replace(
            "TRACE_BYTES", str(TRACE_BYTES)).replace("$SUFFIX", suffix)
        script = script.replace(
            'args=" $* "', f'declare -A FLAGS=({flags})\nargs=" $* "\nargs="${{args/ -o * -f / -o OUT -f }}"')
        path = bin_dir / tool
        path.write_text(script)
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return bin_dir, logs


def tool_env(tools, with_tools=True, spin=60_000):
    bin_dir, logs = tools
    path = os.environ["PATH"]
    return fp_helpers.clean_env(PATH=f"{bin_dir}:{path}" if with_tools else path,
                                FAKE_LOG_DIR=logs, FAKE_SPIN=spin)


def fake_record(logs, tool):
    """What the one invocation of `tool` logged: listener, argv, env, ticks, hwm."""
    (argv,) = logs.glob(f"{tool}.*.argv")
    stem = str(argv)[: -len(".argv")]
    read = lambda ext: open(stem + ext).read().strip()
    return {"listener": read(".listener"), "argv": read(".argv").split("\n"),
            "register_only": read(".env"), "cpu_s": int(read(".ticks")) / os.sysconf("SC_CLK_TCK"),
            "hwm_bytes": int(read(".hwm_kib")) * 1024}


def test_run_nsys_stores_trace_and_cost_apart(tmp_path, tools):
    db = tmp_path / "fp.db"
    spin = ["sh", "-c", "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done"]
    proc = fp("run", "-o", db, "-q", "-n", "loop", "--profiler", "nsys", "--", *spin,
              env=tool_env(tools))
    assert proc.returncode == 0, describe(proc)
    fake = fake_record(tools[1], "nsys")
    assert fake["listener"] == "nsys"
    assert fake["register_only"] == "0"  # unregistered NVTX strings must start the capture
    s = show(db)
    folder = f"{db}.artifacts/{s['run']['id']}"
    assert fake["argv"][:-len(spin)] == (
        RADT_FLAGS["nsys"].replace("OUT", f"{folder}/nsys_loop").split())
    assert fake["argv"][-len(spin):] == spin
    (art,) = s["artifacts"]
    assert art["name"] == "nsys_loop.nsys-rep" and art["size"] == TRACE_BYTES
    assert art["sha256"] == hashlib.sha256(open(art["path"], "rb").read()).hexdigest()
    t = s["totals"]
    assert t["profiler_trace_bytes"] == TRACE_BYTES
    # The stand-in's own CPU, read at its exit, is what the run stores as the profiler's: one
    # clock tick of slack for the instant between its reading and its exit.
    tick = 1 / os.sysconf("SC_CLK_TCK")
    assert fake["cpu_s"] > 0.05
    assert fake["cpu_s"] - tick <= t["profiler_cpu_s"] <= fake["cpu_s"] + 2 * tick
    assert 0.9 * fake["hwm_bytes"] <= t["profiler_peak_rss_bytes"] <= 1.1 * fake["hwm_bytes"]
    tree_cpu = t["cpu_user_s"] + t["cpu_system_s"]
    assert t["program_cpu_s"] == pytest.approx(tree_cpu - t["profiler_cpu_s"], abs=1e-6)
    assert t["program_cpu_s"] > 0
    meta = s["meta"]
    assert meta["profiler"]["traces"] == ["nsys_loop.nsys-rep"]
    # `footprint show` says the profiler's figures on rows of their own.
    text = fp("show", "-o", db)
    assert "profiler cpu" in text.stdout and "program cpu" in text.stdout, describe(text)


def test_absent_tool_runs_unprofiled_or_is_refused(tmp_path, tools):
    db = tmp_path / "fp.db"
    env = tool_env(tools, with_tools=False)
    proc = fp("run", "-o", db, "-q", "--profiler", "ncu", "--", "true", env=env)
    assert proc.returncode == 0, describe(proc)
    said = [line for line in proc.stderr.splitlines() if "ncu" in line]
    assert len(said) == 1 and "not on PATH" in said[0], describe(proc)
    s = show(db)
    meta = s["meta"]
    assert meta["profiler"]["absent"] == "ncu is not on PATH"
    assert s["artifacts"] == [] and "profiler_cpu_s" not in s["totals"]
    refused = fp("run", "-o", db, "-q", "--profiler", "ncu", "--require-profiler", "--", "true",
                 env=env)
    assert refused.returncode == 125, describe(refused)
    assert "--require-profiler" in refused.stderr
    assert len(fp_helpers.runs_json(db)) == 1  # nothing ran


def test_plan_rows_run_each_listener_as_radt(tmp_path, tools):
    """A radT CSV plan: every workload listener's exact command line, its trace named
    TOOL_EXPERIMENT_WORKLOAD_LETTER as radT names it, stored as the run's artifact."""
    db = tmp_path / "fp.db"
    plan = tmp_path / "plan.csv"
    rows = ["Experiment,Workload,Devices,Collocation,Listeners,File,Params"]
    listeners = list(RADT_FLAGS)
    for n, listener in enumerate(listeners, start=1):
        rows.append(f"7,{n},,-,top+{listener},/bin/true,")
    plan.write_text("\n".join(rows) + "\n")
    proc = fp("experiment", "-o", db, plan, env=tool_env(tools, spin=1000))
    assert proc.returncode == 0, describe(proc)
    assert "is not used" not in proc.stderr
    logs = tools[1]
    seen = sorted(p.read_text().strip() for p in logs.glob("*.listener"))
    assert seen == sorted(listeners)
    by_workload = {s["run"]["workload"]: s for s in show(db, *[
        r["id"] for r in fp_helpers.runs_json(db)])}
    for n, listener in enumerate(listeners, start=1):
        s = by_workload[str(n)]
        names = [a["name"] for a in s["artifacts"]]
        if listener == "ncuattach":  # a live session: no file
            assert names == []
            continue
        tool = listener[:4] if listener.startswith("nsys") else "ncu"
        assert names == [f"{tool}_7_{n}_-{SUFFIX[tool]}"], s["artifacts"]
        assert s["totals"]["profiler_trace_bytes"] == TRACE_BYTES


def test_doctor_lists_the_profilers_and_their_versions(tools):
    bin_dir, _ = tools
    (bin_dir / "nsys").unlink()
    version = bin_dir / "ncu"
    version.write_text('#!/bin/sh\necho "NVIDIA (R) Nsight Compute"\necho "Version 2099.1.0"\n')
    proc = fp("doctor", "--json", env=tool_env(tools))
    assert proc.returncode == 0, describe(proc)
    checks = {c["check"]: c for c in json.loads(proc.stdout)}
    assert checks["profiler ncu"]["ok"]
    assert checks["profiler ncu"]["detail"] == f"{version}: Version 2099.1.0"
    assert not checks["profiler nsys"]["ok"] and "not on PATH" in checks["profiler nsys"]["detail"]


def test_profile_cost_runs_each_tool_side_by_side(tmp_path, tools):
    db = tmp_path / "fp.db"
    proc = fp("profile-cost", "-o", db, "--", "sh", "-c", "i=0; while [ $i -lt 20000 ]; do "
              "i=$((i+1)); done", env=tool_env(tools, spin=1000))
    assert proc.returncode == 0, describe(proc)
    rows = {line.split()[0]: line for line in proc.stdout.splitlines()[1:]}
    assert list(rows) == ["none", "footprint", "nsys", "ncu"], proc.stdout  # not python: no torch
    runs = {r["name"]: r["id"] for r in fp_helpers.runs_json(db)}
    assert set(runs) == {"profile-cost:footprint", "profile-cost:nsys", "profile-cost:ncu"}
    for tool in ("nsys", "ncu"):
        s = show(db, runs[f"profile-cost:{tool}"])
        assert s["totals"]["profiler_trace_bytes"] == TRACE_BYTES
        assert "120.6 KiB" in rows[tool], rows[tool]  # the trace's size, on its row
    assert "profiler_cpu_s" not in show(db, runs["profile-cost:footprint"])["totals"]


def test_profile_cost_says_when_the_torch_row_had_no_window(tmp_path):
    # A python command without optimizer.step() calls never opens the window: its torch row is
    # the command unprofiled, and the table says so instead of a trace of 0 B.
    proc = fp("profile-cost", "-o", tmp_path / "fp.db", "--", "/usr/bin/python3", "-c", "pass",
              env={**os.environ, "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, describe(proc)
    torch_row = next(l for l in proc.stdout.splitlines() if l.startswith("torch:2"))
    assert "no window" in torch_row, proc.stdout
    assert "torch:2: no window was recorded" in proc.stdout, proc.stdout
