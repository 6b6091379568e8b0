"""UMLAUT compatibility: an UMLAUT script runs on footprint with no edit.

::

    import umlaut          # footprint's umlaut package: this module under UMLAUT's name
    from umlaut import Benchmark, BenchmarkSupervisor, MemoryMetric, CPUMetric

Where UMLAUT itself is installed, ``import umlaut`` finds UMLAUT's and footprint does not
install its own: import ``footprint.umlaut`` (as ``umlaut``) instead.

The classes take UMLAUT's arguments and record into a footprint database:

* ``Benchmark(db_file, description="", mode="a", name="")`` is a run; ``.uuid`` is its id.
  ``mode="w"`` deletes the database first (never when the script runs under ``footprint
  run``: the database is then footprint's). ``mode="r"`` is not supported: read with
  :func:`footprint.load`.
* ``BenchmarkSupervisor(metrics, benchmark, name=None)`` is :func:`footprint.supervise`: each
  call of the function is a scope named ``name`` (default: the function's name). The metric
  objects' descriptions are stored once per decorated function (value
  ``umlaut.supervision``).
* UMLAUT's vocabulary maps onto footprint's: a run uuid is a run, a measurement type is a
  metric or value name, a description or method name is a scope. Values a tracker records
  for a ``description`` lie in a scope of that name.

Units differ where footprint stores base units: memory in bytes (UMLAUT: MiB), CPU in % (the
same), time in seconds (the same). Memory and CPU are sampled by footprint from outside the
Python code, so they no longer include the cost of UMLAUT's own sampler threads.

GPU, GPU memory, GPU power, power and energy metrics are accepted so that scripts run, but
record nothing per call, and a :class:`footprint.FootprintWarning` says so: under ``footprint
run`` the monitor measures every GPU for the whole run (``gpu`` beside ``gpu.sm_active``, the SM
activity that utilisation hides, ``gpu.memory``, ``gpu.power``, ``gpu.energy``) and, with
``-m default,energy.*``, the machine's RAPL energy. GPU time is measured per call (CUDA events).
"""

from __future__ import annotations

import contextlib
import itertools
import numbers
import os
import warnings
from typing import Any, Iterable, Iterator, Mapping, Optional, Sequence

from . import _benchmark, metrics as _metrics, trackers as _trackers
from ._benchmark import F, _joining

__all__ = [
    "Benchmark", "BenchmarkSupervisor", "TimeMetric", "MemoryMetric", "CPUMetric",
    "LatencyMetric", "ThroughputMetric", "PowerMetric", "EnergyMetric", "GPUMetric",
    "GPUMemoryMetric", "GPUPowerMetric", "GPUTimeMetric", "ConfusionMatrixTracker",
    "HyperparameterTracker", "TTATracker", "LossTracker", "TimedTTATracker",
    "VisualizationBenchmark",
]


class Benchmark(_benchmark.Benchmark):
    """UMLAUT's ``Benchmark(db_file, description="", mode="a", name="")``: one run."""

    def __init__(self, db_file: str, description: str = "", mode: str = "a",
                 name: str = "", checkpoint_frequency: int = 2,
                 tmp_dir: Optional[str] = "umlaut_tmp", **_: Any) -> None:
        # checkpoint_frequency, tmp_dir (and older versions' use_database_thread): UMLAUT's
        # buffering to temporary files; footprint stores as it measures, so they are unused.
        if mode == "r":
            raise ValueError("footprint.umlaut.Benchmark records runs; read a database with "
                             "footprint.load(db_file) (DataFrames of runs, samples, scopes "
                             "and values)")
        if mode not in ("a", "w"):
            raise ValueError(f"mode must be 'a' or 'w', not {mode!r}")
        if mode == "w" and not _joining(True):
            for suffix in ("", "-wal", "-shm", "-journal"):
                with contextlib.suppress(FileNotFoundError):
                    os.remove(os.fspath(db_file) + suffix)
        self.db_file = db_file
        self.mode = mode
        super().__init__(db_file, description, name=name)

    @property
    def uuid(self) -> str:
        """The run's id (UMLAUT's run uuid)."""
        return self.run_id

    def log(self, description: str, measure_type: str, value: Any,  # type: ignore[override]
            unit: str = "", method_name: str = "") -> None:
        """UMLAUT's generic ``log``: value ``measure_type`` in a scope named ``description``
        (numbers as numbers; anything else, with its unit, as JSON)."""
        with _described(self, description):
            if isinstance(value, numbers.Real) and not isinstance(value, bool):
                _benchmark.Benchmark.log(self, measure_type, float(value))
            else:
                if isinstance(value, (bytes, bytearray)):
                    value = value.hex()
                doc = {"value": value, "unit": unit, "method_name": method_name}
                self.log_json(measure_type, doc)


class VisualizationBenchmark:
    """UMLAUT's ``VisualizationBenchmark(db_file, tmp_dir=None)``: the database read back as
    UMLAUT's tables (pandas DataFrames), from :func:`footprint.load`. A measurement is a
    value, a sampled metric or a scope's time of a run; its type is the value's or metric's
    name (``time`` for a scope), its description the scope it lies in (UMLAUT's description)."""

    def __init__(self, db_file: str, tmp_dir: Optional[str] = None) -> None:
        from ._data import load
        self.db_file = db_file
        self.data = load(db_file)

    def query_all_meta(self) -> Any:
        """One row per run, indexed by ``uuid``: ``meta_description, meta_name,
        meta_start_time``."""
        runs = self.data.runs.rename(columns={"id": "uuid", "description": "meta_description",
                                              "name": "meta_name",
                                              "started_at": "meta_start_time"})
        return runs.set_index("uuid")[["meta_description", "meta_name", "meta_start_time"]]

    def query_all_uuid_type_desc(self) -> Any:
        """One row per measurement (``id`` index): ``uuid, measurement_type,
        measurement_description``."""
        import pandas as pd
        d = self.data
        values = pd.DataFrame({"uuid": d.values["run_id"], "measurement_type": d.values["name"],
                               "measurement_description": d.values["scope"].fillna("")})
        sampled = d.samples[["run_id", "metric"]].drop_duplicates()
        series = pd.DataFrame({"uuid": sampled["run_id"], "measurement_type": sampled["metric"],
                               "measurement_description": ""})
        scopes = d.scopes[["run_id", "name"]].drop_duplicates()
        times = pd.DataFrame({"uuid": scopes["run_id"], "measurement_type": "time",
                              "measurement_description": scopes["name"]})
        table = pd.concat([times, series, values], ignore_index=True).drop_duplicates()
        table.index = pd.RangeIndex(1, len(table) + 1, name="id")
        return table

    def join_visualization_queries(self, uuid_type_desc_df: Any) -> Any:
        """``uuid_type_desc_df`` with its run's ``meta_*`` columns."""
        return uuid_type_desc_df.join(self.query_all_meta(), on="uuid")

    def close(self) -> None:
        """Nothing to close: the database was read once."""


@contextlib.contextmanager
def _described(bm: _benchmark.Benchmark, description: Any) -> Iterator[None]:
    """UMLAUT's description is a scope: values recorded inside lie in it."""
    if description:
        with bm.scope(str(description)):
            yield
    else:
        yield


class BenchmarkSupervisor:
    """UMLAUT's decorator ``BenchmarkSupervisor(metrics, benchmark, name=None)``."""

    def __init__(self, metrics: Iterable[_metrics.Metric], benchmark: _benchmark.Benchmark,
                 name: Optional[str] = None) -> None:
        self.metrics = list(metrics)
        self.benchmark = benchmark
        self.method_name = name

    def __call__(self, func: F) -> F:
        name = self.method_name or func.__name__
        described = [
            {"type": type(m).__name__, "description": getattr(m, "description", ""),
             "interval": m.interval}
            for m in self.metrics
        ]
        wrapper = _benchmark.supervise(self.metrics, self.benchmark, name=name)(func)
        self.benchmark.log_json("umlaut.supervision", {"scope": name, "metrics": described})
        return wrapper


# --- metrics: UMLAUT's signatures, footprint's measurement ---------------------------------

class _Described:
    """UMLAUT metrics carry a description (also readable as ``desc``)."""

    description: str

    @property
    def desc(self) -> str:
        return self.description


class TimeMetric(_Described, _metrics.Time):
    """``TimeMetric(description)``: the call's duration, recorded as its scope."""

    def __init__(self, description: str) -> None:
        self.description = description
        super().__init__()


class MemoryMetric(_Described, _metrics.Memory):
    """``MemoryMetric(description, interval=1)``: series ``memory`` in bytes (UMLAUT: MiB).
    ``checkpoint_interval`` (UMLAUT's samples per partial write) is accepted and unused."""

    def __init__(self, description: str, interval: float = 1,
                 checkpoint_interval: int = 250) -> None:
        self.description = description
        super().__init__(interval)


class CPUMetric(_Described, _metrics.CPU):
    """``CPUMetric(description, interval=1)``: series ``cpu`` in % (100 = one core)."""

    def __init__(self, description: str, interval: float = 1,
                 checkpoint_interval: int = 250) -> None:
        self.description = description
        super().__init__(interval)


class LatencyMetric(_Described, _metrics.Latency):
    """``LatencyMetric(description)``; call ``.track(num_entries)`` in the function: value
    ``latency`` (seconds per entry) of each call."""

    def __init__(self, description: str) -> None:
        self.description = description
        super().__init__()


class ThroughputMetric(_Described, _metrics.Throughput):
    """``ThroughputMetric(description)``; call ``.track(num_entries)`` in the function: value
    ``throughput`` (entries per second) of each call."""

    def __init__(self, description: str) -> None:
        self.description = description
        super().__init__()


class PowerMetric(_Described, _metrics.Power):
    """Accepted; records nothing per call (footprint's monitor measures it for the run)."""

    def __init__(self, description: str, interval: float = 1) -> None:
        self.description = description
        super().__init__(interval)


class EnergyMetric(_Described, _metrics.Energy):
    """Accepted; records nothing per call (footprint's monitor measures it for the run)."""

    def __init__(self, description: str) -> None:
        self.description = description
        super().__init__()


class GPUMetric(_Described, _metrics.GPU):
    """Accepted; records nothing per call (footprint's monitor measures it for the run)."""

    def __init__(self, description: str, interval: float = 1, id: int = 0,  # noqa: A002
                 checkpoint_interval: int = 250) -> None:
        self.description = description
        super().__init__(interval, id)


class GPUMemoryMetric(_Described, _metrics.GPUMemory):
    """Accepted; records nothing per call (footprint's monitor measures it for the run)."""

    def __init__(self, description: str, interval: float = 1, id: int = 0,  # noqa: A002
                 checkpoint_interval: int = 250) -> None:
        self.description = description
        super().__init__(interval, id)


class GPUPowerMetric(_Described, _metrics.GPUPower):
    """Accepted; records nothing per call (footprint's monitor measures it for the run)."""

    def __init__(self, description: str, interval: float = 1, id: int = 0,  # noqa: A002
                 checkpoint_interval: int = 250) -> None:
        self.description = description
        super().__init__(interval, id)


class GPUTimeMetric(_Described, _metrics.GPUTime):
    """The GPU time of each call (``gpu_time_s`` of its scope, from ``torch.cuda`` events)."""

    def __init__(self, description: str) -> None:
        self.description = description
        super().__init__()


# --- trackers: UMLAUT's signatures ----------------------------------------------------------

class ConfusionMatrixTracker:
    """``ConfusionMatrixTracker(bm).track(matrix, labels, description)``.

    UMLAUT's matrix has the prediction on axis 0 and the true class on axis 1; footprint
    stores ``matrix[true][predicted]``, so the matrix is transposed on the way in.
    """

    def __init__(self, benchmark: _benchmark.Benchmark) -> None:
        self.benchmark = benchmark

    def track(self, matrix: Any, labels: Sequence[Any], description: str) -> None:
        rows = [list(r) for r in _benchmark._tolist(matrix)]
        labels = list(_benchmark._tolist(labels))
        with _described(self.benchmark, description):
            if len(rows) == len(labels) and all(len(r) == len(labels) for r in rows):
                transposed = [list(col) for col in zip(*rows)]
                self.benchmark.log_confusion_matrix(transposed, labels)
                return
            # UMLAUT stores any matrix with its labels (e.g. scikit-learn's matrix of the
            # classes present, beside the whole label list): kept as given, as JSON.
            warnings.warn(f"confusion matrix '{description}': {len(rows)} rows for "
                          f"{len(labels)} labels; stored as given (value confusion_matrix, "
                          "JSON), not drawn as a heat map", _metrics.FootprintWarning,
                          stacklevel=2)
            self.benchmark.log_json("confusion_matrix", {"matrix": rows, "labels": labels})


class HyperparameterTracker(_trackers.HyperparameterTracker):
    """``HyperparameterTracker(bm, description, hyperparameters, target, low_means_good=True)``
    with ``.track(dict)`` per trial and ``.close()`` (also a context manager). Each set is
    stored as soon as it is tracked, in a scope named ``description``."""

    def __init__(self, benchmark: _benchmark.Benchmark, description: str,
                 hyperparameters: Sequence[str], target: str,
                 low_means_good: bool = True) -> None:
        super().__init__(benchmark, hyperparameters, target, low_means_good)
        self.benchmark = benchmark
        self.description = description

    def track(self, measurement: Mapping[str, Any]) -> None:
        with _described(self.bm, self.description):
            super().track(measurement)


class TTATracker:
    """``TTATracker(bm).track(accuracies, description)``: value ``accuracy`` per epoch (step
    0, 1, ...), the best so far as UMLAUT stores it, in a scope named ``description``."""

    def __init__(self, benchmark: _benchmark.Benchmark) -> None:
        self.benchmark = benchmark

    def track(self, accuracies: Any, description: str) -> None:
        """Stores the running maximum of ``accuracies``, as UMLAUT does (the best accuracy
        reached by each epoch)."""
        values = [float(a) for a in _benchmark._tolist(accuracies)]
        best = list(itertools.accumulate(values, max))
        with _described(self.benchmark, description):
            _trackers.TTATracker(self.benchmark).track(best)


class LossTracker:
    """``LossTracker(bm).track(loss_values, description)``: value ``loss`` per epoch (step 0,
    1, ...), in a scope named ``description``."""

    def __init__(self, benchmark: _benchmark.Benchmark) -> None:
        self.benchmark = benchmark

    def track(self, loss_values: Any, description: str) -> None:
        with _described(self.benchmark, description):
            _trackers.LossTracker(self.benchmark).track(loss_values)


class TimedTTATracker:
    """``TimedTTATracker(bm, target_acc).track(accuracy, description)``: value ``accuracy``
    per call (step 0, 1, ...) and, once, ``time_to_accuracy`` (seconds since the run started)
    when the target is reached."""

    def __init__(self, benchmark: _benchmark.Benchmark, target_acc: float) -> None:
        self.benchmark = benchmark
        self.target_acc = float(target_acc)
        self._tracker = _trackers.TTATracker(benchmark, self.target_acc)
        self._step = 0

    def track(self, accuracy: float, description: str) -> None:
        with _described(self.benchmark, description):
            self._tracker.track(float(accuracy), step=self._step)
        self._step += 1
