"""Scopes from Python: nesting, durations, repeated, recursive, concurrent and async calls."""

from __future__ import annotations

import asyncio
import inspect
import json
import threading
import time

import pytest

import footprint as fp
from fp_python import run_footprint


def scopes_of(db, bm):
    return fp.load(db, runs=bm.run_id).scopes


def test_nested_scopes_have_their_parents_and_durations(db):
    with fp.Benchmark(db, description="nesting") as bm:
        @fp.supervise([fp.Time()], bm, name="step")
        def step():
            time.sleep(0.03)

        with bm.scope("outer"):
            time.sleep(0.05)
            with bm.scope("inner"):
                time.sleep(0.1)
                step()
        with bm.scope("second"):
            pass
        thread = threading.get_native_id()

    s = scopes_of(db, bm).set_index("name")
    assert list(scopes_of(db, bm)["name"]) == ["outer", "inner", "step", "second"]
    assert pd_isna(s.loc["outer", "parent_id"]) and pd_isna(s.loc["second", "parent_id"])
    assert s.loc["inner", "parent_id"] == s.loc["outer", "id"]
    assert s.loc["step", "parent_id"] == s.loc["inner", "id"]
    assert list(s["parent"].fillna("-")) == ["-", "outer", "inner", "-"]
    assert list(s["depth"]) == [0, 1, 2, 0]
    assert (s["thread"] == thread).all()
    # Durations: at least what was slept, and each child within its parent.
    assert s.loc["step", "duration_s"] >= 0.03
    assert s.loc["inner", "duration_s"] >= 0.13
    assert s.loc["outer", "duration_s"] >= s.loc["inner", "duration_s"] + 0.05
    for child, parent in (("inner", "outer"), ("step", "inner")):
        assert s.loc[parent, "start_s"] <= s.loc[child, "start_s"]
        assert s.loc[child, "end_s"] <= s.loc[parent, "end_s"]
    assert s.loc["outer", "end_s"] <= s.loc["second", "start_s"]


def pd_isna(x) -> bool:
    import pandas as pd

    return bool(pd.isna(x))


def test_each_call_of_a_decorated_function_is_its_own_scope(db):
    bm = fp.Benchmark(db)

    @fp.supervise([fp.Time(), fp.CPU(interval=0.01), fp.Memory(interval=0.01)], bm)
    def work(seconds):
        time.sleep(seconds)
        return seconds * 2

    sleeps = [0.01, 0.08, 0.02, 0.05]
    assert [work(t) for t in sleeps] == [t * 2 for t in sleeps]
    bm.close()

    s = scopes_of(db, bm)
    qualname = work.__qualname__
    assert list(s["name"]) == [qualname] * len(sleeps)  # never one summed value
    for (_, row), slept in zip(s.iterrows(), sleeps):
        assert slept <= row["duration_s"] < slept + 0.5
    assert s["parent_id"].isna().all()
    starts, ends = list(s["start_s"]), list(s["end_s"])
    assert all(ends[i] <= starts[i + 1] for i in range(len(sleeps) - 1))


def test_recursive_calls_nest(db):
    bm = fp.Benchmark(db)

    @fp.supervise([], bm, name="fib")
    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    assert fib(5) == 5
    bm.close()
    s = scopes_of(db, bm)
    assert len(s) == 15  # calls of fib(5)
    root = s[s["parent_id"].isna()]
    assert len(root) == 1
    by_id = s.set_index("id")
    for _, row in s[s["parent_id"].notna()].iterrows():
        parent = by_id.loc[row["parent_id"]]
        assert parent["name"] == "fib"
        assert parent["start_s"] <= row["start_s"] and row["end_s"] <= parent["end_s"]
    assert s["depth"].max() == 4


def test_concurrent_calls_from_threads(db):
    bm = fp.Benchmark(db)
    threads_n, calls = 4, 50

    @fp.supervise([fp.Time(), fp.Memory(interval=0.005)], bm, name="task")
    def task(i):
        with bm.scope("part"):
            time.sleep(0.0005)
        return i

    native_ids = []
    barrier = threading.Barrier(threads_n)

    def worker():
        native_ids.append(threading.get_native_id())
        barrier.wait()
        for i in range(calls):
            assert task(i) == i

    workers = [threading.Thread(target=worker) for _ in range(threads_n)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    bm.close()

    s = scopes_of(db, bm)
    tasks, parts = s[s["name"] == "task"], s[s["name"] == "part"]
    assert len(tasks) == threads_n * calls and len(parts) == threads_n * calls
    assert sorted(tasks.groupby("thread").size()) == [calls] * threads_n
    assert set(tasks["thread"]) == set(native_ids)
    assert tasks["parent_id"].isna().all()
    by_id = s.set_index("id")
    for _, part in parts.iterrows():
        parent = by_id.loc[part["parent_id"]]
        assert parent["name"] == "task" and parent["thread"] == part["thread"]
        assert parent["start_s"] <= part["start_s"] and part["end_s"] <= parent["end_s"]
    # Within a thread, the calls follow one another.
    for _, rows in tasks.groupby("thread"):
        rows = rows.sort_values("start_s")
        assert (rows["end_s"].values[:-1] <= rows["start_s"].values[1:]).all()


def test_decorator_keeps_name_docstring_and_signature(db):
    with fp.Benchmark(db) as bm:
        def original(a: int, b: str = "x") -> str:
            """Docstring of original."""
            return b * a

        wrapped = fp.supervise([fp.Time()], bm)(original)
        also = bm.scope("as decorator")(original)
        assert wrapped(2) == "xx" and also(1, "y") == "y"
    for w in (wrapped, also):
        assert w.__name__ == "original"
        assert w.__doc__ == "Docstring of original."
        assert w.__wrapped__ is original
        assert inspect.signature(w) == inspect.signature(original)
    names = list(scopes_of(db, bm)["name"])
    assert names == [original.__qualname__, "as decorator"]


def test_an_exception_ends_the_scope_and_propagates(db):
    bm = fp.Benchmark(db)

    @fp.supervise([fp.Time()], bm, name="fails")
    def fails():
        time.sleep(0.01)
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        fails()
    with pytest.raises(KeyError):
        with bm.scope("block"):
            raise KeyError("k")
    with bm.scope("after"):
        pass
    bm.close()
    s = scopes_of(db, bm).set_index("name")
    assert s.loc["fails", "duration_s"] >= 0.01
    assert s["end_s"].notna().all()
    assert s["parent_id"].isna().all()  # the stack unwound: "after" is top-level


def test_coroutine_functions_are_supervised_around_the_await(db):
    bm = fp.Benchmark(db)

    @fp.supervise([fp.Time()], bm, name="fetch")
    async def fetch(x):
        await asyncio.sleep(0.05)
        return x

    assert inspect.iscoroutinefunction(fetch)
    assert asyncio.run(fetch(3)) == 3
    bm.close()
    s = scopes_of(db, bm)
    assert list(s["name"]) == ["fetch"]
    assert s["duration_s"].iloc[0] >= 0.05


def test_scope_names_must_be_strings(db):
    with fp.Benchmark(db) as bm:
        with pytest.raises(ValueError):
            bm.scope("")
        with pytest.raises(TypeError):
            fp.supervise([fp.Time()], None)  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            fp.supervise(["cpu"], bm)  # type: ignore[list-item]


def test_closing_while_other_threads_record(db):
    """close() while threads are inside decorated functions: nothing crashes, every scope
    stored is well-formed, and later calls still run (unrecorded)."""
    bm = fp.Benchmark(db, flush_interval=0.01)
    stop = threading.Event()
    errors = []
    calls = [0] * 4

    @fp.supervise([fp.Time(), fp.CPU(interval=0.005)], bm, name="busy")
    def busy():
        with bm.scope("inner"):
            sum(range(50))

    def worker(i):
        try:
            while not stop.is_set():
                busy()
                calls[i] += 1
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    workers = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for w in workers:
        w.start()
    time.sleep(0.2)
    bm.close()
    after = list(calls)
    time.sleep(0.05)
    stop.set()
    for w in workers:
        w.join()
    assert not errors
    assert sum(calls) > sum(after)  # the functions kept working after close
    data = fp.load(db)
    assert list(data.runs["status"]) == ["ok"]
    s = data.scopes
    assert (s["name"] == "busy").sum() > 10
    ended = s[s["end_s"].notna()]
    assert (ended["end_s"] >= ended["start_s"]).all()
    inner = s[s["name"] == "inner"]
    parents = s.set_index("id").loc[inner["parent_id"].dropna().astype(int)]
    assert (parents["name"] == "busy").all()


def test_one_scope_object_nests_in_itself_and_serves_threads(db):
    """A Scope kept and entered again before it was left, on one thread and from several at
    once: every exit ends the scope its own thread opened."""
    with fp.Benchmark(db) as bm:
        shared = bm.scope("shared")
        barrier = threading.Barrier(3)

        def worker():
            with shared:
                barrier.wait()  # all three inside it at once
                with shared:
                    time.sleep(0.02)
                time.sleep(0.02)

        with shared:
            workers = [threading.Thread(target=worker) for _ in range(3)]
            for w in workers:
                w.start()
            for w in workers:
                w.join()
        assert repr(shared).startswith("<footprint.Scope 'shared' of run ")
        assert shared.name == "shared" and shared.benchmark is bm
    s = scopes_of(db, bm).set_index("id")
    assert len(s) == 1 + 3 * 2 and s["end_s"].notna().all()
    for _, row in s[s["parent_id"].notna()].iterrows():
        parent = s.loc[row["parent_id"]]
        assert parent["thread"] == row["thread"]  # nested on its own thread only
        assert parent["start_s"] <= row["start_s"] and row["end_s"] <= parent["end_s"]
    per_thread = s.groupby("thread").size().sort_values()
    assert list(per_thread) == [1, 2, 2, 2]  # the main thread's, and each worker's two


def test_a_burst_of_a_million_scopes_is_stored_whole(db):
    """One million scopes as fast as Python opens them (about 1 M/s here, so at least the
    500 k/s for 2 s that a tight training loop reaches): the database writer is slower, the
    queue holds the burst, and every scope is stored."""
    n = 1_000_000
    with fp.Benchmark(db) as bm:
        start = time.perf_counter()
        for _ in range(n):
            with bm.scope("step"):
                pass
        rate = n / (time.perf_counter() - start)
    summary = json.loads(run_footprint("show", "-o", str(db), "--json", bm.run_id).stdout)
    [step] = [sc for sc in summary["scopes"] if sc["name"] == "step"]
    assert step["count"] == n and step["unfinished"] == 0, (step, rate)
    assert summary["scopes_dropped"] == 0
