"""Reading a footprint database back as pandas DataFrames: :func:`load`.

The database is only read, never changed, and left as it was found: no ``-wal``/``-shm``
file stays behind (footprint's own reading rule, src/store/sqlite_store.cc). It may be read
while runs are still being written into it.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import sqlite3
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Optional, Union

from . import _footprint
from ._footprint import FootprintError

if TYPE_CHECKING:  # pandas is imported by load(): decorating functions must not pay for it
    import pandas as pd

__all__ = ["Data", "load"]

RunSelector = Union[str, Iterable[str], None]


@dataclass
class Data:
    """The contents of a footprint database (or of some of its runs), one DataFrame per table.

    Attributes:
        runs: one row per run — ``id, name, description, status, exit_code, started_at,
            ended_at, duration_s, command, cwd, host, user, tags, params, meta`` and more.
            ``status`` shows a run whose process died as ``interrupted`` (as ``footprint
            runs`` does); ``stored_status`` is what the database says.
        samples: sampled series, one row per sample — ``run_id, metric, unit, entity,
            scope_id, t_s, value`` (``t_s``: seconds since the run started).
        scopes: one row per scope — ``id, run_id, name, parent_id, parent, depth, thread,
            start_s, end_s, duration_s`` (``end_s``/``duration_s`` are NaN for a scope the
            process died in).
        values: valued metrics — ``id, run_id, scope_id, scope, name, step, t_s, value,
            data`` (``data``: the parsed JSON document, or None).
        totals: run totals (``footprint show``), long format — ``run_id, name, value``.
        artifacts: ``run_id, name, path, sha256, size``.

    ``data["runs"]`` works as ``data.runs``.
    """

    runs: "pd.DataFrame"
    samples: "pd.DataFrame"
    scopes: "pd.DataFrame"
    values: "pd.DataFrame"
    totals: "pd.DataFrame"
    artifacts: "pd.DataFrame"
    db: str = field(default="")

    _TABLES = ("runs", "samples", "scopes", "values", "totals", "artifacts")

    def __getitem__(self, table: str) -> "pd.DataFrame":
        if table not in self._TABLES:
            raise KeyError(table)
        return getattr(self, table)

    def keys(self) -> tuple[str, ...]:
        return self._TABLES

    def during(self, scope_id: int, metric: Optional[str] = None) -> "pd.DataFrame":
        """The samples of the scope's run taken while scope ``scope_id`` was open (all
        metrics, or one)."""
        match = self.scopes[self.scopes["id"] == scope_id]
        if match.empty:
            raise KeyError(f"no scope {scope_id}")
        scope = match.iloc[0]
        s = self.samples
        import pandas as pd

        keep = (s["run_id"] == scope["run_id"]) & (s["t_s"] >= scope["start_s"])
        if not pd.isna(scope["end_s"]):
            keep &= s["t_s"] <= scope["end_s"]
        if metric is not None:
            keep &= s["metric"] == metric
        return s[keep].reset_index(drop=True)


def load(db: Optional[Union[str, "os.PathLike[str]"]] = None, runs: RunSelector = None) -> Data:
    """Reads a footprint database into DataFrames.

    Args:
        db: the database file; default ``$FOOTPRINT_DB``, else ``./footprint.db``.
        runs: which runs (default all): a run id, a unique id prefix (4+ characters), a run
            name (its latest run), ``"last"``, or a list of those.

    Raises:
        FootprintError: the file is missing or not a footprint database (``code``
            ``database``), or a run selector matches nothing (``not_found``) or several runs
            (``invalid_argument``).
    """
    path = os.fspath(db) if db is not None else _footprint.default_db()
    if path.startswith("sqlite:"):
        path = path[len("sqlite:"):]
    if not os.path.isfile(path):
        raise _error(f"no footprint database at {path}", "database")
    import pandas as pd

    try:
        with contextlib.closing(_connect_reading(path)) as conn:
            _check_schema(conn, path)
            return _read(conn, path, runs)
    except (sqlite3.Error, pd.errors.DatabaseError) as e:
        raise _error(f"cannot read {path} as a footprint database: {e}", "database") from e


def _connect_reading(path: str) -> sqlite3.Connection:
    """A connection that only reads `path`, opened as footprint's own readers open it
    (src/store/stores.h, SqliteReaderMayWrite): never through a descriptor of Python's own,
    whose close would drop the locks this process's SQLite connections hold on the file."""
    mode = "rw" if _footprint.sqlite_reader_may_write(path) else "ro"
    conn = sqlite3.connect(pathlib.Path(path).absolute().as_uri() + "?mode=" + mode, uri=True,
                           timeout=30)
    conn.execute("PRAGMA query_only = ON")
    return conn


def _check_schema(conn: sqlite3.Connection, path: str) -> None:
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    tables = {row[0] for row in rows}
    if version == 0 or not {"runs", "series", "samples", "scopes", "run_values"} <= tables:
        raise _error(f"{path} is not a footprint database", "database")
    if version > _footprint.SCHEMA_VERSION:
        raise _error(f"{path} was written by a newer footprint (schema version {version}; "
                     f"this one reads up to {_footprint.SCHEMA_VERSION}): upgrade footprint",
                     "database")


def _error(message: str, code: str) -> FootprintError:
    error = FootprintError(message)
    error.code = code
    return error


def _query(conn: sqlite3.Connection, sql: str, ids: list[str]) -> "pd.DataFrame":
    import pandas as pd

    marks = ",".join("?" * len(ids))
    return pd.read_sql_query(sql.format(ids=marks), conn, params=ids)


def _read(conn: sqlite3.Connection, path: str, selector: RunSelector) -> Data:
    import pandas as pd

    runs = pd.read_sql_query("SELECT * FROM runs ORDER BY started_at_ns, id", conn)
    runs = runs.iloc[_select(runs, selector)].reset_index(drop=True)
    ids = list(runs["id"])

    totals = _query(conn, "SELECT run_id, name, value FROM run_totals "
                          "WHERE run_id IN ({ids}) ORDER BY run_id, name", ids)
    samples = _query(conn, """
        SELECT s.run_id, s.metric, s.unit, s.entity, s.scope_id, p.t_ns, p.value
        FROM samples p JOIN series s ON p.series_id = s.id
        WHERE s.run_id IN ({ids}) ORDER BY s.run_id, s.metric, s.entity, p.t_ns""", ids)
    scopes = _query(conn, """
        SELECT c.id, c.run_id, c.name, c.parent_id, p.name AS parent, c.thread,
               c.start_ns, c.end_ns
        FROM scopes c LEFT JOIN scopes p ON c.parent_id = p.id
        WHERE c.run_id IN ({ids}) ORDER BY c.run_id, c.start_ns, c.id""", ids)
    values = _query(conn, """
        SELECT v.id, v.run_id, v.scope_id, c.name AS scope, v.name, v.step, v.t_ns, v.value,
               v.data
        FROM run_values v LEFT JOIN scopes c ON v.scope_id = c.id
        WHERE v.run_id IN ({ids}) ORDER BY v.run_id, v.name, v.step, v.t_ns, v.id""", ids)
    artifacts = _query(conn, "SELECT run_id, name, path, sha256, size FROM artifacts "
                             "WHERE run_id IN ({ids}) ORDER BY run_id, name", ids)

    runs = _finish_runs(runs, totals, path)
    samples["scope_id"] = samples["scope_id"].astype("Int64")
    samples.insert(6, "t_s", samples["t_ns"] / 1e9)
    _finish_scopes(scopes)
    values["scope_id"] = values["scope_id"].astype("Int64")
    values["step"] = values["step"].astype("Int64")
    values["value"] = values["value"].astype(float)
    values.insert(8, "t_s", values["t_ns"] / 1e9)
    values["data"] = [None if d is None else json.loads(d) for d in values["data"]]
    return Data(runs=runs, samples=samples, scopes=scopes, values=values, totals=totals,
                artifacts=artifacts, db=path)


def _select(runs: "pd.DataFrame", selector: RunSelector) -> list[int]:
    """Row positions of the selected runs (the rules of the command line's RUN)."""
    if selector is None:
        return list(range(len(runs)))
    wanted = [selector] if isinstance(selector, str) else list(selector)
    rows: list[int] = []
    for want in wanted:
        if want == "last":
            found = [len(runs) - 1] if len(runs) else []
        else:
            found = [i for i, rid in enumerate(runs["id"]) if rid == want]
            if not found and len(want) >= 4:
                found = [i for i, rid in enumerate(runs["id"]) if rid.startswith(want)]
                if len(found) > 1:
                    raise _error(f"run prefix '{want}' is ambiguous ({len(found)} runs)",
                                 "invalid_argument")
            if not found:
                named = [i for i, name in enumerate(runs["name"]) if name == want]
                found = named[-1:]
        if not found:
            raise _error(f"no run '{want}' in the database", "not_found")
        rows.extend(i for i in found if i not in rows)
    return rows


def _finish_runs(runs: "pd.DataFrame", totals: "pd.DataFrame", path: str) -> "pd.DataFrame":
    import pandas as pd

    runs = runs.copy()
    stored = runs["status"].copy()
    live = _footprint.run_statuses(path) if (stored == "running").any() else {}
    runs["stored_status"] = stored
    runs["status"] = [live.get(rid, s) for rid, s in zip(runs["id"], stored)]
    for column in ("exit_code", "ended_at_ns", "heartbeat_ns"):
        runs[column] = runs[column].astype("Int64")
    runs["started_at"] = pd.to_datetime(runs["started_at_ns"], unit="ns", utc=True)
    runs["ended_at"] = pd.to_datetime(runs["ended_at_ns"], unit="ns", utc=True)
    duration = totals[totals["name"] == "duration_s"].set_index("run_id")["value"]
    elapsed = (runs["ended_at_ns"] - runs["started_at_ns"]).astype(float) / 1e9
    runs["duration_s"] = [float(duration.get(rid, e)) for rid, e in zip(runs["id"], elapsed)]
    runs["command"] = [json.loads(c) if c else [] for c in runs["command"]]
    meta = [json.loads(m) if m else {} for m in runs["meta"]]
    runs["meta"] = meta
    runs["tags"] = [m.get("tags", {}) for m in meta]
    runs["params"] = [m.get("params", {}) for m in meta]
    first = ["id", "name", "description", "status", "exit_code", "started_at", "ended_at",
             "duration_s", "command"]
    return runs[first + [c for c in runs.columns if c not in first]]


def _finish_scopes(scopes: "pd.DataFrame") -> None:
    import pandas as pd

    scopes["parent_id"] = scopes["parent_id"].astype("Int64")
    scopes["start_s"] = scopes["start_ns"] / 1e9
    scopes["end_s"] = scopes["end_ns"].astype(float) / 1e9
    scopes["duration_s"] = scopes["end_s"] - scopes["start_s"]
    scopes["end_ns"] = scopes["end_ns"].astype("Int64")
    parents = dict(zip(scopes["id"], scopes["parent_id"]))
    depth: dict[int, int] = {}

    def depth_of(sid: int) -> int:
        chain = []
        while sid not in depth:
            parent = parents.get(sid)
            if parent is None or pd.isna(parent):
                depth[sid] = 0
                break
            chain.append(sid)
            sid = int(parent)
        d = depth[sid]
        for s in reversed(chain):
            d += 1
            depth[s] = d
        return depth[chain[0]] if chain else depth[sid]

    scopes.insert(5, "depth", [depth_of(int(s)) for s in scopes["id"]])
