"""footprint import: an UMLAUT database, written here with UMLAUT's own schema and encodings
(hpides/End-to-end-ML-System-Benchmark, umlaut/datamodel.py and its metrics: series as JSON
encoded twice, local naive times, MiB, summed times), becomes footprint runs."""
import hashlib
import json
import os
import re
import sqlite3
import subprocess
from datetime import datetime, timedelta

from fp_helpers import FOOTPRINT, TIMEOUT_S, clean_env, describe, fp, show

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



def measurements_imported(con, rows, db, umlaut_db):
    """Writes `rows` (description, type, data) as the UMLAUT run's measurements, closes `con`,
    imports the file into `db`; asserts the import succeeded and returns it."""
    for i, (desc, kind, data) in enumerate(rows, start=1):
        con.execute("INSERT INTO measurement VALUES (?, ?, ?, ?, ?, ?, '', 'f')",
                    (i, UUID, stamp(T0), desc, kind, data))
    con.commit()
    con.close()
    proc = fp("import", "-o", db, umlaut_db)
    assert proc.returncode == 0, describe(proc)
    return proc

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
    proc = measurements_imported(con, odd, db, umlaut_db)
    for line in ("time: 2 row(s)", "memory: 1 row(s)", "confusion-matrix: 1 row(s)",
                 "weird: 1 row(s)", "loss: 1 row(s)"):
        assert line in proc.stdout, (line, proc.stdout)
    # The hyperparameter set with a missing lr value is kept with what it has.
    s = show(db, UUID)
    assert s["run"]["status"] == "ok"


# Hostile databases: whatever the file holds, import ends in runs or in one line, exit 3, with
# footprint's memory and time bounded and the file left as it was.
DEEP = 100_000


def deep_array(depth):
    """JSON text of `depth` nested arrays (Python's json cannot write one that deep)."""
    return "[" * depth + "]" * depth


# Runs a command and writes its peak RSS (KiB) to a file. A child of pytest inherits pytest's
# own peak through exec; a child of this small process inherits only this one's few MiB.
PEAK_RSS = """import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_measured(tmp_path, *args):
    """`footprint ARGS...` to the end: (returncode, stdout, stderr, its peak RSS in MiB)."""
    peak_file = tmp_path / "peak_rss_kib"
    proc = subprocess.run(["/usr/bin/python3", "-c", PEAK_RSS, peak_file, FOOTPRINT, *args],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          env=clean_env(), timeout=TIMEOUT_S)
    return proc.returncode, proc.stdout, proc.stderr, int(peak_file.read_text()) / 1024


def test_deeply_nested_json_is_listed_not_a_crash(tmp_path):
    umlaut_db, db = str(tmp_path / "deep.db"), str(tmp_path / "fp.db")
    con = sqlite3.connect(umlaut_db)
    con.executescript(SCHEMA)
    con.execute("INSERT INTO benchmark_metadata VALUES (?, '', 'deep', ?)", (UUID, stamp(T0)))
    labels = '{"matrix": "[[1]]", "labels": ' + deep_array(DEEP) + "}"
    hyper = '{"hyperparameters": ["lr"], "target": "loss", "df": {"lr": ' + deep_array(DEEP) + \
        ', "loss": [0.4]}}'
    rows = [("matrix", "confusion-matrix", json.dumps(labels)),  # encoded twice, as UMLAUT does
            ("grid", "hyperparameters", hyper),
            ("t", "time", 1.0)]
    proc = measurements_imported(con, rows, db, umlaut_db)
    for kind in ("confusion-matrix", "hyperparameters"):
        assert f"not imported: {kind}: 1 row(s) (measurement_data: JSON nested more than 256 " \
            "levels deep" in proc.stdout, describe(proc)
    assert "1 scope(s)" in proc.stdout  # the rest of the run is imported
    assert show(db, UUID)["run"]["status"] == "ok"


def test_a_handed_over_database_with_deep_json_is_read(tmp_path):
    umlaut_db, db = str(tmp_path / "hello_world.db"), str(tmp_path / "fp.db")
    make_umlaut_db(umlaut_db)
    assert fp("import", "-o", db, umlaut_db).returncode == 0
    # Someone else's footprint database: a run's meta and a value's document nest 100 000 deep.
    deep_object = '{"a":' * DEEP + "1" + "}" * DEEP
    with sqlite3.connect(db) as con:
        con.execute("UPDATE runs SET meta = ?", (deep_object,))
        con.execute("UPDATE run_values SET data = ? WHERE name = 'confusion_matrix'",
                    (deep_array(DEEP),))
    con.close()
    assert show(db, UUID)["run"]["id"] == UUID
    for fmt in ("json", "csv"):
        proc = fp("export", "-o", db, "-u", UUID, "--format", fmt, "--out", tmp_path / fmt)
        assert proc.returncode == 0, describe(proc)
    proc = fp("plot", "-o", db, "-u", UUID, "--out", tmp_path / "plot.html")
    assert proc.returncode == 0, describe(proc)


def hostile_umlaut_db(path, meta_name_sql):
    """UMLAUT's tables, with meta_name declared as `meta_name_sql` (a column definition)."""
    con = sqlite3.connect(path)
    con.executescript(SCHEMA.replace("meta_name VARCHAR", meta_name_sql))
    con.execute("INSERT INTO benchmark_metadata (uuid, meta_start_time) VALUES (?, ?)",
                (UUID, stamp(T0)))
    con.commit()
    con.close()


def test_a_generated_column_is_refused_before_it_costs(tmp_path):
    # 16 KB on disk; read, its column is a 500 MB string, computed again at each read.
    umlaut_db, db = str(tmp_path / "hostile.db"), str(tmp_path / "fp.db")
    hostile_umlaut_db(umlaut_db, "meta_name VARCHAR GENERATED ALWAYS AS "
                                 "(printf('%.*c', 500000000, 'x')) VIRTUAL")
    assert os.path.getsize(umlaut_db) < 64 * 1024
    before = sha(umlaut_db)
    rc, out, err, peak_mib = run_measured(tmp_path, "import", "-o", db, umlaut_db)
    assert rc == 3, (rc, out, err)
    assert err.count("\n") == 1 and "benchmark_metadata.meta_name" in err \
        and "generated column" in err, err
    assert peak_mib < 300, peak_mib
    assert sha(umlaut_db) == before
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == 0
    con.close()


def test_oversized_values_are_bounded(tmp_path):
    umlaut_db, db = str(tmp_path / "long.db"), str(tmp_path / "fp.db")
    hostile_umlaut_db(umlaut_db, "meta_name VARCHAR")
    with sqlite3.connect(umlaut_db) as con:
        con.execute("UPDATE benchmark_metadata SET meta_name = ?", ("é" * 100_000,))
    con.close()
    proc = fp("import", "-o", db, umlaut_db)
    assert proc.returncode == 0, describe(proc)
    assert "not imported: meta_name: 1 row(s) (longer than 256 bytes" in proc.stdout, \
        proc.stdout[-500:]
    assert show(db, UUID)["run"]["name"] == "é" * 128  # cut where a character starts

    # A value larger than SQLite is let read from a foreign file: one line, nothing imported.
    huge_db, db2 = str(tmp_path / "huge.db"), str(tmp_path / "fp2.db")
    hostile_umlaut_db(huge_db, "meta_name VARCHAR")
    with sqlite3.connect(huge_db) as con:
        con.execute("UPDATE benchmark_metadata SET meta_description = zeroblob(65 << 20)")
    con.close()
    rc, out, err, peak_mib = run_measured(tmp_path, "import", "-o", db2, huge_db)
    assert rc == 3 and err.count("\n") == 1 and "over 64 MiB" in err, (rc, out, err)
    assert peak_mib < 300, peak_mib


def test_an_imported_run_shows_what_its_rows_hold(tmp_path):
    """UMLAUT's first databases (its github example's hello_world.db) have no meta_name: the
    runs are named after the file. Show and compare have the totals the rows determine, and
    umlaut-cli -d finds a function by the description of its time too."""
    umlaut_db, db = str(tmp_path / "hello_world.db"), str(tmp_path / "fp.db")
    con = sqlite3.connect(umlaut_db)
    con.executescript(SCHEMA.replace("meta_name VARCHAR,", ""))
    second = "871dd01b-6564-4c62-bba2-72f2459587b2"
    for uuid, start, peak in ((UUID, T0, 409.0), (second, T0 + timedelta(seconds=25), 420.0)):
        con.execute("INSERT INTO benchmark_metadata VALUES (?, ?, ?)",
                    (uuid, "Database for the Github sample measurements", stamp(start)))
        series_t = [start + timedelta(seconds=0.1 * i) for i in range(1, 11)]
        memory = [peak - 9 + i for i in range(10)]
        for desc, kind, data, unit in (
                ("bloat memory", "memory", twice({"timestamps": series_t, "measurements": memory}),
                 "MiB"),
                ("bloat cpu", "cpu", twice({"timestamps": series_t, "measurements": [95.0] * 10}),
                 "%"),
                ("bloat time", "time", 1.0, "sec")):
            con.execute("INSERT INTO measurement (uuid, measurement_datetime, "
                        "measurement_description, measurement_type, measurement_data, "
                        "measurement_unit, measured_method_name) VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (uuid, stamp(start + timedelta(seconds=1.2)), desc, kind, data, unit,
                         "bloat"))
    con.commit()
    con.close()
    proc = fp("import", "-o", db, umlaut_db)
    assert proc.returncode == 0, describe(proc)

    s = show(db, UUID)
    assert s["run"]["name"] == "hello_world"
    assert s["totals"]["duration_s"] == 1.2  # from its start to its last row
    assert s["totals"]["peak_memory_bytes"] == 409.0 * 2**20  # its largest memory sample
    assert "largest memory sample" in s["meta"]["sources"]["peak_memory"]
    text = fp("show", "-o", db, UUID)
    # Where and by whom UMLAUT does not say: nothing, rather than a blank "on  by".
    (started,) = [line for line in text.stdout.splitlines() if line.startswith("started")]
    assert started.endswith(" UTC") and " on " not in started, started
    assert re.search(r"peak memory +409\.0 MiB +the largest memory sample", text.stdout), \
        text.stdout

    compared = fp("compare", "-o", db, UUID, second, "--json")
    assert compared.returncode == 0, describe(compared)
    figures = {f["name"]: [x["mean"] for x in f["sets"]]
               for f in json.loads(compared.stdout)["figures"]}
    assert figures == {"duration_s": [1.2, 1.2], "peak_memory_bytes": [409.0 * 2**20,
                                                                       420.0 * 2**20]}

    # UMLAUT's -t time -d 'bloat time': the calls of bloat (its time row's description).
    env = clean_env(PATH=os.path.dirname(FOOTPRINT) + os.pathsep + os.environ["PATH"])
    cli = subprocess.run(["umlaut-cli", db, "-u", UUID, "-t", "time", "-d", "bloat time", "-p",
                          "csv"], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=120)
    assert cli.returncode == 0, describe(cli)
    rows = (tmp_path / "umlaut_output.csv").read_text().splitlines()
    assert [r.split(",")[1:3] for r in rows[1:]] == [["scope", "bloat"]]
