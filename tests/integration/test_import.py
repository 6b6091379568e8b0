"""footprint import: an UMLAUT database, written here with UMLAUT's own schema and encodings
(hpides/End-to-end-ML-System-Benchmark, umlaut/datamodel.py and its metrics: series as JSON
encoded twice, local naive times, MiB, summed times), becomes footprint runs."""
import hashlib
import json
import os
import sqlite3
import subprocess
from datetime import datetime, timedelta

from fp_helpers import FOOTPRINT, clean_env, describe, fp, show

# As SQLAlchemy creates UMLAUT's tables.
SCHEMA = """
CREATE TABLE benchmark_metadata (
    uuid VARCHAR NOT NULL, meta_description VARCHAR, meta_name VARCHAR,
    meta_start_time DATETIME, PRIMARY KEY (uuid));
CREATE TABLE measurement (
    id INTEGER NOT NULL, uuid VARCHAR, measurement_datetime DATETIME,
    measurement_description VARCHAR NOT NULL, measurement_type VARCHAR,
    measurement_data JSON, measurement_unit VARCHAR, measured_method_name VARCHAR,
    PRIMARY KEY (id), FOREIGN KEY(uuid) REFERENCES benchmark_metadata (uuid));
"""
UUID = "55077e71-3c2b-4d8e-9a51-0c7a2f1e9b10"
T0 = datetime(2024, 8, 13, 9, 18, 33, 258660)


def stamp(t):
    return str(t)  # UMLAUT: str(datetime), local time


def twice(doc):
    """What UMLAUT's time-series metrics store: json.dumps(..., indent=4) inside a JSON column."""
    return json.dumps(json.dumps(doc, indent=4, default=str))


def make_umlaut_db(path):
    con = sqlite3.connect(path)
    con.executescript(SCHEMA)
    con.execute("INSERT INTO benchmark_metadata VALUES (?, ?, ?, ?)",
                (UUID, "Database for the Github sample measurements", "main.py", stamp(T0)))
    series_t = [T0 + timedelta(seconds=0.1 * i) for i in range(1, 11)]
    rows = [
        # (datetime, description, type, data (SQL value), unit, method)
        (T0 + timedelta(seconds=1.2), "bloat memory", "memory",
         twice({"timestamps": series_t, "measurements": [400.0 + i for i in range(10)]}),
         "MiB", "bloat"),
        (T0 + timedelta(seconds=1.2), "bloat cpu", "cpu",
         twice({"timestamps": series_t, "measurements": [95.0] * 10}), "%", "bloat"),
        (T0 + timedelta(seconds=1.2), "bloat time", "time", 1.0, "sec", "bloat"),
        (T0 + timedelta(seconds=1.5), "inference latency\n (#Entries = 100)", "latency", 0.002,
         "Seconds/entry", "infer"),
        (T0 + timedelta(seconds=1.5), "bloat energy", "energy", json.dumps("1234000.0"), "µJ",
         "bloat"),
        (T0 + timedelta(seconds=1.5), "bloat power", "power",
         twice({"timestamps": series_t, "measurements": [10.0] * 10, "interval": 0.1}), "Watt",
         "bloat"),
        (T0 + timedelta(seconds=2), "training accuracy", "tta", json.dumps([0.5, 0.9, 0.9]),
         "accuracy", ""),
        (T0 + timedelta(seconds=2), "training loss", "loss", json.dumps([2.0, 1.0, 0.5]), "loss",
         ""),
        (T0 + timedelta(seconds=2.5), "test matrix", "confusion-matrix",
         twice({"matrix": "[[5 1]\n [2 7]]", "labels": ["cat", "dog"]}), "", ""),
        (T0 + timedelta(seconds=3), "grid search", "hyperparameters",
         json.dumps({"hyperparameters": ["lr", "batch_size"],
                     "df": {"lr": [0.1, 0.01], "batch_size": [32, 64], "loss": [0.4, 0.2]},
                     "target": "loss", "low_means_good": True}), "", ""),
    ]
    for i, (t, desc, kind, data, unit, method) in enumerate(rows, start=1):
        con.execute("INSERT INTO measurement VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (i, UUID, stamp(t), desc, kind, data, unit, method))
    con.commit()
    con.close()


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def test_an_umlaut_database_is_imported_once(tmp_path):
    umlaut_db, db = str(tmp_path / "hello_world.db"), str(tmp_path / "fp.db")
    make_umlaut_db(umlaut_db)
    before = sha(umlaut_db)
    proc = fp("import", "-o", db, umlaut_db)
    assert proc.returncode == 0, describe(proc)
    assert "power: 1 row(s)" in proc.stdout  # said, not silently dropped
    assert sha(umlaut_db) == before and sorted(os.listdir(tmp_path)) == ["fp.db", "hello_world.db"]

    s = show(db, UUID)
    assert s["run"]["id"] == UUID and s["run"]["name"] == "main.py"
    assert s["run"]["status"] == "ok"
    with sqlite3.connect(db) as con:
        con.row_factory = sqlite3.Row
        memory = [r["value"] for r in con.execute(
            "SELECT value FROM samples JOIN series ON series.id = series_id "
            "WHERE metric = 'memory' ORDER BY t_ns")]
        scopes = {r["name"]: (r["start_ns"], r["end_ns"]) for r in con.execute(
            "SELECT name, start_ns, end_ns FROM scopes")}
        values = [(r["name"], r["step"], r["value"], r["data"], r["scope"]) for r in con.execute(
            "SELECT v.name, v.step, v.value, v.data, s.name AS scope FROM run_values v "
            "LEFT JOIN scopes s ON s.id = v.scope_id ORDER BY v.id")]
    con.close()
    # MiB -> bytes, every sample.
    assert memory == [(400.0 + i) * 2**20 for i in range(10)]
    # bloat: from its first sample (0.1 s) to the end of its 1 s timed call (1.2 s).
    start, end = scopes["bloat"]
    assert (start, end) == (100_000_000, 1_200_000_000)
    by_name = {}
    for name, step, value, data, scope in values:
        by_name.setdefault(name, []).append((step, value, data, scope))
    assert by_name["latency"] == [(None, 0.002, None, "infer")]
    assert by_name["energy.cpu"][0][1] == 1.234  # µJ -> J
    assert [(st, v) for st, v, _, sc in by_name["accuracy"]] == [(0, 0.5), (1, 0.9), (2, 0.9)]
    assert {sc for *_, sc in by_name["loss"]} == {"training loss"}
    matrix = json.loads(by_name["confusion_matrix"][0][2])
    assert matrix == {"kind": "confusion_matrix", "labels": ["cat", "dog"],
                      "matrix": [[5, 2], [1, 7]]}  # UMLAUT's [pred][true], transposed
    hp = [(v, json.loads(d)["params"]) for _, v, d, _ in by_name["hyperparameters"]]
    assert hp == [(0.4, {"lr": 0.1, "batch_size": 32}), (0.2, {"lr": 0.01, "batch_size": 64})]

    # Importing again adds nothing.
    again = fp("import", "-o", db, umlaut_db)
    assert again.returncode == 0 and "already in" in again.stdout, describe(again)
    assert len(json.loads(fp("runs", "-o", db, "--json").stdout)) == 1

    # UMLAUT's command line over the imported run, by UMLAUT's description of the metric.
    env = clean_env(PATH=os.path.dirname(FOOTPRINT) + os.pathsep + os.environ["PATH"])
    cli = subprocess.run(["umlaut-cli", db, "-u", UUID, "-t", "memory", "cpu", "-d",
                          "bloat memory", "-p", "plotly"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    assert cli.returncode == 0, describe(cli)
    assert (tmp_path / "umlaut-plot.html").stat().st_size > 10_000
    # Pointed at UMLAUT's file itself: refused, untouched, and told how to import it.
    raw = subprocess.run(["umlaut-cli", umlaut_db, "-p", "text"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    assert raw.returncode == 3 and "footprint import" in raw.stderr, describe(raw)
    assert sha(umlaut_db) == before


def test_import_refuses_what_is_not_umlauts(tmp_path):
    db = str(tmp_path / "fp.db")
    other = str(tmp_path / "other.db")
    with sqlite3.connect(other) as con:
        con.execute("CREATE TABLE t (x)")
    con.close()
    proc = fp("import", "-o", db, other)
    assert proc.returncode == 3 and "not an UMLAUT database" in proc.stderr, describe(proc)
    proc = fp("import", "-o", db, str(tmp_path / "missing.db"))
    assert proc.returncode == 3 and proc.stderr.count("\n") == 1, describe(proc)


def test_malformed_umlaut_rows_are_listed_not_fatal(tmp_path):
    umlaut_db, db = str(tmp_path / "odd.db"), str(tmp_path / "fp.db")
    con = sqlite3.connect(umlaut_db)
    con.executescript(SCHEMA)
    con.execute("INSERT INTO benchmark_metadata VALUES (?, '', NULL, 'not a time')", (UUID,))
    # A year whose nanoseconds would not fit in 64 bits: read as no time at all.
    con.execute("INSERT INTO benchmark_metadata VALUES ('far', '', NULL, '99999-01-01 00:00:00')")
    odd = [("t", "time", -5.0), ("t", "time", 1e300), ("m", "memory", twice({"timestamps": 3})),
           ("c", "confusion-matrix", twice({"matrix": "[[5 -]]", "labels": ["a"]})),
           ("h", "hyperparameters", json.dumps({"hyperparameters": ["lr"], "target": "loss",
                                                "df": {"lr": [0.1], "loss": [0.4, 0.2]},
                                                "low_means_good": "yes"})),
           ("w", "weird", "{"), ("l", "loss", json.dumps({"not": "a list"}))]
    for i, (desc, kind, data) in enumerate(odd, start=1):
        con.execute("INSERT INTO measurement VALUES (?, ?, ?, ?, ?, ?, '', 'f')",
                    (i, UUID, stamp(T0), desc, kind, data))
    con.commit()
    con.close()
    proc = fp("import", "-o", db, umlaut_db)
    assert proc.returncode == 0, describe(proc)
    for line in ("time: 2 row(s)", "memory: 1 row(s)", "confusion-matrix: 1 row(s)",
                 "weird: 1 row(s)", "loss: 1 row(s)"):
        assert line in proc.stdout, (line, proc.stdout)
    # The hyperparameter set with a missing lr value is kept with what it has.
    s = show(db, UUID)
    assert s["run"]["status"] == "ok"
