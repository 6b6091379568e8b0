"""footprint run -- podman run ...: the container measured from its engine's cgroup.

The images are made here (no registry): a rootfs holding one statically linked workload
(container_workload.c), imported with `podman import`. Containers run with runc through
scripts/runc-no-rlimits, which also works where the sandbox lacks CAP_SYS_RESOURCE. Ground truth
is what the workload's own kernel accounts say inside the container.
"""
import json
import os
import re
import shutil
import sqlite3
import subprocess
import tarfile
import time
import uuid

import pytest

from fp_helpers import FOOTPRINT

HERE = os.path.dirname(os.path.abspath(__file__))
RUNTIME = os.path.join(HERE, "..", "..", "scripts", "runc-no-rlimits")
IMAGE = "localhost/footprint-test-work:1"


def podman_problem():
    for tool in ("podman", "runc", "jq", "gcc"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (scripts/setup installs it)"
    if os.geteuid() != 0:
        return "footprint measures containers from the hierarchies' roots: needs root here"
    return None


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    problem = podman_problem()
    if problem:
        pytest.skip(problem)
    root = tmp_path_factory.mktemp("rootfs")
    for folder in ("bin", "dev/shm", "data", "tmp"):
        os.makedirs(root / folder, exist_ok=True)
    subprocess.run(["gcc", "-static", "-O2", "-o", str(root / "bin" / "work"),
                    os.path.join(HERE, "container_workload.c")], check=True)
    archive = tmp_path_factory.mktemp("image") / "rootfs.tar"
    with tarfile.open(archive, "w") as tar:
        tar.add(root, arcname=".")
    subprocess.run(["podman", "import", "-q", str(archive), IMAGE], check=True,
                   stdout=subprocess.DEVNULL)
    probe = subprocess.run(["podman", "--runtime", RUNTIME, "run", "--rm", IMAGE, "/bin/work",
                            "burn", "0"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip("podman cannot run a container here: " + probe.stderr.strip()[-300:])
    return IMAGE


def footprint_run(db, *args, check=True):
    r = subprocess.run([FOOTPRINT, "run", "-o", str(db), "-q", *args], capture_output=True,
                       text=True)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def totals(db):
    with sqlite3.connect(db) as c:
        return dict(c.execute("SELECT name, value FROM run_totals"))


def podman(*args):
    return ["podman", "--runtime", RUNTIME, *args]


def test_container_cpu_is_its_own_getrusage(image, tmp_path):
    db = tmp_path / "f.db"
    r = footprint_run(db, "--", *podman("run", "--rm", image, "/bin/work", "burn", "1.5"))
    truth = float(r.stdout.split()[1])
    t = totals(db)
    container = t["container_cpu_user_s"] + t["container_cpu_system_s"]
    # conmon, the engine's monitor, shares the parent cgroup: a few ms.
    assert truth <= container <= truth * 1.02 + 0.01, (truth, t)
    assert t["cpu_user_s"] + t["cpu_system_s"] >= container + 0.01  # the client counts too
    show = subprocess.run([FOOTPRINT, "show", "-o", str(db)], capture_output=True, text=True)
    assert re.search(r"^container +podman [0-9a-f]{12} " + re.escape(image), show.stdout, re.M), show.stdout
    assert "from the engine's cgroup" in show.stdout
    assert "adds the client's peak to the container's, an upper bound" in show.stdout
    meta = json.loads(subprocess.run([FOOTPRINT, "show", "--json", "-o", str(db)],
                                     capture_output=True, text=True).stdout)["meta"]
    assert not meta["sources"]["cpu"].startswith("the container"), meta["sources"]  # client
    assert "plus the container's cgroup" in meta["sources"]["cpu"], meta["sources"]


def test_container_anonymous_memory_and_shm_apart(image, tmp_path):
    db = tmp_path / "f.db"
    # Held 2 s: twenty samples at the default interval, even on a loaded machine.
    r = footprint_run(db, "--", *podman("run", "--rm", image, "/bin/work", "hold", "64", "32",
                                        "2"))
    anon, shm = int(r.stdout.split()[2]), int(r.stdout.split()[4])
    t = totals(db)
    assert shm <= t["container_shm_peak_bytes"] <= shm * 1.05, t
    # What the container holds: its 64 MiB, its 32 MiB of shm, and a little of its own.
    assert anon + shm <= t["container_memory_peak_bytes"] <= (anon + shm) * 1.1, t
    assert t["container_engine_memory_peak_bytes"] >= anon + shm, t


def test_container_block_writes_are_its_own(image, tmp_path):
    """O_DIRECT writes of a known size, charged to the container's blkio/io cgroup."""
    db, data = tmp_path / "f.db", tmp_path / "data"
    data.mkdir()
    try:
        os.close(os.open(data / "probe", os.O_CREAT | os.O_WRONLY | os.O_DIRECT))
    except OSError as e:  # tmpfs
        pytest.skip(f"the test folder's file system refuses O_DIRECT: {e}")
    r = footprint_run(db, "--", *podman("run", "--rm", "-v", f"{data}:/data", image, "/bin/work",
                                        "write", str(8 << 20)))
    written = int(r.stdout.split()[1])
    assert written == os.path.getsize(data / "out")
    t = totals(db)
    # The file system's own blocks (journal, extents) come on top: a little.
    assert written <= t["container_io_write_bytes"] <= written * 1.05 + (256 << 10), (written, t)


def test_detached_container_followed_until_it_exits(image, tmp_path):
    db = tmp_path / "f.db"
    name = "fp-detached-" + uuid.uuid4().hex[:8]
    footprint_run(db, "--", *podman("run", "-d", "--name", name, image, "/bin/work", "burn",
                                    "1"))
    logs = subprocess.run(["podman", "logs", name], capture_output=True, text=True).stdout
    subprocess.run(["podman", "rm", name], stdout=subprocess.DEVNULL)
    truth = float(logs.split()[1])
    t = totals(db)
    assert t["duration_s"] >= truth
    container = t["container_cpu_user_s"] + t["container_cpu_system_s"]
    assert truth <= container <= truth * 1.02 + 0.01, (truth, t)


def test_refused_container_claims_nothing(image, tmp_path):
    db = tmp_path / "f.db"
    # crun refuses hybrid cgroups, runc the rlimits here; a missing program fails everywhere.
    r = footprint_run(db, "--", *podman("run", "--rm", image, "/bin/absent"), check=False)
    assert r.returncode != 0
    assert "the container did not run" in r.stderr, r.stderr
    assert "container_cpu_user_s" not in totals(db)


def test_own_cgroup_parent_is_refused_before_running(image, tmp_path):
    r = footprint_run(tmp_path / "f.db", "--", *podman("run", "--cgroup-parent", "/mine",
                                                       image, "/bin/work", "burn", "0"),
                      check=False)
    assert r.returncode == 125 and "--cgroup-parent" in r.stderr, r.stderr


def run_count(db):
    try:
        with sqlite3.connect(db) as c:
            return c.execute("SELECT count(*) FROM runs").fetchone()[0]
    except sqlite3.Error:
        return 0


def test_attach_measures_a_running_container_until_it_exits(image, tmp_path):
    """footprint run --container: the CPU the container burns once footprint is attached, as
    its own getrusage counts it, while footprint waits for it to exit."""
    db, shared = tmp_path / "f.db", tmp_path / "shared"
    shared.mkdir()
    name = "fp-attach-" + uuid.uuid4().hex[:8]
    subprocess.run(podman("run", "-d", "--name", name, "-v", f"{shared}:/data", image,
                          "/bin/work", "gated", "/data/go", "1.2"),
                   check=True, stdout=subprocess.DEVNULL)
    try:
        attach = subprocess.Popen([FOOTPRINT, "run", "-o", str(db), "-i", "20ms", "--container",
                                   name], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True)
        while run_count(db) == 0 and attach.poll() is None:
            time.sleep(0.05)
        (shared / "go").touch()  # the burn starts once footprint reads the container
        _, err = attach.communicate(timeout=120)
        assert attach.returncode == 0, err
        logs = subprocess.run(["podman", "logs", name], capture_output=True, text=True).stdout
    finally:
        subprocess.run(["podman", "rm", "-f", name], stdout=subprocess.DEVNULL)
    gated = float(logs.split()[3])
    t = totals(db)
    container = t["container_cpu_user_s"] + t["container_cpu_system_s"]
    assert gated <= container <= gated * 1.02 + 0.01, (gated, t)
    assert t["cpu_user_s"] + t["cpu_system_s"] == pytest.approx(container)
    show = subprocess.run([FOOTPRINT, "show", "-o", str(db)], capture_output=True, text=True)
    assert "attached until it exited" in show.stdout, show.stdout


def test_attach_for_a_duration(image, tmp_path):
    db = tmp_path / "f.db"
    name = "fp-attach-" + uuid.uuid4().hex[:8]
    subprocess.run(podman("run", "-d", "--name", name, image, "/bin/work", "hold", "8", "0",
                          "60"), check=True, stdout=subprocess.DEVNULL)
    try:
        started = time.monotonic()
        footprint_run(db, "--container", name, "--duration", "1s")
        waited = time.monotonic() - started
        running = subprocess.run(["podman", "inspect", "--format", "{{.State.Running}}", name],
                                 capture_output=True, text=True).stdout.strip()
    finally:
        subprocess.run(["podman", "rm", "-f", "-t", "0", name], stdout=subprocess.DEVNULL)
    t = totals(db)
    assert 1.0 <= t["duration_s"] <= waited, (t, waited)
    assert running == "true"  # footprint leaves the container alone
    assert t["container_memory_peak_bytes"] >= 8 << 20, t
    show = subprocess.run([FOOTPRINT, "show", "-o", str(db)], capture_output=True, text=True)
    assert "attached until --duration passed" in show.stdout, show.stdout


@pytest.mark.parametrize("words, says", [
    (["--container", "no such!"], "not a container name or id"),
    (["--container", "fp-absent-container"], "no container fp-absent-container in podman"),
    (["--container", "x", "--", "true"], "give no command after it"),
    (["--duration", "1s", "--", "true"], "--duration goes with --container"),
])
def test_attach_refuses_in_one_line(image, tmp_path, words, says):
    r = footprint_run(tmp_path / "f.db", *words, check=False)
    assert r.returncode == 125 and r.stderr.count("\n") == 1 and says in r.stderr, r.stderr


def test_attach_to_a_container_that_already_exited(image, tmp_path):
    name = "fp-exited-" + uuid.uuid4().hex[:8]
    subprocess.run(podman("run", "--name", name, image, "/bin/work", "burn", "0"), check=True,
                   stdout=subprocess.DEVNULL)
    try:
        r = footprint_run(tmp_path / "f.db", "--container", name, check=False)
    finally:
        subprocess.run(["podman", "rm", name], stdout=subprocess.DEVNULL)
    assert r.returncode == 125 and "is not running (it exited with 0)" in r.stderr, r.stderr
    assert not os.path.exists(tmp_path / "f.db") or run_count(tmp_path / "f.db") == 0


def doctor_checks(**env):
    r = subprocess.run([os.path.abspath(FOOTPRINT), "doctor", "--json"], capture_output=True,
                       text=True, env={**os.environ, **env}, timeout=120)
    assert r.returncode == 0, r.stderr
    return {c["check"]: c for c in json.loads(r.stdout)}


def lacks_cap_sys_resource():
    with open("/proc/self/status") as f:
        caps = next(l for l in f if l.startswith("CapEff:")).split()[1]
    return not (int(caps, 16) >> 24) & 1


def test_doctor_says_which_engines_and_what_stops_them(image):
    checks = doctor_checks()
    assert checks["container cgroups"]["ok"], checks["container cgroups"]  # root, as here
    podman_check = checks["container podman"]
    version = subprocess.run(["podman", "--version"], capture_output=True, text=True).stdout
    assert podman_check["detail"].startswith(version.strip()), podman_check
    # This sandbox's own answer, read here: runc cannot set rlimits without the capability.
    if lacks_cap_sys_resource():
        assert not podman_check["ok"] and "scripts/runc-no-rlimits" in podman_check["detail"]
    else:
        assert "CAP_SYS_RESOURCE" not in podman_check["detail"], podman_check
    if shutil.which("docker"):
        daemon = subprocess.run(["docker", "info"], capture_output=True).returncode == 0
        assert ("daemon cannot be reached" in checks["container docker"]["detail"]) != daemon


def test_doctor_without_an_engine(tmp_path):
    checks = doctor_checks(PATH=str(tmp_path))
    assert not checks["containers"]["ok"]
    assert "none of podman, docker, nerdctl is on PATH" in checks["containers"]["detail"]
    assert "container podman" not in checks


def host_rootfs_run(tmp_path, *words, privileged=False):
    """footprint run inside a container whose root is the host's own (an overlay of /): the
    image footprint's Containerfile would build, without a registry to build it from."""
    db = tmp_path / "in.db"
    work = tmp_path / "work"
    subprocess.run(["gcc", "-static", "-O2", "-o", str(work),
                    os.path.join(HERE, "container_workload.c")], check=True)
    r = subprocess.run(podman("run", "--rm", *(["--privileged"] if privileged else []),
                              "-v", f"{tmp_path}:{tmp_path}", "--rootfs", "/:O",
                              os.path.abspath(FOOTPRINT), "run", "-o", str(db), "-q",
                              "--no-git", "--", str(work), *words),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    show = subprocess.run([FOOTPRINT, "show", "--json", "-o", str(db)], capture_output=True,
                          text=True, check=True)
    return float(r.stdout.split()[1]), json.loads(show.stdout), totals(db)


def test_footprint_in_a_container_without_a_writable_cgroup(image, tmp_path):
    truth, run, t = host_rootfs_run(tmp_path, "burn", "0.3")
    assert "mounted read-only" in run["meta"]["sources"]["cgroup_unavailable"], run["meta"]
    assert run["meta"]["sources"]["cpu"].startswith("rusage"), run["meta"]
    assert abs(t["cpu_user_s"] + t["cpu_system_s"] - truth) <= truth * 0.02 + 0.01, (truth, t)


def test_footprint_in_a_privileged_container_has_its_own_cgroup(image, tmp_path):
    truth, run, t = host_rootfs_run(tmp_path, "burn", "0.3", privileged=True)
    assert run["meta"]["tree_membership"] == "cgroup", run["meta"]
    assert "cgroup" in run["meta"]["sources"]["cpu"], run["meta"]
    assert abs(t["cpu_user_s"] + t["cpu_system_s"] - truth) <= truth * 0.02 + 0.01, (truth, t)


def test_evaluate_runs_the_agent_in_the_manifests_image(image, tmp_path):
    """A manifest naming an image: the PyTorch agent runs in it (no network, its folders
    read-only), measured as the container, with the image's id and the engine's version."""
    if subprocess.run(["/usr/bin/python3", "-c", "import torch, torchvision"]).returncode:
        pytest.skip("Debian's python3-torch and python3-torchvision are not installed")
    if not os.path.isdir(os.path.join(os.path.dirname(FOOTPRINT), "python", "footprint")):
        pytest.skip("this build has no Python module for the agent (sanitizer builds leave it out)")
    root = tmp_path / "root"  # the host's /usr and /etc come in as read-only mounts
    for folder in ("usr", "etc", "tmp", "proc", "sys", "dev"):
        (root / folder).mkdir(parents=True)
    for link in ("bin", "lib", "lib64", "sbin"):
        os.symlink("usr/" + link, root / link)
    with tarfile.open(tmp_path / "usr.tar", "w") as tar:
        tar.add(root, arcname=".")
    usr_image = "localhost/footprint-test-host-usr:1"
    subprocess.run(["podman", "import", "-q", str(tmp_path / "usr.tar"), usr_image], check=True,
                   stdout=subprocess.DEVNULL)
    manifest = tmp_path / "m.yaml"
    manifest.write_text(f"""name: boxed
model: {{torchvision: mobilenet_v3_small, args: {{num_classes: 10}}}}
framework: {{name: pytorch, threads: 1, python: /usr/bin/python3}}
inputs: {{synthetic: {{shape: [3, 32, 32], pool: 8}}}}
batch_sizes: [2]
scenarios: {{offline: {{min_queries: 8}}}}
trace: [system]
container:
  image: {usr_image}
  engine_options: [--runtime, {RUNTIME}]
  run_options: [-v, "/usr:/usr:ro", -v, "/etc:/etc:ro"]
""")
    db = tmp_path / "ev.db"
    python_dir = os.path.join(os.path.dirname(os.path.abspath(FOOTPRINT)), "python")
    r = subprocess.run([FOOTPRINT, "evaluate", "-o", str(db), "--no-git", "-q", str(manifest)],
                       capture_output=True, text=True, timeout=600,
                       env={**os.environ, "PYTHONPATH": python_dir})
    assert r.returncode == 0, r.stderr
    show = json.loads(subprocess.run([FOOTPRINT, "show", "--json", "-o", str(db)],
                                     capture_output=True, text=True, check=True).stdout)
    meta, t = show["meta"], show["totals"]
    agent = meta["evaluation"]["agent"]
    assert agent[agent.index("--network") + 1] == "none", agent
    assert f"{python_dir}:{python_dir}:ro" in agent, agent
    image_id = subprocess.run(["podman", "image", "inspect", "--format", "{{.Id}}", usr_image],
                              capture_output=True, text=True).stdout.strip()
    version = subprocess.run(["podman", "--version"], capture_output=True, text=True).stdout
    assert meta["container"]["image_id"] == image_id and meta["container"]["ran"], meta
    assert meta["container"]["engine_version"] == version.strip(), meta
    # The model ran in the container, not in the client: nearly all the CPU time is its own.
    container = t["container_cpu_user_s"] + t["container_cpu_system_s"]
    assert container > 0.8 * (t["cpu_user_s"] + t["cpu_system_s"]), t
    assert t["container_memory_peak_bytes"] > 0, t


def test_a_manifest_with_a_wrong_container_is_one_line(tmp_path):
    manifest = tmp_path / "m.yaml"
    manifest.write_text("""model: {torchvision: resnet18}
scenarios: {offline: {min_queries: 8}}
container: {image: x, engine: lxc}
""")
    r = subprocess.run([FOOTPRINT, "evaluate", "--dry-run", str(manifest)], capture_output=True,
                       text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "line 3" in r.stderr and "podman, docker or nerdctl" in r.stderr, r.stderr
