"""Tests of footprint against real servers it works with on clusters: a throwaway PostgreSQL
(initdb into a temporary folder, a private socket, run as the postgres user), started and
stopped here.

Run from CTest (tests/CMakeLists.txt) or by hand:

    FOOTPRINT_BIN=build/footprint FP_WORKLOADS=build/tests \
        /usr/bin/python3 -m pytest -q tests/cluster
"""
import glob
import os
import pwd
import shutil
import subprocess
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
import fp_helpers  # noqa: E402


def pytest_configure(config):
    problem = fp_helpers.env_problem()
    if problem:
        raise pytest.UsageError(problem + "; set FOOTPRINT_BIN and FP_WORKLOADS")


def _server_bin():
    """The folder of the newest PostgreSQL server programs (Debian: /usr/lib/postgresql/N/bin)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: int(p.split("/")[4]))
    return os.path.dirname(found[-1]) if found else None


class Postgres:
    """A PostgreSQL cluster of its own in a temporary folder, listening only on a socket there.

    PostgreSQL refuses to run as root: as root, its programs run as the postgres user."""

    def __init__(self):
        self.bin = _server_bin()
        self.root = tempfile.mkdtemp(prefix="fp-pg-")
        os.chmod(self.root, 0o755)
        self.as_user = []
        if os.geteuid() == 0:
            os.chown(self.root, pwd.getpwnam("postgres").pw_uid, -1)
            self.as_user = ["runuser", "-u", "postgres", "--"]
        self.data = os.path.join(self.root, "data")
        self._server("initdb", "-D", self.data, "-A", "trust", "-U", "postgres", "--no-sync",
                     "-E", "UTF8")
        with open(os.path.join(self.data, "pg_hba.conf"), "w") as hba:
            # The role 'secret' must give its password; everyone else is trusted on the socket.
            hba.write("local all secret scram-sha-256\nlocal all all trust\n")
        self.start()

    def _server(self, program, *args):
        proc = subprocess.run([*self.as_user, os.path.join(self.bin, program), *args],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, f"{program}: {proc.stdout}{proc.stderr}"

    def start(self):
        self._server("pg_ctl", "-D", self.data, "-w", "-l", os.path.join(self.root, "log"),
                     "-o", f"-k {self.root} -c listen_addresses='' -c fsync=off", "start")

    def stop(self):
        self._server("pg_ctl", "-D", self.data, "-w", "-m", "fast", "stop")

    def uri(self, database="postgres", user="postgres", password=None):
        auth = user + (":" + password if password else "")
        return f"postgresql://{auth}@/{database}?host={self.root}"

    def sql(self, query, database="postgres"):
        """Rows of QUERY as lists of strings (psql's unaligned output)."""
        proc = subprocess.run(["psql", "-X", "-At", "-F", "\t", "-v", "ON_ERROR_STOP=1",
                               "-h", self.root, "-U", "postgres", "-d", database, "-c", query],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        return [line.split("\t") for line in proc.stdout.splitlines()]

    def create_database(self, name):
        self.sql(f"CREATE DATABASE {name}")
        return self.uri(name)

    def close(self):
        try:
            self.stop()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres():
    if _server_bin() is None or shutil.which("psql") is None:
        pytest.fail("PostgreSQL is not installed: run scripts/setup (Debian: postgresql)")
    server = Postgres()
    yield server
    server.close()


@pytest.fixture
def pg_uri(postgres, request):
    """A new, empty database for one test."""
    name = "t_" + request.node.name.lower().replace("[", "_").replace("]", "")[:40]
    return postgres.create_database(name)
