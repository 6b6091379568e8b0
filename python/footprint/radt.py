"""radT compatibility: scripts written for radT run unchanged under footprint.

A script in a radT plan writes::

    import radt
    with radt.run.RADTBenchmark() as run:       # or radt.log_metric(...) at module level
        run.log_metric("loss", loss, epoch)
        run.log_param("lr", 0.01)
        run.log_artifact("model.pt")

Under ``footprint run`` or ``footprint experiment`` (``$FOOTPRINT_RUN_ID`` is set) these calls
land in the run footprint is measuring, on the same timeline as its samples:

* ``log_metric(name, value, epoch=0)`` is value ``name`` at step ``epoch`` (MLflow's
  ``step=`` is accepted too); ``log_metrics(dict, epoch=0)`` one per entry;
* ``log_param(key, value)`` / ``log_params(dict)`` are JSON values ``param.KEY``;
* ``set_tag(key, value)`` / ``set_tags(dict)`` are JSON values ``tag.KEY``;
* ``log_artifact(path)`` is an artifact named by the file's name (path, SHA-256, size);
  ``log_text(text, file)`` writes the file, then records it as ``log_artifact`` does.

Anywhere else every call does nothing, as radT's do when radT is not running the script.
``import radt`` finds this module through the ``radt`` package installed beside footprint's
(unless radT itself is installed), and in every run ``footprint run`` and ``footprint
experiment`` start from a build folder.

``python3 -m footprint.radt [radT's flags] train.py ARGS`` is radT's single-run form:
``footprint run`` of the script in its own folder, named and tagged from ``-e -w -n``, with
``-l`` listeners mapped as in plans and ``-d`` devices as ``CUDA_VISIBLE_DEVICES``; a ``.csv``
or ``.yaml`` target is ``footprint experiment``. Under ``footprint run`` already, it runs the
script in this process, in the run being measured.
"""

from __future__ import annotations

import argparse
import csv
import os
import pathlib
import runpy
import shlex
import sys
import tempfile
from typing import Any, Mapping, Optional, Sequence

__all__ = ["RADTBenchmark", "log_metric", "log_metrics", "log_param", "log_params",
           "set_tag", "set_tags", "log_artifact", "log_text"]

_benchmark: Any = None


def _active() -> Any:
    """The Benchmark joined to footprint's run, or None outside footprint (calls do
    nothing)."""
    global _benchmark
    if _benchmark is None and os.environ.get("FOOTPRINT_RUN_ID"):
        from ._benchmark import Benchmark
        _benchmark = Benchmark()
    return _benchmark


def _json_value(name: str, value: Any) -> None:
    bm = _active()
    if bm is not None:
        bm.log_json(name, value)


def log_metric(key: str, value: float, epoch: int = 0, step: Optional[int] = None,
               **_: Any) -> None:
    """Value ``key`` at step ``epoch`` (or MLflow's ``step``)."""
    bm = _active()
    if bm is not None:
        bm.log(str(key), float(value), step=int(step if step is not None else epoch))


def log_metrics(metrics: Mapping[str, float], epoch: int = 0, step: Optional[int] = None,
                **_: Any) -> None:
    """``log_metric`` of each entry."""
    for key, value in metrics.items():
        log_metric(key, value, epoch, step)


def log_param(key: str, value: Any) -> None:
    """JSON value ``param.KEY``."""
    _json_value(f"param.{key}", value)


def log_params(params: Mapping[str, Any]) -> None:
    for key, value in params.items():
        log_param(key, value)


def set_tag(key: str, value: Any) -> None:
    """JSON value ``tag.KEY``."""
    _json_value(f"tag.{key}", value)


def set_tags(tags: Mapping[str, Any]) -> None:
    for key, value in tags.items():
        set_tag(key, value)


def log_artifact(local_path: Any, artifact_path: Optional[str] = None) -> None:
    """Artifact named by the file's name (under ``artifact_path`` when given)."""
    bm = _active()
    if bm is not None:
        name = pathlib.Path(os.fspath(local_path)).name
        bm.artifact(f"{artifact_path}/{name}" if artifact_path else name, local_path)


def log_text(text: str, artifact_file: str) -> None:
    """Writes ``text`` to ``artifact_file``, then records it with :func:`log_artifact`."""
    if _active() is not None:
        pathlib.Path(artifact_file).write_text(text)
        log_artifact(artifact_file)


class RADTBenchmark:
    """radT's ``with radt.run.RADTBenchmark() as run:``; the object's methods are this
    module's functions. Leaving the block ends nothing: footprint ends the run when the
    measured command ends (radT's inner blocks would end the run early)."""

    def __enter__(self) -> "RADTBenchmark":
        _active()
        return self

    def __exit__(self, *exc: Any) -> None:
        pass

    log_metric = staticmethod(log_metric)
    log_metrics = staticmethod(log_metrics)
    log_param = staticmethod(log_param)
    log_params = staticmethod(log_params)
    set_tag = staticmethod(set_tag)
    set_tags = staticmethod(set_tags)
    log_artifact = staticmethod(log_artifact)
    log_text = staticmethod(log_text)


_TARGETS = (".py", ".csv", ".yml", ".yaml")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python3 -m footprint.radt",
        usage="python3 -m footprint.radt [radT's flags] (train.py [ARGS...] | plan.csv | sweep.yaml)",
        description="radT's command line under footprint: a script runs as one measured run "
                    "(footprint experiment of a one-row radT plan), a CSV or YAML plan as "
                    "footprint experiment. --conda, --manual, --buffered and --poll_interval "
                    "are accepted and have no effect.")
    parser.add_argument("-e", "--experiment", default="0", help="experiment (default 0)")
    parser.add_argument("-w", "--workload", default="0", help="workload (default 0)")
    parser.add_argument("-n", "--name", default="", help="run name (default: the plan key)")
    parser.add_argument("-d", "--devices", default="-",
                        help="GPUs joined by + (default: none named, footprint's own)")
    parser.add_argument("-c", "--collocation", default="-", help="-, mps or a MIG profile")
    parser.add_argument("-l", "--listeners", default="-",
                        help="radT listeners joined by + (default: footprint's default metrics)")
    parser.add_argument("-r", "--rerun", action="store_true",
                        help="accepted: a plan always runs what is not ok yet (footprint "
                             "experiment --resume)")
    for flag in ("--conda", "--manual", "--buffered"):
        parser.add_argument(flag, action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--poll_interval", type=float, help=argparse.SUPPRESS)
    return parser


def _footprint(args: Sequence[str]) -> int:
    from . import _footprint
    return int(_footprint.cli_main(["footprint", *args]))


def main(argv: Sequence[str]) -> int:
    """radT's ``radt [flags] TARGET [ARGS]``; returns the exit status."""
    argv = list(argv)
    at = next((i for i, a in enumerate(argv) if a.lower().endswith(_TARGETS)), None)
    parser = _parser()
    if at is None:
        parser.print_help(sys.stderr)
        print("footprint.radt: give a python, csv or yaml file", file=sys.stderr)
        return 2
    flags = parser.parse_args(argv[:at])
    target, rest = argv[at], argv[at + 1:]
    if not target.lower().endswith(".py"):
        return _footprint(["experiment", target, "--resume"])
    script = os.path.abspath(target)
    if os.environ.get("FOOTPRINT_RUN_ID"):
        # Inside footprint's run already: the script runs here, in its own folder, as radT
        # runs it.
        os.chdir(os.path.dirname(script))
        sys.argv = [script, *rest]
        sys.path.insert(0, os.path.dirname(script))
        runpy.run_path(script, run_name="__main__")
        return 0
    with tempfile.TemporaryDirectory(prefix="footprint-radt-") as folder:
        plan = os.path.join(folder, "plan.csv")
        with open(plan, "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["Experiment", "Workload", "Name", "Status", "Run", "Devices",
                             "Collocation", "File", "Listeners", "Params"])
            writer.writerow([flags.experiment, flags.workload, flags.name, "", "", flags.devices,
                             flags.collocation, script, flags.listeners, shlex.join(rest)])
        return _footprint(["experiment", plan, "--python", sys.executable or "python3"])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
