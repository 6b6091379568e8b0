"""GPU time of scopes in Python: ``bm.scope(name, gpu=True)``, ``supervise(..., gpu=True)`` and
``GPUTime()``.

The no-CUDA path runs against the real PyTorch of this machine (Debian's CPU build). The event
path needs a GPU, which this machine lacks: there a small stand-in for ``torch.cuda`` is put
where footprint looks it up (``footprint._gpu._cuda_module``), with events that read a GPU
clock the test advances and that complete when the test says so.
"""

from __future__ import annotations

import json
import sys
import threading
import warnings

import pytest

import footprint as fp
from footprint import _gpu


class StandInCuda:
    """The part of torch.cuda footprint uses: Event(enable_timing=True) with record, query,
    synchronize and elapsed_time (ms), on one GPU clock."""

    def __init__(self) -> None:
        self._done = True
        self.clock_ms = 0.0
        self.sequence = 0  # events recorded so far, in stream order
        self.completed = 0  # the GPU has finished the work up to this event
        self.recorded = 0
        self.threads: set[str] = set()
        outer = self

        class Event:
            def __init__(self, enable_timing: bool = False) -> None:
                assert enable_timing, "footprint must ask for timing events"
                self.at_ms = None
                self.sequence = None

            def record(self, stream=None) -> None:
                outer.sequence += 1
                self.sequence = outer.sequence
                self.at_ms = outer.clock_ms
                if outer.done:
                    outer.completed = outer.sequence
                outer.recorded += 1
                outer.threads.add(threading.current_thread().name)

            def query(self) -> bool:
                return self.sequence <= outer.completed

            def synchronize(self) -> None:  # waits until the GPU got here
                outer.completed = max(outer.completed, self.sequence)

            def elapsed_time(self, end: "Event") -> float:
                if not (self.query() and end.query()):
                    raise RuntimeError("elapsed_time on an event not yet completed")
                return end.at_ms - self.at_ms

        self.Event = Event

    @property
    def done(self) -> bool:
        return self._done

    @done.setter
    def done(self, value: bool) -> None:
        """True: the GPU finishes everything at once (so far and from now on)."""
        self._done = value
        if value:
            self.completed = self.sequence

    @staticmethod
    def is_available() -> bool:
        return True


@pytest.fixture
def cuda(monkeypatch: pytest.MonkeyPatch) -> StandInCuda:
    stand_in = StandInCuda()
    monkeypatch.setattr(_gpu, "_cuda_module", lambda: stand_in)
    return stand_in


def gpu_times(db, run_id):
    """The run's gpu_time_s values as (scope name, value, data) in the order stored."""
    v = fp.load(db, runs=run_id).values
    v = v[v["name"] == "gpu_time_s"].sort_values("id")
    return [(row["scope"], row["value"], row["data"]) for _, row in v.iterrows()]


def test_scopes_get_their_gpu_time(db, cuda):
    with fp.Benchmark(db) as bm:
        for ms in (1.0, 2.5):
            with bm.scope("matmul", gpu=True):
                cuda.clock_ms += ms
        with bm.scope("cpu only"):  # not a GPU scope: no events
            cuda.clock_ms += 100
    times = gpu_times(db, bm.run_id)
    assert [(s, pytest.approx(v)) for s, v, _ in times] == [("matmul", 0.001), ("matmul", 0.0025)]
    assert cuda.recorded == 4
    assert bm.gpu_unavailable is None
    scopes = fp.load(db, runs=bm.run_id).scopes
    assert sorted(scopes["name"]) == ["cpu only", "matmul", "matmul"]


def test_unfinished_gpu_work_is_stored_when_done_never_made_up(db, cuda):
    bm = fp.Benchmark(db)
    cuda.done = False
    with bm.scope("queued", gpu=True):
        cuda.clock_ms += 4.0
    with bm.scope("queued", gpu=True):  # its end checks the first without waiting
        cuda.clock_ms += 1.0
    cuda.done = True
    with bm.scope("later", gpu=True):  # now both earlier ones resolve, without blocking
        cuda.clock_ms += 2.0
    bm.close()
    times = sorted((s, round(v, 6)) for s, v, _ in gpu_times(db, bm.run_id))
    assert times == [("later", 0.002), ("queued", 0.001), ("queued", 0.004)]


def test_close_waits_for_outstanding_gpu_work(db, cuda):
    bm = fp.Benchmark(db)
    cuda.done = False
    with bm.scope("tail", gpu=True):
        cuda.clock_ms += 3.0
    bm.close()  # synchronizes the end event
    assert [(s, pytest.approx(v)) for s, v, _ in gpu_times(db, bm.run_id)] == [("tail", 0.003)]


def test_supervise_gpu_and_gpu_time_metric(db, cuda):
    with fp.Benchmark(db) as bm:
        @fp.supervise([fp.Time()], bm, name="step", gpu=True)
        def step(ms):
            cuda.clock_ms += ms
            return ms

        with warnings.catch_warnings():
            warnings.simplefilter("error")  # GPUTime is measured now: no warning

            @fp.supervise([fp.GPUTime()], bm, name="forward")
            def forward():
                cuda.clock_ms += 0.5

        assert step(2.0) == 2.0
        forward()

        @bm.scope("decorated", gpu=True)
        def decorated():
            cuda.clock_ms += 1.5

        decorated()
        threads = [threading.Thread(target=step, args=(1.0,)) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    times = gpu_times(db, bm.run_id)
    by_scope: dict[str, list[float]] = {}
    for s, v, _ in times:
        by_scope.setdefault(s, []).append(v)
    assert by_scope["forward"] == [pytest.approx(0.0005)]
    assert by_scope["decorated"] == [pytest.approx(0.0015)]
    assert len(by_scope["step"]) == 4
    assert pytest.approx(0.002) in by_scope["step"]
    assert len(cuda.threads) == 4  # events recorded on the calling threads (main + 3)


def test_without_cuda_the_reason_is_stored_once_with_real_torch(db):
    import torch

    assert not torch.cuda.is_available()  # this machine: Debian's CPU build of PyTorch
    with fp.Benchmark(db) as bm:
        with pytest.warns(fp.FootprintWarning, match=r"torch.cuda.is_available\(\) is False"):
            with bm.scope("matmul", gpu=True):
                torch.ones(64, 64) @ torch.ones(64, 64)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # said once
            with bm.scope("matmul", gpu=True):
                pass
    assert "torch.cuda.is_available() is False" in bm.gpu_unavailable
    times = gpu_times(db, bm.run_id)
    assert len(times) == 1
    scope, value, data = times[0]
    assert scope == "matmul" and value != value  # NaN in the DataFrame: no number stored
    assert "is_available() is False" in data["unavailable"]
    assert len(fp.load(db, runs=bm.run_id).scopes) == 2  # wall time still recorded
    show = fp._footprint.cli_main(["footprint", "show", "-o", str(db)])
    assert show == 0


def test_without_pytorch_says_so(db, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch raises ImportError
    with fp.Benchmark(db) as bm:
        with pytest.warns(fp.FootprintWarning, match="needs PyTorch"):
            with bm.scope("x", gpu=True):
                pass
    assert "needs PyTorch" in bm.gpu_unavailable
    [(scope, _, data)] = gpu_times(db, bm.run_id)
    assert scope == "x" and "needs PyTorch" in data["unavailable"]
