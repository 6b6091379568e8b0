"""Fixtures of the Python package's tests (helpers: fp_python.py).

Run by CTest (test `python`) with PYTHONPATH pointing at the built package and FOOTPRINT_BIN
at the footprint binary; by hand:

    PYTHONPATH=build-py/python FOOTPRINT_BIN=build-py/footprint \\
        /usr/bin/python3 -m pytest -q -p no:cacheprovider tests/python
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fp_python import JOIN_VARIABLES


@pytest.fixture(autouse=True)
def _alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests open benchmarks of their own, even if pytest itself runs under footprint run."""
    for name in JOIN_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "fp.db"
