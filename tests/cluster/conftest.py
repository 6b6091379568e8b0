"""Tests of footprint against real servers it works with on clusters, started and stopped
here: a throwaway PostgreSQL (pg_server.py: initdb into a temporary folder, a private socket,
run as the postgres user) and a one-node Slurm (slurm_server.py), with an accounting database
of its own where a test asks for one (slurmdbd_server.py: MariaDB and slurmdbd).

Run from CTest (tests/CMakeLists.txt) or by hand:

    FOOTPRINT_BIN=build/footprint FP_WORKLOADS=build/tests \
        /usr/bin/python3 -m pytest -q tests/cluster
"""
import os
import shutil
import sys
import tempfile

import pytest

from pg_server import Postgres, server_bin
from slurm_server import Slurm
from slurmdbd_server import missing_programs

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
import fp_helpers  # noqa: E402


def pytest_configure(config):
    problem = fp_helpers.env_problem()
    if problem:
        raise pytest.UsageError(problem + "; set FOOTPRINT_BIN and FP_WORKLOADS")
    # Runs into a server go through local buffers: the tests' own, not the user's.
    os.environ["FOOTPRINT_BUFFER_DIR"] = tempfile.mkdtemp(prefix="fp-buffers-")


@pytest.fixture(scope="session")
def postgres():
    if server_bin() is None or shutil.which("psql") is None:
        pytest.fail("PostgreSQL is not installed: run scripts/setup (Debian: postgresql)")
    server = Postgres()
    yield server
    server.close()


@pytest.fixture
def pg_uri(postgres, request):
    """A new, empty database for one test."""
    name = "t_" + request.node.name.lower().replace("[", "_").replace("]", "")[:40]
    return postgres.create_database(name)


def slurm_cluster(nodes, accounting=False):
    if os.geteuid() != 0:
        pytest.skip("a Slurm cluster of its own needs root (slurmd runs tasks as their user)")
    if shutil.which("slurmctld") is None or shutil.which("munged") is None:
        pytest.fail("Slurm is not installed: run scripts/setup (Debian: slurm-wlm munge)")
    if accounting and missing_programs():
        pytest.fail(f"{', '.join(missing_programs())} not installed: run scripts/setup "
                    "(Debian: mariadb-server slurmdbd)")
    return Slurm(nodes=nodes, accounting=accounting)


@pytest.fixture(scope="session")
def slurm():
    """A one-node Slurm cluster of its own (tests/cluster/slurm_server.py)."""
    cluster = slurm_cluster(1)
    yield cluster
    cluster.close()


@pytest.fixture(scope="session")
def slurm2():
    """A two-node Slurm cluster of its own: two slurmd on this host, nodes fp-n1 and fp-n2."""
    cluster = slurm_cluster(2)
    yield cluster
    cluster.close()


@pytest.fixture
def slurm_accounting():
    """A one-node Slurm cluster with an accounting database of its own (MariaDB, slurmdbd):
    sacct answers. Started for one test and stopped with it (a few seconds each way)."""
    cluster = slurm_cluster(1, accounting=True)
    yield cluster
    cluster.close()
