"""Trackers: valued metrics of a training or evaluation (loss, accuracy and time to accuracy,
confusion matrices, hyperparameter sets), stored as rows of ``run_values``.

Each value is recorded in the calling thread's innermost scope (``scope_id``), at the time it
was tracked on the run's timeline (``t_ns``).
"""

from __future__ import annotations

import numbers
from typing import Any, Iterable, Mapping, Optional, Sequence

from ._benchmark import Benchmark

# Benchmark.log, even for subclasses that redefine log() (footprint.umlaut.Benchmark has
# UMLAUT's signature).
_log = Benchmark.log

__all__ = ["LossTracker", "TTATracker", "ConfusionMatrixTracker", "HyperparameterTracker"]


def _is_scalar(x: Any) -> bool:
    if isinstance(x, numbers.Number):
        return True
    shape = getattr(x, "shape", None)  # numpy scalars and 0-d arrays, 0-d tensors
    return shape is not None and len(shape) == 0


def _steps(values: Any, step: Optional[int]) -> Iterable[tuple[Optional[int], float]]:
    """A scalar with its step, or each element of a sequence with steps step, step+1, ..."""
    if _is_scalar(values):
        return [(step, float(values))]
    first = 0 if step is None else int(step)
    return [(first + i, float(v)) for i, v in enumerate(values)]


class LossTracker:
    """Loss values: ``LossTracker(bm).track(loss, step=epoch)`` records value ``loss``.

    ``track`` also takes a sequence (one value per epoch), recorded with steps 0, 1, ...
    (or from ``step`` on).
    """

    def __init__(self, bm: Benchmark, name: str = "loss") -> None:
        self.bm = bm
        self.name = name

    def track(self, loss: Any, step: Optional[int] = None) -> None:
        for s, v in _steps(loss, step):
            _log(self.bm, self.name, v, s)


class TTATracker:
    """Accuracy and time to accuracy.

    ``TTATracker(bm, target=0.9).track(acc, step=epoch)`` records value ``accuracy`` and, the
    first time it reaches ``target``, value ``time_to_accuracy``: seconds since the run
    started, with the target and accuracy in its JSON data. Without a target, only
    ``accuracy`` is recorded. ``track`` also takes a sequence (one accuracy per epoch).
    """

    def __init__(self, bm: Benchmark, target: Optional[float] = None) -> None:
        self.bm = bm
        self.target = None if target is None else float(target)
        self.time_to_accuracy: Optional[float] = None  # seconds, once the target is reached

    @property
    def reached(self) -> bool:
        """True once an accuracy at or above the target was tracked."""
        return self.time_to_accuracy is not None

    def track(self, accuracy: Any, step: Optional[int] = None) -> None:
        for s, v in _steps(accuracy, step):
            if self.target is None:
                _log(self.bm, "accuracy", v, s)
                continue
            if v >= self.target and self.time_to_accuracy is None:
                self.time_to_accuracy = self.bm.now()
            self.bm.log_accuracy(v, self.target, s)


class ConfusionMatrixTracker:
    """Confusion matrices: ``track(matrix, labels)``, ``matrix[i][j]`` = samples of true class
    ``labels[i]`` predicted as ``labels[j]`` (nested lists or a numpy array). Stored as JSON
    ``{"kind": "confusion_matrix", "labels": [...], "matrix": [[...]]}``."""

    def __init__(self, bm: Benchmark, name: str = "confusion_matrix") -> None:
        self.bm = bm
        self.name = name

    def track(self, matrix: Any, labels: Sequence[Any]) -> None:
        self.bm.log_confusion_matrix(matrix, labels, name=self.name)


class HyperparameterTracker:
    """Hyperparameter sets and the target each gave.

    ``HyperparameterTracker(bm, ["lr", "batch"], target="accuracy", low_means_good=False)``,
    then ``track({"lr": 0.1, "batch": 64, "accuracy": 0.93})`` per trial: each set is
    recorded at once (value = the target, JSON data = the parameters), so nothing is lost if
    the program dies before the end. Usable as a context manager; :meth:`close` is kept for
    code written against UMLAUT and only marks the tracker finished.
    """

    def __init__(self, bm: Benchmark, hyperparameters: Sequence[str], target: str,
                 low_means_good: bool = True, name: str = "hyperparameters") -> None:
        self.bm = bm
        self.hyperparameters = list(hyperparameters)
        self.target = target
        self.low_means_good = low_means_good
        self.name = name
        self.closed = False

    def track(self, measurement: Mapping[str, Any]) -> None:
        missing = [k for k in self.hyperparameters + [self.target] if k not in measurement]
        if missing:
            raise KeyError(f"hyperparameter set {dict(measurement)!r} lacks "
                           f"{', '.join(map(repr, missing))}")
        if self.closed:
            raise RuntimeError("this HyperparameterTracker is closed")
        params = {k: measurement[k] for k in self.hyperparameters}
        self.bm.log_hyperparameters(params, self.target, float(measurement[self.target]),
                                    self.low_means_good, name=self.name)

    def close(self) -> None:
        self.closed = True

    def __enter__(self) -> "HyperparameterTracker":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close()
