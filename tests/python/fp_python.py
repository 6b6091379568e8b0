"""Helpers of the Python package's tests: child Python processes and the footprint CLI."""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path
from typing import Optional

import footprint

REPO = Path(__file__).resolve().parents[2]
PYTHON = "/usr/bin/python3"
JOIN_VARIABLES = ("FOOTPRINT_RUN_ID", "FOOTPRINT_DB", "FOOTPRINT_T0_NS")
PACKAGE_PATH = str(Path(footprint.__file__).resolve().parents[1])


def child_env(**extra: str) -> dict[str, str]:
    """The environment of a child Python: the package under test, no enclosing run."""
    env = {k: v for k, v in os.environ.items() if k not in JOIN_VARIABLES}
    env["PYTHONPATH"] = os.pathsep.join(
        [PACKAGE_PATH] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env.update(extra)
    return env


def write_script(directory: Path, code: str, name: str = "script.py") -> Path:
    path = directory / name
    path.write_text(textwrap.dedent(code))
    return path


def run_python(script: Path, *args: str, timeout: float = 120,
               cwd: Optional[Path] = None) -> subprocess.CompletedProcess:
    return subprocess.run([PYTHON, str(script), *args], env=child_env(), cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


def footprint_command() -> list[str]:
    """The footprint binary (FOOTPRINT_BIN), else `python3 -m footprint`."""
    binary = os.environ.get("FOOTPRINT_BIN")
    return [os.path.abspath(binary)] if binary else [PYTHON, "-m", "footprint"]


def run_footprint(*args: str, timeout: float = 180,
                  cwd: Optional[Path] = None) -> subprocess.CompletedProcess:
    return subprocess.run(footprint_command() + list(args), env=child_env(), cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)
