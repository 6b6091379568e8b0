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
* MLflow's ``log_text``, ``log_dict``, ``log_figure``, ``log_image`` and ``log_table``, which
  radT passes through, write their file into the run's artifact folder, which footprint owns
  (beside the database: ``footprint.db.artifacts/RUN_ID/``), never into the working folder,
  and record it as an artifact named by ``artifact_file`` (``logs/out.txt`` included);
* ``autolog()`` records nothing: footprint measures the run itself (it says so once).

Anywhere else every call does nothing, as radT's do when radT is not running the script.
``import radt`` finds this module through the ``radt`` package installed beside footprint's
(unless radT itself is installed), and in every run ``footprint run`` and ``footprint
experiment`` start from a build folder.

``python3 -m footprint.radt [radT's flags] train.py ARGS`` (also ``python3 -m radt`` and the
``radt`` command) is radT's single-run form: ``footprint run`` of the script in its own
folder, named and tagged from ``-e -w -n``, with ``-l`` listeners mapped as in plans and
``-d`` devices as ``CUDA_VISIBLE_DEVICES`` (``-d cpu``: none, for a plan written for GPUs);
a ``.csv`` or ``.yaml`` target is ``footprint experiment --resume``, a CSV plan getting its
Status and Run columns written back as radT writes them. Under ``footprint run`` already, it
runs the script in this process, in the run being measured.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import pathlib
import posixpath
import runpy
import shlex
import sys
import tempfile
from typing import Any, Callable, Mapping, Optional, Sequence

__all__ = ["RADTBenchmark", "log_metric", "log_metrics", "log_param", "log_params",
           "set_tag", "set_tags", "log_artifact", "log_text", "log_dict", "log_figure",
           "log_image", "log_table", "autolog", "cli"]

_benchmark: Any = None
_autolog_said = False


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


def _artifact_folder(bm: Any) -> pathlib.Path:
    """The run's artifact folder, which footprint owns: beside a database file
    (``footprint.db.artifacts/RUN_ID``), else (a PostgreSQL database) in this user's data
    folder (``$XDG_DATA_HOME/footprint/artifacts/RUN_ID``)."""
    if "://" in bm._native.location:
        data = os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share")
        return pathlib.Path(data, "footprint", "artifacts", bm.run_id)
    return pathlib.Path(f"{bm.db}.artifacts", bm.run_id)


def _store_artifact(artifact_file: str, write: Callable[[pathlib.Path], None]) -> None:
    """Has ``write`` make ``artifact_file`` in the run's artifact folder and records it as
    the run's artifact of that name (replacing one logged before)."""
    bm = _active()
    if bm is None:
        return
    name = posixpath.normpath(os.fspath(artifact_file))
    if name.startswith(("/", "../")) or name in ("..", "."):
        raise ValueError(f"artifact_file {artifact_file!r} must name a file inside the run's "
                         "artifacts, such as 'notes.txt' or 'logs/out.txt'")
    path = _artifact_folder(bm) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    write(path)
    bm.artifact(name, path)


def log_text(text: str, artifact_file: str, run_id: Optional[str] = None) -> None:
    """MLflow's ``log_text``: ``text`` as the run's artifact ``artifact_file``."""
    _store_artifact(artifact_file, lambda path: path.write_text(text))


def log_dict(dictionary: Any, artifact_file: str, run_id: Optional[str] = None) -> None:
    """MLflow's ``log_dict``: JSON, or YAML for a ``.yaml``/``.yml`` artifact_file."""
    if str(artifact_file).endswith((".yaml", ".yml")):
        import yaml
        text = yaml.safe_dump(dictionary, default_flow_style=False)
    else:
        text = json.dumps(dictionary, indent=2)
    log_text(text, artifact_file)


def log_figure(figure: Any, artifact_file: str, *, save_kwargs: Optional[dict] = None) -> None:
    """MLflow's ``log_figure``: a matplotlib figure (``savefig``) or a plotly one
    (``write_html`` for ``.html``, else ``write_image``)."""
    kwargs = save_kwargs or {}

    def write(path: pathlib.Path) -> None:
        if hasattr(figure, "savefig"):
            figure.savefig(path, **kwargs)
        elif path.suffix == ".html" and hasattr(figure, "write_html"):
            figure.write_html(path, **kwargs)
        elif hasattr(figure, "write_image"):
            figure.write_image(path, **kwargs)
        else:
            raise TypeError(f"log_figure takes a matplotlib or plotly figure, not "
                            f"{type(figure).__name__}")
    _store_artifact(artifact_file, write)


def _pil_image(image: Any) -> Any:
    """A PIL image of a PIL image or of a numpy array as MLflow takes it: H x W, or H x W x
    1, 3 or 4 channels; floats in [0, 1], integers in [0, 255]."""
    from PIL import Image
    if isinstance(image, Image.Image):
        return image
    import numpy as np
    array = np.asarray(image)
    if array.ndim == 3 and array.shape[2] == 1:
        array = array[:, :, 0]
    if array.ndim not in (2, 3) or (array.ndim == 3 and array.shape[2] not in (3, 4)):
        raise ValueError(f"log_image takes H x W or H x W x 1, 3 or 4 channels, not "
                         f"{array.shape}")
    scale = 255 if array.dtype.kind == "f" else 1
    if array.size and (array.min() < 0 or array.max() * scale > 255):
        raise ValueError("log_image takes floats in [0, 1] or integers in [0, 255]")
    return Image.fromarray((array * scale).round().astype(np.uint8))


def log_image(image: Any, artifact_file: Optional[str] = None, key: Optional[str] = None,
              step: Optional[int] = None, **_: Any) -> None:
    """MLflow's ``log_image``: a PIL image or numpy array as a PNG (or ``artifact_file``'s
    format); with ``key`` instead of ``artifact_file``, ``images/KEY/step_STEP.png``."""
    if artifact_file is None:
        if key is None:
            raise ValueError("log_image needs artifact_file or key")
        artifact_file = f"images/{key}/step_{step or 0}.png"
    _store_artifact(artifact_file, lambda path: _pil_image(image).save(path))


def log_table(data: Any, artifact_file: str, run_id: Optional[str] = None) -> None:
    """MLflow's ``log_table``: a dict of columns or a pandas DataFrame as MLflow's JSON
    (``{"columns": [...], "data": [[...], ...]}``)."""
    import pandas as pd
    frame = data if isinstance(data, pd.DataFrame) else pd.DataFrame(data)
    log_text(frame.to_json(orient="split", index=False), artifact_file)


def autolog(*_: Any, **__: Any) -> None:
    """MLflow's ``autolog``: nothing to record (footprint measures the run itself); said
    once under footprint."""
    global _autolog_said
    if _active() is not None and not _autolog_said:
        _autolog_said = True
        print("footprint.radt: autolog() records nothing under footprint, which measures the "
              "run itself; log_metric records values", file=sys.stderr)


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
    log_dict = staticmethod(log_dict)
    log_figure = staticmethod(log_figure)
    log_image = staticmethod(log_image)
    log_table = staticmethod(log_table)
    autolog = staticmethod(autolog)


_TARGETS = (".py", ".csv", ".yml", ".yaml")


def _parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        usage=f"{prog} [radT's flags] (train.py [ARGS...] | plan.csv | sweep.yaml)",
        description="radT's command line under footprint: a script runs as one measured run "
                    "(footprint experiment of a one-row radT plan), a CSV or YAML plan as "
                    "footprint experiment --resume (a CSV plan gets its Status and Run "
                    "columns written back, as radT writes them). --conda, --manual, "
                    "--buffered and --poll_interval are accepted and have no effect.")
    parser.add_argument("-e", "--experiment", default="0", help="experiment (default 0)")
    parser.add_argument("-w", "--workload", default="0", help="workload (default 0)")
    parser.add_argument("-n", "--name", default="", help="run name (default: the plan key)")
    parser.add_argument("-d", "--devices", default="-",
                        help="GPUs joined by + (default: none named, footprint's own); cpu: "
                             "every run on the CPU, whatever the plan's Devices say")
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


def _run_here(script: str, args: Sequence[str]) -> int:
    """Inside footprint's run already: the script runs in this process, in its own folder,
    as radT runs it."""
    os.chdir(os.path.dirname(script))
    sys.argv = [script, *args]
    sys.path.insert(0, os.path.dirname(script))
    runpy.run_path(script, run_name="__main__")
    return 0


def _run_script(flags: argparse.Namespace, script: str, args: Sequence[str],
                options: Sequence[str]) -> int:
    """The script as a one-row radT plan (written in a folder of its own)."""
    devices = "-" if flags.devices.lower() == "cpu" else flags.devices
    with tempfile.TemporaryDirectory(prefix="footprint-radt-") as folder:
        plan = os.path.join(folder, "plan.csv")
        with open(plan, "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["Experiment", "Workload", "Name", "Status", "Run", "Devices",
                             "Collocation", "File", "Listeners", "Params"])
            writer.writerow([flags.experiment, flags.workload, flags.name, "", "", devices,
                             flags.collocation, script, flags.listeners, shlex.join(args)])
        return _footprint(["experiment", plan, "--python", sys.executable or "python3",
                           *options])


def main(argv: Sequence[str], prog: str = "python3 -m footprint.radt") -> int:
    """radT's ``radt [flags] TARGET [ARGS]``; returns the exit status (``-h``: the help,
    exit 0, as radT's)."""
    argv = list(argv)
    at = next((i for i, a in enumerate(argv) if a.lower().endswith(_TARGETS)), None)
    parser = _parser(prog)
    if at is None:
        parser.parse_args(argv)  # -h and --help print the help and exit 0 here
        parser.print_usage(sys.stderr)
        print(f"{prog}: give a python, csv or yaml file", file=sys.stderr)
        return 2
    flags = parser.parse_args(argv[:at])
    target, rest = argv[at], argv[at + 1:]
    options = ["--devices", "cpu"] if flags.devices.lower() == "cpu" else []
    if target.lower().endswith(".csv"):  # radT writes each run's Status back into the plan
        return _footprint(["experiment", target, "--resume", "--write-status", target, *options])
    if not target.lower().endswith(".py"):
        return _footprint(["experiment", target, "--resume", *options])
    script = os.path.abspath(target)
    if os.environ.get("FOOTPRINT_RUN_ID"):
        return _run_here(script, rest)
    return _run_script(flags, script, rest, options)


def cli() -> int:
    """radT's console script, ``radt`` (radT's ``radt:cli``)."""
    return main(sys.argv[1:], prog="radt")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
