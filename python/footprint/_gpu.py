"""GPU time of scopes through PyTorch's CUDA events (``bm.scope(name, gpu=True)``,
``supervise(..., gpu=True)``).

A GPU scope records ``torch.cuda.Event(enable_timing=True)`` on the current CUDA stream when it
is entered and when it is left; nothing waits for the GPU there (waiting would make every scope
a device synchronization and change the timing of the program it measures). The elapsed time
is read once the end event has completed — checked without blocking whenever a GPU scope ends,
and waited for when the benchmark closes — and stored as the value ``gpu_time_s`` of the scope.

When PyTorch cannot be imported or CUDA is not available, the scope still records its wall
time; the reason is stored once as a ``gpu_time_s`` value with no number and
``{"unavailable": reason}``, and a :class:`~footprint.FootprintWarning` says it once.
"""

from __future__ import annotations

import json
import threading
import warnings
from typing import Any, Optional

from .metrics import FootprintWarning

VALUE_NAME = "gpu_time_s"


class Unavailable(Exception):
    """GPU time cannot be measured here; the message says why."""


def _cuda_module() -> Any:
    """``torch.cuda`` when PyTorch is importable and sees a CUDA device, else Unavailable.

    The one place footprint touches torch.cuda: tests on machines without a GPU replace it.
    """
    try:
        import torch  # noqa: PLC0415 -- imported only when a GPU scope is asked for
    except Exception as e:  # ImportError, or a broken installation
        raise Unavailable(f"GPU time needs PyTorch, which cannot be imported ({e})") from None
    if not torch.cuda.is_available():
        raise Unavailable("GPU time: torch.cuda.is_available() is False (PyTorch "
                          f"{torch.__version__} was built without CUDA, or no GPU is visible: "
                          "check nvidia-smi and CUDA_VISIBLE_DEVICES)")
    return torch.cuda


class GpuTimer:
    """The pending GPU scopes of one benchmark. Thread-safe."""

    def __init__(self, native: Any) -> None:
        self._native = native
        self._lock = threading.Lock()
        self._cuda: Any = None
        self._reason: Optional[str] = None
        self._pending: list[tuple[int, Any, Any]] = []  # (scope handle, start, end)

    @property
    def reason(self) -> Optional[str]:
        """Why GPU time is not measured here (None when it is, or before the first try)."""
        return self._reason

    def _events(self) -> Any:
        if self._cuda is None and self._reason is None:
            try:
                self._cuda = _cuda_module()
            except Unavailable as e:
                self._reason = str(e)
                warnings.warn(f"{self._reason}; only wall time is recorded", FootprintWarning,
                              stacklevel=5)  # the user's `with` or call
                return None, True
        return self._cuda, False

    def prepare(self) -> None:
        """Imports torch.cuda now (or says why it cannot be), so that the first GPU scope
        does not include PyTorch's import."""
        self._events()

    def start(self, handle: int) -> Any:
        """Records the start of scope ``handle``; returns its start event, or None."""
        cuda, first_failure = self._events()
        if cuda is None:
            if first_failure:
                self._native.log_to_scope(handle, VALUE_NAME, None,
                                          json.dumps({"unavailable": self._reason}), False)
            return None
        event = cuda.Event(enable_timing=True)
        event.record()
        self._native.hold_scope(handle)  # its time is stored after it ends
        return event

    def stop(self, handle: int, start: Any) -> None:
        """Records the end of scope ``handle`` (before the scope itself ends)."""
        end = self._cuda.Event(enable_timing=True)
        end.record()
        with self._lock:
            self._pending.append((handle, start, end))

    def collect(self, wait: bool = False) -> None:
        """Stores the GPU time of every pending scope whose work has completed (with ``wait``,
        of all of them, waiting for the GPU)."""
        with self._lock:
            pending, self._pending = self._pending, []
        unfinished = []
        for handle, start, end in pending:
            if wait:
                end.synchronize()
            elif not end.query():
                unfinished.append((handle, start, end))
                continue
            try:
                seconds, data = start.elapsed_time(end) / 1e3, ""
            except RuntimeError as e:  # e.g. the events were recorded on different devices
                seconds, data = None, json.dumps({"unavailable": f"GPU time: {e}"})
            self._native.log_to_scope(handle, VALUE_NAME, seconds, data, True)
        if unfinished:
            with self._lock:
                self._pending[:0] = unfinished
