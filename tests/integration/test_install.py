"""`cmake --install` makes footprint a tool: footprint and umlaut-cli in PREFIX/bin, the web
server module where the installed binary finds it, and the Python packages footprint and radt
where Debian's python3 looks for the prefix. Staged with DESTDIR, so the machine is untouched."""
import glob
import os
import re
import subprocess

import pytest

from fp_helpers import FOOTPRINT, describe

BUILD = os.path.dirname(os.path.abspath(FOOTPRINT))
PREFIX = "/usr/local"  # CMake's default, as scripts/demo installs


@pytest.fixture(scope="module")
def staged(tmp_path_factory):
    root = tmp_path_factory.mktemp("destdir")
    proc = subprocess.run(["cmake", "--install", BUILD], env={**os.environ, "DESTDIR": str(root)},
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, describe(proc)
    return str(root)


def test_the_commands_run_from_the_installed_prefix(staged, tmp_path):
    bin_dir = staged + PREFIX + "/bin"
    assert os.readlink(bin_dir + "/umlaut-cli") == "footprint"
    # radT's console command, where radT itself is not installed (it is not on this machine),
    # finding the staged package as the installed one is found.
    # (Sanitizer builds leave the Python module, and so the command, out.)
    site = glob.glob(staged + PREFIX + "/lib/python3*/dist-packages")
    if glob.glob(staged + PREFIX + "/lib/python3*/dist-packages/footprint"):
        radt = subprocess.run([bin_dir + "/radt", "-h"], capture_output=True, text=True,
                              timeout=60, env={**os.environ, "PYTHONPATH": os.pathsep.join(site)})
        assert radt.returncode == 0 and "usage" in radt.stdout.lower(), describe(radt)
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ["PATH"]}
    env.pop("FOOTPRINT_SERVE_MODULE", None)
    db = str(tmp_path / "fp.db")
    for argv in (["footprint", "run", "-q", "-o", db, "--no-git", "--", "true"],
                 ["footprint", "runs", "-o", db],
                 ["umlaut-cli", db, "-p", "text"]):
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, describe(proc)
    # serve loads its module from PREFIX/lib/footprint, beside PREFIX/bin.
    serve = subprocess.Popen(["footprint", "serve", "-o", db, "--port", "0"], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = serve.stdout.readline()
        assert re.search(r"http://127\.0\.0\.1:\d+/", line), (line, serve.stderr.read())
    finally:
        serve.kill()
        serve.wait()


def test_python_finds_the_installed_packages_without_pythonpath(staged):
    with open(os.path.join(BUILD, "install_manifest.txt")) as f:
        installed = f.read().split()
    inits = [p for p in installed if p.endswith("/footprint/__init__.py")]
    if not inits:
        pytest.skip("this build has no Python module (sanitizer builds leave it out)")
    site = os.path.dirname(os.path.dirname(inits[0]))  # PREFIX/lib/python3.X/dist-packages
    # That folder is on Debian's python3 path as installed (without DESTDIR): no PYTHONPATH.
    path = subprocess.run(["/usr/bin/python3", "-c", "import sys; print('\\n'.join(sys.path))"],
                          capture_output=True, text=True, env={"PATH": os.environ["PATH"]})
    assert site in path.stdout.split(), (site, path.stdout)
    # The staged copy imports from any folder: footprint, UMLAUT's and radT's names.
    proc = subprocess.run(
        ["/usr/bin/python3", "-c",
         "import footprint, footprint.umlaut, radt, radt.run, umlaut; "
         "print(footprint.__file__); print(radt.run.RADTBenchmark); print(umlaut.Benchmark)"],
        env={"PATH": os.environ["PATH"], "PYTHONPATH": staged + site, "PYTHONNOUSERSITE": "1"},
        cwd="/", capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, describe(proc)
    assert proc.stdout.startswith(staged + site)
