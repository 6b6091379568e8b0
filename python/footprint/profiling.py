"""Profiling windows: a PyTorch-profiler schedule and an NVTX range named ``profile`` at once.

::

    with footprint.profile("train", wait=5, warmup=1, active=2) as prof:
        for batch in loader:
            train_step(batch)
            prof.step()

profiles steps 7 and 8 (after 5 waited and 1 warmed up) with ``torch.profiler`` and, around
the same steps, opens the NVTX range ``profile`` (on CUDA) that radT's ``nsys`` and ``ncu``
listeners capture, so one piece of code serves the three profilers. Under ``footprint run``
each window is also the scope ``profile:NAME`` on footprint's timeline; its Chrome trace
(``torch_NAME_N.pt.trace.json``) is written to the run's artifact folder and stored as an
artifact, and the values ``profiler.trace_bytes``, ``profiler.window_added_s`` (what the
window's steps took beyond the run's other steps) and ``profiler.window`` (its steps, trace and
the offset that maps the trace's clock onto footprint's) are stored at the window's number.

``footprint run --profile torch:STEPS -- python3 train.py`` opens such a window without a code
change: each ``optimizer.step()`` is a step (docs/profiling.md).
"""

from __future__ import annotations

import json
import os
import statistics
from typing import Any, Optional

from .radt import _active, _artifact_folder

__all__ = ["profile"]

# A trace larger than this is stored but not read back for its clock offset.
_MAX_TRACE_READ = 256 << 20


class profile:
    """A profiling window over ``step()`` calls (see the module's documentation)."""

    def __init__(self, name: str = "profile", wait: int = 1, warmup: int = 1, active: int = 1,
                 repeat: int = 1) -> None:
        for label, value in (("wait", wait), ("warmup", warmup), ("active", active),
                             ("repeat", repeat)):
            if not isinstance(value, int) or value < (1 if label == "active" else 0):
                raise ValueError(f"footprint.profile: {label} must be a whole number "
                                 f"{'from 1' if label == 'active' else 'from 0'}, not {value!r}")
        self.name = name
        self._schedule = dict(wait=wait, warmup=warmup, active=active, repeat=repeat)
        self._bm = _active()
        self._torch: Any = None
        self._times: list[float] = []  # footprint's time as each step began
        self._window_steps: set[int] = set()  # steps warmed up or recorded
        self._recording: list[int] = []  # the steps of the window being recorded
        self._scope: Any = None
        self._nvtx = False
        self._windows = 0

    def _now(self) -> float:
        import time
        return self._bm.now() if self._bm is not None else time.monotonic()

    def __enter__(self) -> "profile":
        import torch
        from torch.profiler import ProfilerActivity, schedule
        activities = [ProfilerActivity.CPU]
        if torch.cuda.is_available():
            activities.append(ProfilerActivity.CUDA)
        self._cuda = torch.cuda.is_available()
        self._torch = torch.profiler.profile(activities=activities,
                                             schedule=schedule(**self._schedule),
                                             on_trace_ready=self._trace_ready)
        self._torch.__enter__()
        self._times.append(self._now())
        self._follow_schedule()
        return self

    def step(self) -> None:
        """Ends a step: the schedule moves on (a window's trace is saved at its last step)."""
        self._torch.step()
        self._times.append(self._now())
        self._follow_schedule()

    def _follow_schedule(self) -> None:
        from torch.profiler import ProfilerAction
        action = self._torch.current_action
        step = len(self._times) - 1
        recording = action in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
        if action != ProfilerAction.NONE:
            self._window_steps.add(step)
        if recording:
            self._recording.append(step)
        self._set_range(recording)

    def _set_range(self, open_: bool) -> None:
        if open_ == (self._scope is not None or self._nvtx):
            return
        if open_:
            if self._cuda:
                import torch
                self._nvtx_id = torch.cuda.nvtx.range_start("profile")
                self._nvtx = True
            if self._bm is not None:
                self._scope = self._bm.scope(f"profile:{self.name}")
                self._scope.__enter__()
            return
        if self._nvtx:
            import torch
            torch.cuda.nvtx.range_end(self._nvtx_id)
            self._nvtx = False
        if self._scope is not None:
            self._scope.__exit__(None, None, None)
            self._scope = None

    def _trace_ready(self, prof: Any) -> None:
        self._windows += 1
        steps, self._recording = self._recording, []
        if self._bm is None:
            return
        folder = _artifact_folder(self._bm)
        folder.mkdir(parents=True, exist_ok=True)
        file = f"torch_{self.name}_{self._windows}.pt.trace.json"
        path = folder / file
        prof.export_chrome_trace(str(path))
        self._bm.artifact(file, path)
        size = path.stat().st_size
        self._bm.log("profiler.trace_bytes", size, step=self._windows)
        self._bm.log_json("profiler.window", {
            "name": self.name, "trace": file, "steps": steps,
            "trace_to_footprint_us": self._clock_offset(path, size, steps)}, step=self._windows)

    def _clock_offset(self, path: os.PathLike, size: int, steps: list[int]) -> Optional[float]:
        """What to add to the trace's ``ts`` (µs) to get footprint's time in µs: the first
        ``ProfilerStep#`` event of the trace began with the window's first recorded step (its
        number is torch's, which older versions count one behind)."""
        if size > _MAX_TRACE_READ or not steps:
            return None
        with open(path) as f:
            trace = json.load(f)
        # Kineto writes {"traceEvents": [...]}; older exporters the array alone.
        events = trace.get("traceEvents", []) if isinstance(trace, dict) else trace
        starts = [float(e["ts"]) for e in events
                  if str(e.get("name", "")).startswith("ProfilerStep#") and "ts" in e]
        return self._times[steps[0]] * 1e6 - min(starts) if starts else None

    def __exit__(self, *exc: Any) -> None:
        self._set_range(False)
        self._torch.__exit__(*exc)
        if self._bm is not None and self._window_steps:
            self._bm.log("profiler.window_added_s", self.added_time())

    def added_time(self) -> float:
        """What the window's steps took beyond as many of the other steps (their median)."""
        durations = [b - a for a, b in zip(self._times, self._times[1:])]
        inside = [d for k, d in enumerate(durations) if k in self._window_steps]
        outside = [d for k, d in enumerate(durations) if k not in self._window_steps]
        if not inside or not outside:
            return 0.0
        return sum(inside) - len(inside) * statistics.median(outside)


# --- footprint run --profile torch:STEPS -------------------------------------------------
# footprint puts a sitecustomize.py on PYTHONPATH that calls install_step_hook(): once
# torch.optim is imported, every optimizer.step() ends a step of a window named
# "optimizer" (WAIT steps waited, 1 warmed up, STEPS recorded), with no change to the script.

def _window_spec(spec: str) -> tuple[int, int]:
    """(steps, wait) from ``torch:STEPS`` or ``torch:STEPS:WAIT``."""
    words = spec.split(":")
    if len(words) not in (2, 3) or words[0] != "torch" or not all(w.isdigit() for w in words[1:]):
        raise ValueError(f"FOOTPRINT_PROFILE={spec!r}: expected torch:STEPS or torch:STEPS:WAIT")
    return int(words[1]), int(words[2]) if len(words) == 3 else 5


class _OptimizerSteps:
    """Counts optimizer steps into one profiling window, closed once it is done."""

    def __init__(self, steps: int, wait: int) -> None:
        self._window = profile("optimizer", wait=wait, warmup=1, active=steps)
        self._left = wait + 1 + steps
        self._open = False

    def stepped(self) -> None:
        if self._left <= 0:
            return
        if not self._open:  # the first step's end starts the schedule
            self._window.__enter__()
            self._open = True
            import atexit
            atexit.register(self.close)
            return
        self._window.step()
        self._left -= 1
        if self._left == 0:
            self.close()

    def close(self) -> None:
        if self._open:
            self._open = False
            self._left = 0
            self._window.__exit__(None, None, None)


def _wrap_optimizers(optimizer_class: Any, counter: _OptimizerSteps) -> None:
    """Every optimizer class's step() (each class once, as it is first instantiated) tells
    `counter` when it returns."""
    init = optimizer_class.__init__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        cls = type(self)
        if cls.__dict__.get("_footprint_counted"):  # torch re-wraps step(): mark the class
            return
        cls._footprint_counted = True
        step = cls.step

        def counted_step(opt: Any, *a: Any, **k: Any) -> Any:
            result = step(opt, *a, **k)
            counter.stepped()
            return result
        cls.step = counted_step

    optimizer_class.__init__ = __init__


def install_step_hook() -> None:
    """Called by footprint's sitecustomize.py: counts optimizer steps once torch.optim loads
    (torch itself is not imported here)."""
    import importlib.abc
    import importlib.util
    import sys
    try:
        steps, wait = _window_spec(os.environ.get("FOOTPRINT_PROFILE", ""))
    except ValueError as error:
        print(f"footprint: {error}", file=sys.stderr)
        return
    counter = _OptimizerSteps(steps, wait)

    class _Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
            if name != "torch.optim.optimizer":
                return None
            sys.meta_path.remove(self)
            spec = importlib.util.find_spec(name)
            if spec is None or spec.loader is None:
                return spec
            original = spec.loader.exec_module

            def exec_module(module: Any) -> None:
                original(module)
                _wrap_optimizers(module.Optimizer, counter)
            spec.loader.exec_module = exec_module  # type: ignore[method-assign]
            return spec

    sys.meta_path.insert(0, _Finder())
