"""End-to-end tests of the footprint binary on real workloads.

Run from CTest (tests/CMakeLists.txt, serially) or by hand:

    FOOTPRINT_BIN=build/footprint FP_WORKLOADS=build/tests \
        /usr/bin/python3 -m pytest -q tests/integration
"""
import json

import pytest

import fp_helpers


def pytest_configure(config):
    problem = fp_helpers.env_problem()
    if problem:
        raise pytest.UsageError(
            problem + "; set FOOTPRINT_BIN and FP_WORKLOADS (see tests/integration/conftest.py)"
        )


@pytest.fixture(scope="session")
def doctor():
    """footprint doctor --json as {check name: check}."""
    proc = fp_helpers.fp("doctor", "--json")
    assert proc.returncode == 0, fp_helpers.describe(proc)
    return {c["check"]: c for c in json.loads(proc.stdout)}


@pytest.fixture(scope="session")
def cgroup_cpu(doctor):
    """Whether runs get a cgroup with CPU accounting on this machine (they do on the CI VM)."""
    return doctor["cgroup cpu"]["ok"]
