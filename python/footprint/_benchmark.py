"""Benchmark, scopes and the ``supervise`` decorator: footprint's instrumentation API in Python.

A :class:`Benchmark` is one run in a footprint database. Started under ``footprint run`` it
joins that run (its scopes and values land beside the process-tree series sampled from
outside); started alone it creates a run of its own and samples its own process on a native
background thread, never on the Python side.

Everything here is a thin layer over the native module ``_footprint`` (the C++ API of
``include/footprint/api.h``): entering and leaving a scope are two native calls that read a
clock and write into a per-thread ring buffer; a native writer thread stores them.
"""

from __future__ import annotations

import atexit
import functools
import inspect
import json
import os
import sys
import threading
import time
from typing import Any, Callable, Iterable, Mapping, Optional, TypeVar, Union

from . import _footprint
from ._footprint import FootprintError
from ._gpu import GpuTimer
from .metrics import GPUTime, Metric, _Counted, _check_metrics

F = TypeVar("F", bound=Callable[..., Any])
PathLike = Union[str, "os.PathLike[str]"]

_STATUSES = ("ok", "failed", "killed", "interrupted")

# Scope names are interned process-wide by the native layer (under a mutex): intern each
# name once and keep the handle.
_scope_names: dict[str, _footprint.ScopeName] = {}


def _scope_name(name: str) -> _footprint.ScopeName:
    handle = _scope_names.get(name)
    if handle is None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"a scope name must be a non-empty string, not {name!r}")
        handle = _scope_names.setdefault(name, _footprint.ScopeName(name))
    return handle


def _default_run_name() -> str:
    script = sys.argv[0] if sys.argv and sys.argv[0] else ""
    if script in ("", "-c", "-m", "-"):
        return "python"
    return os.path.basename(script)


def _joining(join: bool) -> bool:
    return join and bool(os.environ.get("FOOTPRINT_RUN_ID"))


class Benchmark:
    """One run of a program in a footprint database.

    ``Benchmark(db, description=...)`` opens the database (creating it if needed) and starts a
    run, or joins the run of an enclosing ``footprint run`` (then ``db``, ``name``,
    ``description``, ``tags``, ``params``, ``metrics`` and ``interval`` are those of
    ``footprint run`` and the arguments here are ignored; pass ``join=False`` for a run of
    its own in any case).

    Args:
        db: database file; default ``$FOOTPRINT_DB``, else ``./footprint.db``.
        description: free text stored with the run.
        name: run name; default the script's file name.
        tags: labels of the run (values are stored as strings).
        params: parameters of the run (values are stored as strings).
        join: join an enclosing ``footprint run`` when there is one.
        metrics: catalogue names of the metrics this process samples of itself when not
            joined (default: all; see ``docs/metrics.md``).
        interval: sampling interval in seconds (when not joined); :func:`supervise` can ask
            for a finer one while a function runs.
        flush_interval: how often (seconds) scopes, values and samples are written to the
            database; a crash loses at most this much.

    Closed by :meth:`close`, at the end of a ``with`` block (status ``failed`` if an
    exception escaped it), or at interpreter exit (status ``failed`` after an uncaught
    exception). Thread-safe; scopes nest per thread.

    Raises:
        FootprintError: the database cannot be opened or written, or an argument is invalid.
    """

    def __init__(
        self,
        db: Optional[PathLike] = None,
        description: str = "",
        *,
        name: str = "",
        tags: Optional[Mapping[str, Any]] = None,
        params: Optional[Mapping[str, Any]] = None,
        join: bool = True,
        metrics: Optional[Iterable[str]] = None,
        interval: float = 0.1,
        flush_interval: float = 0.25,
    ) -> None:
        self.description = description
        self.name = name or _default_run_name()
        self._metrics = None if metrics is None else frozenset(metrics)
        self._interval = float(interval)
        self._native = _footprint.Benchmark.open(
            os.fspath(db) if db is not None else "",
            self.name,
            description,
            {str(k): str(v) for k, v in (tags or {}).items()},
            {str(k): str(v) for k, v in (params or {}).items()},
            join,
            None if metrics is None else sorted(self._metrics),
            int(round(self._interval * 1e9)),
            int(round(float(flush_interval) * 1e9)),
        )
        self._pid = os.getpid()
        self._db_path = os.path.abspath(self._native.location)
        self._gpu = GpuTimer(self._native)
        _open_benchmarks.add(self)

    # --- identity -----------------------------------------------------------------------

    @property
    def run_id(self) -> str:
        """The run's id (a UUID)."""
        return self._native.run_id

    @property
    def db(self) -> str:
        """The database file the run is stored in (absolute path)."""
        return self._db_path

    @property
    def joined(self) -> bool:
        """True when this benchmark is part of an enclosing ``footprint run``."""
        return self._native.joined

    @property
    def closed(self) -> bool:
        """True once :meth:`close` ran (or in a forked child, where it cannot be used)."""
        return self._native.closed

    def now(self) -> float:
        """Seconds since the run started, on the run's timeline."""
        return self._native.now_ns() / 1e9

    def __repr__(self) -> str:
        state = "closed" if self.closed else ("joined" if self.joined else "open")
        return f"<footprint.Benchmark run={self.run_id} db={self.db!r} {state}>"

    # --- scopes -------------------------------------------------------------------------

    def scope(self, name: str, gpu: bool = False) -> Any:
        """A scope named ``name``: a context manager, or a decorator (see :func:`supervise`).

        ``with bm.scope("load data"): ...`` records the block's start and end on the run's
        timeline, as a child of the scope the calling thread is in.

        With ``gpu=True`` it also times the GPU work queued on the current CUDA stream inside
        the block, with ``torch.cuda.Event(enable_timing=True)``, stored as the value
        ``gpu_time_s`` of the scope once the GPU has done the work (see ``docs/python.md``).
        Without PyTorch or CUDA, the reason is stored once instead and a
        :class:`~footprint.FootprintWarning` says it.
        """
        if gpu:
            return _GpuScope(self, name)
        return Scope(self, self._native, _scope_name(name), name)

    @property
    def gpu_unavailable(self) -> Optional[str]:
        """Why GPU scopes are not timed here (None when they are, or none was entered)."""
        return self._gpu.reason

    def supervise(self, metrics: Iterable[Metric] = (), name: Optional[str] = None,
                  gpu: bool = False) -> Callable[[F], F]:
        """Same as :func:`supervise` with this benchmark."""
        return supervise(metrics, self, name=name, gpu=gpu)

    # --- values -------------------------------------------------------------------------

    def log(self, name: str, value: float, step: Optional[int] = None) -> None:
        """Records a scalar (loss, throughput, anything named) with an optional step, in the
        calling thread's innermost scope."""
        self._native.log(name, float(value), None if step is None else int(step))

    def log_accuracy(self, accuracy: float, target: float, step: Optional[int] = None) -> None:
        """Records ``accuracy``; the first time it reaches ``target`` also records
        ``time_to_accuracy`` (seconds since the run started, with the target)."""
        self._native.log_accuracy(float(accuracy), float(target),
                                  None if step is None else int(step))

    def log_json(self, name: str, data: Any, step: Optional[int] = None) -> None:
        """Records any JSON-serializable document (stored in ``run_values.data``)."""
        self._native.log_json(name, json.dumps(data, default=_json_default),
                              None if step is None else int(step))

    def log_confusion_matrix(self, matrix: Any, labels: Iterable[Any],
                             name: str = "confusion_matrix") -> None:
        """Records a confusion matrix: ``matrix[i][j]`` counts samples of true class
        ``labels[i]`` predicted as ``labels[j]``. Accepts nested lists and numpy arrays."""
        rows = [[float(x) for x in row] for row in _tolist(matrix)]
        self._native.log_confusion_matrix(name, [str(label) for label in labels], rows)

    def log_hyperparameters(self, params: Mapping[str, Any], target_name: str,
                            target_value: float, low_means_good: bool = True,
                            name: str = "hyperparameters") -> None:
        """Records one hyperparameter set and the value of the target metric it gave.

        Numeric parameters are stored as numbers. A set with non-numeric values (an
        optimizer's name, say) is stored with the same JSON shape, values as given.
        """
        numeric: Optional[dict[str, float]] = {}
        for key, value in params.items():
            if isinstance(value, (str, bytes, bool)):
                numeric = None
                break
            try:
                numeric[str(key)] = float(value)  # ints, floats, numpy scalars, 0-d tensors
            except (TypeError, ValueError):
                numeric = None
                break
        if numeric is not None:
            self._native.log_hyperparameters(name, numeric, target_name, float(target_value),
                                             bool(low_means_good))
            return
        # The native call takes numbers only: the same document and value, written as JSON.
        doc = {"kind": "hyperparameters", "params": {str(k): v for k, v in params.items()},
               "target": target_name, "low_means_good": bool(low_means_good)}
        self._native.log_json(name, json.dumps(doc, default=_json_default), None,
                              float(target_value))

    def artifact(self, name: str, path: PathLike) -> None:
        """Records a file the run produced: its absolute path, SHA-256 and size.

        Raises:
            FileNotFoundError, PermissionError: the file cannot be read.
            FootprintError: the database cannot be written.
        """
        if self.closed:
            raise _error(f"the benchmark of run {self.run_id} is closed", "invalid_argument")
        absolute = os.path.abspath(os.fspath(path))
        with open(absolute, "rb"):  # the OS's own error (FileNotFoundError, PermissionError)
            pass
        self._native.artifact(name, absolute)

    # --- closing ------------------------------------------------------------------------

    def close(self, status: str = "ok") -> None:
        """Stores everything still buffered and ends the run with ``status`` (``ok``,
        ``failed``, ``killed`` or ``interrupted``; a joined run is ended by ``footprint
        run``). Idempotent. Scopes entered after closing are not recorded.

        Raises:
            FootprintError: some data could not be stored (the message says what).
        """
        if status not in _STATUSES:
            raise ValueError(f"status must be one of {', '.join(_STATUSES)}, not {status!r}")
        _open_benchmarks.discard(self)
        if os.getpid() != self._pid:
            return  # a forked child: the run belongs to the parent
        if not self._native.closed:
            self._gpu.collect(wait=True)  # the GPU times still outstanding
        self._native.close(status)

    def __enter__(self) -> "Benchmark":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close(_status_for(exc_type, exc))


def _status_for(exc_type: Optional[type], exc: Optional[BaseException] = None) -> str:
    """The run status for an exception that ended the run (None: none did)."""
    if exc_type is None:
        return "ok"
    if issubclass(exc_type, SystemExit):
        code = getattr(exc, "code", None)
        return "ok" if code is None or code == 0 else "failed"
    if issubclass(exc_type, KeyboardInterrupt):
        return "killed"
    return "failed"


# A scope without GPU timing is native (the with-statement never enters Python code); the
# decorator and the repr are Python.
Scope = _footprint.Scope


def _scope_call(self: Scope, func: F) -> F:
    return supervise((), self.benchmark, name=self.name)(func)


def _scope_repr(self: Scope) -> str:
    return f"<footprint.Scope {self.name!r} of run {self.benchmark.run_id}>"


Scope.__call__ = _scope_call
Scope.__repr__ = _scope_repr


class _GpuScope:
    """A scope that also times the GPU work queued inside it (``bm.scope(name, gpu=True)``);
    otherwise as :class:`Scope`."""

    __slots__ = ("_bm", "_name", "_handle", "_handles")

    def __init__(self, bm: Benchmark, name: str) -> None:
        self._bm = bm
        self._name = name
        self._handle = _scope_name(name)
        self._handles: dict[int, list[tuple[int, Any]]] = {}  # thread -> open (handle, event)

    @property
    def name(self) -> str:
        return self._name

    def __enter__(self) -> "_GpuScope":
        opened = _enter(self._bm, self._handle, True)
        self._handles.setdefault(threading.get_ident(), []).append(opened)
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        stack = self._handles[threading.get_ident()]
        _leave(self._bm, *stack.pop())
        if not stack:
            del self._handles[threading.get_ident()]

    def __call__(self, func: F) -> F:
        return supervise((), self._bm, name=self._name, gpu=True)(func)

    def __repr__(self) -> str:
        return f"<footprint.Scope {self._name!r} of run {self._bm.run_id} (GPU timed)>"


class _IntervalRequests:
    """Finer sampling while calls of a supervised function run, in any thread.

    Asking the native sampler for an interval (and giving it back) takes a mutex and wakes the
    sampler thread: far too much for every call of a function called in a tight loop. So the
    request is made when a call starts and none holds it, and given back by a background
    thread once no call has run for ``LINGER_S`` — sampling stays fine for at most that long
    after the last call. Per call this costs a lock and a clock read.
    """

    LINGER_S = 0.1

    __slots__ = ("_native", "_wanted", "_lock", "_active", "_tokens", "_last_end")

    def __init__(self, native: Any, wanted: list[tuple[str, int]]) -> None:
        self._native = native
        self._wanted = wanted
        self._lock = threading.Lock()
        self._active = 0
        self._tokens: list[int] = []
        self._last_end = 0.0

    def acquire(self) -> None:
        with self._lock:
            self._active += 1
            if self._tokens or self._native.closed:
                return
            self._tokens = [self._native.request_interval(m, ns) for m, ns in self._wanted]
        _releaser.watch(self)

    def release(self) -> None:
        with self._lock:
            self._active -= 1
            if self._active == 0:
                self._last_end = time.monotonic()

    def expire(self, now: float) -> bool:
        """Gives the intervals back if no call ran for LINGER_S; True when nothing is held."""
        with self._lock:
            if self._tokens and (self._active > 0 or now - self._last_end < self.LINGER_S):
                return False
            for token in self._tokens:
                self._native.release_interval(token)
            self._tokens = []
            return True


class _Releaser:
    """One daemon thread that gives back interval requests once their functions are idle.
    It sleeps while nothing is held and wakes every LINGER_S / 2 otherwise."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._watched: set[_IntervalRequests] = set()
        self._thread: Optional[threading.Thread] = None

    def watch(self, requests: _IntervalRequests) -> None:
        with self._cond:
            self._watched.add(requests)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="footprint-intervals",
                                                daemon=True)
                self._thread.start()
            self._cond.notify()

    def _loop(self) -> None:
        with self._cond:
            while True:
                self._cond.wait_for(lambda: self._watched)
                self._cond.wait(_IntervalRequests.LINGER_S / 2)
                now = time.monotonic()
                self._watched = {r for r in self._watched if not r.expire(now)}

    def reset_after_fork(self) -> None:
        self._cond = threading.Condition()
        self._watched = set()
        self._thread = None


_releaser = _Releaser()


def _enter(bm: Benchmark, scope_name: Any, gpu: bool) -> tuple[int, Any]:
    """Begins a scope; with ``gpu``, records its start event. Returns (handle, event)."""
    handle = bm._native.begin_scope(scope_name)
    return handle, bm._gpu.start(handle) if gpu and handle else None


def _leave(bm: Benchmark, handle: int, start: Any) -> None:
    """Ends a scope begun by _enter; stores the GPU times of scopes whose work is done."""
    if start is None:
        bm._native.end_scope(handle)
        return
    bm._gpu.stop(handle, start)
    bm._native.end_scope(handle)
    bm._gpu.collect()


def supervise(metrics: Iterable[Metric] = (), bm: Optional[Benchmark] = None,
              name: Optional[str] = None, gpu: bool = False) -> Callable[[F], F]:
    """Decorator: every call of the function is a scope of ``bm`` named ``name`` (default:
    the function's ``__qualname__``), with the metrics sampled at least as often as asked.

    ``@supervise([Memory(interval=0.01), CPU(interval=0.01), Time()], bm, name="step")``

    * :class:`~footprint.Time` — the call's duration (always recorded, as the scope).
    * :class:`~footprint.CPU`, :class:`~footprint.Memory`, ... — sampled from the process
      (or the whole process tree under ``footprint run``) on the run's timeline; their
      ``interval`` makes sampling finer while the function runs (not when joined: then the
      intervals of ``footprint run`` apply). Read them back for a call with
      ``footprint.load(db).during(scope_id)``.
    * :class:`~footprint.Latency`, :class:`~footprint.Throughput` — call ``.track(n)`` inside
      the function; each call then records ``latency`` (s per entry) / ``throughput``
      (entries per second) as values of its scope.
    * :class:`~footprint.GPUTime` (or ``gpu=True``) — the GPU time of the work each call
      queues on the current CUDA stream, from ``torch.cuda`` events, as the value
      ``gpu_time_s`` of its scope (see :meth:`Benchmark.scope`).

    Each call is its own scope (two calls, two scopes — never one summed value); recursion and
    concurrent calls from several threads are recorded correctly. The wrapper keeps the
    function's name, docstring and signature (``functools.wraps``). Coroutine functions are
    supported (the scope spans the awaited call, on the thread that runs it).
    """
    if bm is None or not isinstance(bm, Benchmark):
        raise TypeError(f"supervise() needs a footprint.Benchmark, not {bm!r}")
    metrics = list(metrics)
    _check_metrics(metrics, stacklevel=3)

    def decorate(func: F) -> F:
        if not callable(func):
            raise TypeError(f"supervise() decorates a function, not {func!r}")
        scope_name = _scope_name(name or getattr(func, "__qualname__", None)
                                 or getattr(func, "__name__", None) or repr(func))
        wanted = _interval_requests(metrics, bm)
        counted = [m for m in metrics if isinstance(m, _Counted)]
        timed = gpu or any(isinstance(m, GPUTime) for m in metrics)
        if timed:
            bm._gpu.prepare()  # PyTorch's import (seconds) is not the first call's time
        return _wrap(func, bm, scope_name,
                     _IntervalRequests(bm._native, wanted) if wanted else None, counted, timed)

    return decorate


def _interval_requests(metrics: list[Metric], bm: Benchmark) -> list[tuple[str, int]]:
    """(catalogue metric, interval ns) pairs finer than what the benchmark samples anyway."""
    if bm.joined:
        return []  # footprint run's intervals apply
    finest: dict[str, float] = {}
    for metric in metrics:
        if metric.interval is None:
            continue
        for series in metric.series:
            if bm._metrics is not None and series not in bm._metrics:
                continue  # not sampled by this benchmark: cannot be turned on
            finest[series] = min(finest.get(series, metric.interval), metric.interval)
    return [(m, int(round(s * 1e9))) for m, s in sorted(finest.items()) if s < bm._interval]


def _wrap(func: F, bm: Benchmark, scope_name: Any, intervals: Optional[_IntervalRequests],
          counted: list[_Counted], gpu: bool = False) -> F:
    native = bm._native
    begin = native.begin_scope
    end = native.end_scope

    # The async and sync wrappers spell out the same steps: a shared context manager costs
    # ~0.4 µs more per call (an object and two method calls), measured with
    # bench/python_overhead.py, on the path whose target is < 2 µs.
    if inspect.iscoroutinefunction(func):
        @functools.wraps(func)
        async def async_wrapper(*args, **kwargs):
            if intervals is not None:
                intervals.acquire()
            opened = _enter(bm, scope_name, gpu)
            try:
                if not counted:
                    return await func(*args, **kwargs)
                start = time.perf_counter()
                result = await func(*args, **kwargs)
                _log_counted(native, counted, time.perf_counter() - start)
                return result
            finally:
                _leave(bm, *opened)
                if intervals is not None:
                    intervals.release()

        return async_wrapper  # type: ignore[return-value]

    if intervals is None and not counted and not gpu:
        # The hot path: two native calls around the function.
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            handle = begin(scope_name)
            try:
                return func(*args, **kwargs)
            finally:
                end(handle)

        return wrapper  # type: ignore[return-value]

    @functools.wraps(func)
    def supervised_wrapper(*args, **kwargs):
        if intervals is not None:
            intervals.acquire()
        opened = _enter(bm, scope_name, gpu)
        try:
            if not counted:
                return func(*args, **kwargs)
            start = time.perf_counter()
            result = func(*args, **kwargs)
            _log_counted(native, counted, time.perf_counter() - start)
            return result
        finally:
            _leave(bm, *opened)
            if intervals is not None:
                intervals.release()

    return supervised_wrapper  # type: ignore[return-value]


def _log_counted(native: Any, counted: list[_Counted], seconds: float) -> None:
    for metric in counted:
        entries = metric._take()
        if entries:
            native.log(metric.value_name, metric._value(seconds, entries), None)


# --- helpers --------------------------------------------------------------------------------

def _tolist(x: Any) -> Any:
    return x.tolist() if hasattr(x, "tolist") else x


def _json_default(x: Any) -> Any:
    if hasattr(x, "tolist"):
        return x.tolist()  # numpy arrays and scalars, torch tensors
    if isinstance(x, (set, frozenset, tuple)):
        return list(x)
    return str(x)


def _error(message: str, code: str) -> FootprintError:
    error = FootprintError(message)
    error.code = code
    return error


# --- interpreter exit and fork --------------------------------------------------------------

# Open benchmarks, held until closed: a benchmark only a decorator still refers to is closed
# at exit like any other.
_open_benchmarks: set[Benchmark] = set()


def _close_at_exit() -> None:
    """Closes benchmarks still open when the interpreter exits."""
    status = "ok"
    last = getattr(sys, "last_type", None)
    if last is not None and not hasattr(sys, "ps1"):  # an uncaught exception ended a script
        status = _status_for(last, getattr(sys, "last_value", None))
    for bm in list(_open_benchmarks):
        try:
            bm.close(status)
        except FootprintError as e:
            print(f"footprint: {e}", file=sys.stderr)


def _after_fork_in_child() -> None:
    """A forked child (a DataLoader worker, multiprocessing) must not touch the parent's
    benchmarks: their threads do not exist here. They are abandoned, never closed."""
    for bm in list(_open_benchmarks):
        bm._native.abandon()
    _open_benchmarks.clear()
    _releaser.reset_after_fork()


atexit.register(_close_at_exit)
os.register_at_fork(after_in_child=_after_fork_in_child)
