"""Metric objects for :func:`footprint.supervise`.

A metric object says what to record while a supervised function runs. footprint samples
metrics from outside the Python code (a native thread, or the ``footprint run`` monitor), so a
metric object does not start a sampler of its own: it asks for an interval, or says how a
value is derived from the call.

=========================  ===================================================================
object                     recorded as
=========================  ===================================================================
``Time()``                 the scope's start and end (every supervised call has them)
``CPU(interval)``          series ``cpu`` (%, 100 = one core)
``Memory(interval)``       series ``memory`` (bytes, resident set)
``IO(interval)``           series ``io.read`` and ``io.write`` (bytes/s)
``Threads(interval)``      series ``threads`` (count)
``Processes(interval)``    series ``processes`` (count)
``SystemCPU(interval)``    series ``sys.cpu`` (%, whole machine)
``SystemMemory(...)``      series ``sys.memory`` (bytes, whole machine)
``Latency()``              value ``latency`` (s per entry) of each call; ``.track(n)`` inside
``Throughput()``           value ``throughput`` (entries per s) of each call; ``.track(n)``
``GPUTime()``              value ``gpu_time_s`` of each call: its GPU work, from CUDA events
                           (PyTorch), as ``supervise(..., gpu=True)``
``GPU``, ``GPUMemory``,    accepted, **not measured yet**: nothing is recorded and a
``GPUPower``, ``Power``,   :class:`FootprintWarning` says so (never a made-up number)
``Energy``
=========================  ===================================================================

``interval`` is in seconds; ``None`` keeps the benchmark's own interval. A finer interval
applies while at least one supervised call runs, to benchmarks that sample their own process;
under ``footprint run`` the intervals given to ``footprint run`` apply.
"""

from __future__ import annotations

import threading
import warnings
from typing import Optional

__all__ = [
    "FootprintWarning", "Metric", "Time", "CPU", "Memory", "IO", "Threads", "Processes",
    "SystemCPU", "SystemMemory", "Latency", "Throughput", "GPU", "GPUMemory", "GPUPower",
    "GPUTime", "Power", "Energy",
]


class FootprintWarning(UserWarning):
    """Something asked of footprint is not (yet) measured here; nothing was recorded for it."""


class Metric:
    """Base of all metric objects.

    Attributes:
        series: catalogue names of the sampled series this metric reads (may be empty).
        interval: the sampling interval asked for, in seconds, or None.
    """

    series: tuple[str, ...] = ()

    def __init__(self, interval: Optional[float] = None) -> None:
        if interval is not None:
            interval = float(interval)
            if interval < 0.001:
                raise ValueError(f"{type(self).__name__}: the interval must be at least 1 ms "
                                 f"(0.001 s), not {interval} s")
        self.interval = interval

    def __repr__(self) -> str:
        args = "" if self.interval is None else f"interval={self.interval}"
        return f"{type(self).__name__}({args})"


class Time(Metric):
    """The call's wall time: the supervised scope's start and end."""

    def __init__(self) -> None:
        super().__init__(None)


class CPU(Metric):
    """CPU use (``cpu``, %; 100 = one core) of the process, or of the tree under
    ``footprint run``."""

    series = ("cpu",)


class Memory(Metric):
    """Resident memory (``memory``, bytes) of the process, or of the tree under
    ``footprint run``."""

    series = ("memory",)


class IO(Metric):
    """Storage I/O rates (``io.read``, ``io.write``, bytes/s)."""

    series = ("io.read", "io.write")


class Threads(Metric):
    """Live threads (``threads``)."""

    series = ("threads",)


class Processes(Metric):
    """Live processes (``processes``)."""

    series = ("processes",)


class SystemCPU(Metric):
    """CPU use of the whole machine (``sys.cpu``, %)."""

    series = ("sys.cpu",)


class SystemMemory(Metric):
    """Memory in use on the whole machine (``sys.memory``, bytes)."""

    series = ("sys.memory",)


class _Counted(Metric):
    """A value derived from the call's duration and a count the function reports with
    :meth:`track` (per thread: concurrent calls do not mix their counts)."""

    value_name = ""

    def __init__(self) -> None:
        super().__init__(None)
        self._local = threading.local()

    def track(self, num_entries: int) -> None:
        """Reports how many entries (samples, rows, requests) the current call processed."""
        self._local.entries = num_entries

    def _take(self) -> Optional[float]:
        entries = getattr(self._local, "entries", None)
        self._local.entries = None
        return entries

    def _value(self, seconds: float, entries: float) -> float:
        raise NotImplementedError


class Latency(_Counted):
    """``latency``: seconds per entry of each call (its duration / the tracked count)."""

    value_name = "latency"

    def _value(self, seconds: float, entries: float) -> float:
        return seconds / entries


class Throughput(_Counted):
    """``throughput``: entries per second of each call (the tracked count / its duration)."""

    value_name = "throughput"

    def _value(self, seconds: float, entries: float) -> float:
        return entries / seconds if seconds > 0 else float("inf")


class _Unmeasured(Metric):
    """Accepted so that existing code runs; the object records nothing per call (what it
    names, footprint's monitor measures for the whole run, where it can: ``reason`` says)."""

    reason = "not measured per call"

    def __init__(self, interval: Optional[float] = None, id: int = 0) -> None:  # noqa: A002
        super().__init__(interval)
        self.id = id


class GPU(_Unmeasured):
    """GPU utilisation: measured for the whole run by footprint's monitor, not per call."""

    reason = ("GPU utilisation is not measured per call; under footprint run or load the "
              "monitor records gpu and gpu.sm_active for every GPU (NVML)")


class GPUMemory(_Unmeasured):
    """GPU memory: measured for the whole run by footprint's monitor, not per call."""

    reason = ("GPU memory is not measured per call; under footprint run or load the monitor "
              "records gpu.memory and gpu.memory.tree for every GPU (NVML)")


class GPUPower(_Unmeasured):
    """GPU power: measured for the whole run by footprint's monitor, not per call."""

    reason = ("GPU power is not measured per call; under footprint run or load the monitor "
              "records gpu.power and gpu.energy for every GPU (NVML)")


class GPUTime(Metric):
    """GPU time of each call: the work it queued on the current CUDA stream, timed with
    ``torch.cuda`` events and stored as the value ``gpu_time_s`` of its scope. Same as
    ``supervise(..., gpu=True)``; without PyTorch or CUDA a warning says why."""

    def __init__(self) -> None:
        super().__init__(None)


class Power(_Unmeasured):
    """CPU package power: measured for the whole run by footprint's monitor, not per call."""

    reason = ("CPU power is not measured per call; footprint run -m default,energy.* records the "
              "machine's RAPL energy (energy.cpu) where the machine exposes it")


class Energy(_Unmeasured):
    """CPU package energy: measured for the whole run by footprint's monitor, not per call."""

    reason = ("CPU energy is not measured per call; footprint run -m default,energy.* records "
              "the machine's RAPL energy (energy.cpu) where the machine exposes it")


def _check_metrics(metrics: list, stacklevel: int) -> None:
    """Rejects what is not a metric object; warns about metrics footprint cannot record."""
    for metric in metrics:
        if not isinstance(metric, Metric):
            raise TypeError(f"supervise() takes footprint metric objects (Time(), CPU(), "
                            f"Memory(), ...), not {metric!r}")
        if isinstance(metric, _Unmeasured):
            warnings.warn(f"{type(metric).__name__}: {metric.reason}; nothing is recorded "
                          "for it", FootprintWarning, stacklevel=stacklevel)
