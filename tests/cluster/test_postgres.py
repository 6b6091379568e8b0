"""The PostgreSQL store against a real server (docs/cluster.md): every command, concurrent
runs, a server restart in the middle of a 1 ms run, credentials never recorded, bad input."""
import json
import os
import re
import subprocess
import textwrap
import time
import urllib.request


from fp_helpers import FOOTPRINT, clean_env, describe, fp, run_ok, show, single_error_line, wl
from test_import import UUID as UMLAUT_UUID, make_umlaut_db


def sample_counts(postgres, uri_db, run_id):
    """{metric/entity: samples} of a run, counted by the server from the chunks."""
    rows = postgres.sql(
        "SELECT s.metric || '/' || s.entity, sum(c.n) FROM sample_chunks c "
        f"JOIN series s ON s.id = c.series_id WHERE s.run_id = '{run_id}' GROUP BY 1", uri_db)
    return {k: int(v) for k, v in rows}


def database_of(uri):
    return uri.split("/")[3].split("?")[0]


def test_every_command_works_against_postgres(postgres, pg_uri, tmp_path):
    db = database_of(pg_uri)
    # Two runs at once into one database (the first also creates the schema). The ground truth
    # for the CPU totals read back from the server: each burner's own getrusage at its exit
    # (FP_WORKLOAD_REPORT, a folder per run), and the kernel's account of each footprint process
    # (wait4: footprint and the burner it waited for). Not a floor on the burner's CPU: beside
    # the browser test on 2 cores, a 0.5 s burn once got 47 ms.
    truth = {i: tmp_path / f"truth{i}" for i in (1, 2)}
    for folder in truth.values():
        folder.mkdir()
    procs = {i: subprocess.Popen([FOOTPRINT, "run", "-o", pg_uri, "-q", "-n", f"burn{i}", "-i",
                                  "5ms", "--", wl("burn"), "1", "0.5"],
                                 env=clean_env(FP_WORKLOAD_REPORT=str(truth[i])),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for i in (1, 2)}
    kernel_cpu = {}
    for i, p in procs.items():
        _, status, usage = os.wait4(p.pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        kernel_cpu[f"burn{i}"] = usage.ru_utime + usage.ru_stime
    runs = fp_json("runs", "-o", pg_uri)
    assert sorted(r["name"] for r in runs) == ["burn1", "burn2"]
    for run in runs:
        assert run["status"] == "ok"
        summary = show(pg_uri, run["id"])
        totals = summary["totals"]
        cpu = totals["cpu_user_s"] + totals["cpu_system_s"]
        # What is left of the kernel's figure is footprint's own CPU: what it measured of itself
        # while the command ran, plus its start and its final writes.
        footprint_cpu = kernel_cpu[run["name"]] - cpu
        [report] = [json.loads(f.read_text()) for f in truth[int(run["name"][-1])].iterdir()]
        own = report["cpu_s"]
        assert own > 0 and abs(cpu - own) <= 0.03 * own + 0.01, (totals, report)
        assert totals["monitor_cpu_s"] - 0.01 <= footprint_cpu, (totals, kernel_cpu)
        assert footprint_cpu < totals["monitor_cpu_s"] + 0.5, (totals, kernel_cpu)
        meta = summary["meta"]["monitor"]
        counted = sample_counts(postgres, db, run["id"])
        assert sum(counted.values()) == meta["writer"]["samples_written"] > 0
        assert sum(counted.values()) == meta["sampler"]["samples"]

    a, b = (r["id"] for r in runs)
    proc = fp("compare", "-o", pg_uri, a, b)
    assert proc.returncode == 0 and "cpu" in proc.stdout, describe(proc)

    # export: every sample the server holds, as CSV rows.
    proc = fp("export", "-o", pg_uri, "-u", a, "--format", "csv", "--out", "-")
    assert proc.returncode == 0, describe(proc)
    sample_rows = [row for row in proc.stdout.splitlines() if row.split(",")[1:2] == ["sample"]]
    assert len(sample_rows) == sum(sample_counts(postgres, db, a).values())

    html = tmp_path / "plot.html"
    proc = fp("plot", "-o", pg_uri, "-u", a, "--no-menu", "--out", html)
    assert proc.returncode == 0 and html.stat().st_size > 10_000, describe(proc)

    plan = tmp_path / "plan.yaml"
    plan.write_text(textwrap.dedent(f"""\
        experiment: pg
        workloads:
          - name: pair
            runs:
              - command: {wl("burn")} 1 0.1
                copies: 2
        """))
    proc = fp("experiment", "-o", pg_uri, plan)
    assert proc.returncode == 0, describe(proc)
    assert postgres.sql("SELECT count(*) FROM runs WHERE experiment = 'pg' AND status = 'ok'",
                        db) == [["2"]]
    assert proc.stderr.strip().splitlines()[-1].endswith("; stored in " + pg_uri), describe(proc)

    served = subprocess.Popen([FOOTPRINT, "serve", "-o", pg_uri, "--port", "0"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=clean_env())
    try:
        url = re.search(r"(http://\S+)", served.stdout.readline()).group(1).rstrip("/")
        with urllib.request.urlopen(url + "/api/runs", timeout=60) as res:
            listed = json.load(res)
        assert len(listed["runs"]) == 4
    finally:
        served.terminate()
        served.communicate(timeout=30)

    # import: an UMLAUT database through both stores gives the same run, once however often.
    umlaut = tmp_path / "umlaut.db"
    make_umlaut_db(str(umlaut))
    for _ in range(2):
        proc = fp("import", "-o", pg_uri, umlaut)
        assert proc.returncode == 0, describe(proc)
    lite = tmp_path / "imported.db"
    assert fp("import", "-o", lite, umlaut).returncode == 0
    assert show(pg_uri, UMLAUT_UUID) == show(lite, UMLAUT_UUID)
    assert len(fp_json("runs", "-o", pg_uri)) == 5


def fp_json(*args):
    proc = fp(*args, "--json")
    assert proc.returncode == 0, describe(proc)
    return json.loads(proc.stdout)


def test_server_restart_mid_run_loses_no_sample(postgres, pg_uri):
    """The server goes down for about a second while a 1 ms run writes: the writer keeps the
    batch, connects again, and every sample the sampler took is stored exactly once."""
    db = database_of(pg_uri)
    run = subprocess.Popen([FOOTPRINT, "run", "-o", pg_uri, "-n", "through-restart", "-i", "1ms",
                            "--", wl("burn"), "1", "6"], env=clean_env(),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    postgres.stop()
    time.sleep(1.0)
    postgres.start()
    assert run.poll() is None, "the run ended before the server was back: the test proves nothing"
    out, err = run.communicate(timeout=120)
    assert run.returncode == 0, f"{out}\n{err}"
    # The restart did hit the shipping from the run's local buffer, which said so, twice.
    assert "the run goes on, its data kept in" in err and "the server answers again" in err, err
    [record] = fp_json("runs", "-o", pg_uri)
    summary = show(pg_uri, record["id"])
    monitor = summary["meta"]["monitor"]
    assert monitor["samples_dropped"] == 0 and "incomplete" not in summary["meta"]
    assert summary["waiting"] == [] and os.listdir(os.environ["FOOTPRINT_BUFFER_DIR"]) == []
    counted = sum(sample_counts(postgres, db, record["id"]).values())
    assert counted == monitor["sampler"]["samples"] == monitor["writer"]["samples_written"]
    # Each time once per series: nothing was written twice (the server's bytes, 8 per time).
    [[times, bytes_]] = postgres.sql(
        "SELECT sum(c.n), sum(length(c.t_ns)) FROM sample_chunks c JOIN series s "
        f"ON s.id = c.series_id WHERE s.run_id = '{record['id']}'", db)
    assert int(times) == counted and int(bytes_) == 8 * counted


def chunk_totals(postgres, db, run_id):
    """(samples, bytes of their times) of a run on the server: 8 bytes per sample stored once."""
    [[times, bytes_]] = postgres.sql(
        "SELECT coalesce(sum(c.n), 0), coalesce(sum(length(c.t_ns)), 0) FROM sample_chunks c "
        f"JOIN series s ON s.id = c.series_id WHERE s.run_id = '{run_id}'", db)
    return int(times), int(bytes_)


def buffers(directory):
    return sorted(p for p in os.listdir(directory) if p.endswith(".db"))


def test_server_down_at_the_end_push_sends_everything_once(postgres, pg_uri, tmp_path):
    """The server goes down in the middle of a 1 ms run and is still down when it ends: the
    command is unharmed, the rest waits in the local buffer, `show` says so, `footprint push`
    sends it, and pushing the same buffer again adds nothing."""
    db = database_of(pg_uri)
    folder = tmp_path / "buffers"
    env = clean_env(FOOTPRINT_BUFFER_DIR=folder)
    run = subprocess.Popen([FOOTPRINT, "run", "-o", pg_uri, "-n", "down-at-end", "-i", "1ms",
                            "--", "sh", "-c", f"{wl('burn')} 1 2; exit 7"], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)
    postgres.stop()
    try:
        out, err = run.communicate(timeout=120)
        assert run.returncode == 7, f"{out}\n{err}"  # the command's own status, unharmed
        assert "the run goes on, its data kept in" in err and "footprint push" in err, err
        [name] = buffers(folder)
        kept = (folder / name).read_bytes()  # the buffer as it was, for a second push below
        listed = json.loads(fp("push", "--list", "--json", env=env).stdout)
        assert len(listed) == 1 and listed[0]["writer_ended"] and listed[0]["samples"] > 0
    finally:
        postgres.start()
    [record] = fp_json("runs", "-o", pg_uri)
    before = show(pg_uri, record["id"], env=env)
    assert before["run"]["status"] == "interrupted"  # its end waits in the buffer
    [waiting] = before["waiting"]
    assert waiting["here"] and waiting["samples"] == listed[0]["samples"], waiting
    text = fp("show", "-o", pg_uri, record["id"], env=env).stdout
    assert f"wait on this machine in {folder / name}: `footprint push` sends them" in text, text
    # The same buffer as if another node had written it to a folder shared with this one
    # (--buffer-dir): `show` still reads what waits there, and says where.
    postgres.sql("UPDATE buffer_writers SET host = 'fp-n2'", db)
    text = fp("show", "-o", pg_uri, record["id"], env=env).stdout
    assert f"{listed[0]['samples']} samples ({listed[0]['changes']} changes) of this run wait " \
        f"on fp-n2 in {folder / name}, a folder this machine shares: `footprint push --dir " \
        f"{folder}` sends them from here" in text, text

    proc = fp("push", env=env)
    assert proc.returncode == 0 and "sent" in proc.stdout, describe(proc)
    assert buffers(folder) == []
    after = show(pg_uri, record["id"], env=env)
    monitor = after["meta"]["monitor"]
    assert after["run"]["status"] == "failed" and after["run"]["exit_code"] == 7
    assert after["waiting"] == []
    counted, bytes_ = chunk_totals(postgres, db, record["id"])
    assert counted == monitor["sampler"]["samples"] == monitor["writer"]["samples_written"]
    assert bytes_ == 8 * counted

    (folder / name).write_bytes(kept)  # the same changes once more: a replay
    proc = fp("push", env=env)
    assert proc.returncode == 0 and "sent 0 changes" in proc.stdout, describe(proc)
    assert "already there" in proc.stdout and buffers(folder) == []
    assert chunk_totals(postgres, db, record["id"]) == (counted, bytes_)
    assert show(pg_uri, record["id"], env=env)["run"]["status"] == "failed"


def test_crash_while_the_server_is_down_then_the_next_run_sends_it(postgres, pg_uri, tmp_path):
    """footprint is killed (SIGKILL) while the server is down: what it had written to its buffer
    arrives with the next run into that server (as with `footprint push`), exactly once, and the
    run is marked interrupted."""
    db = database_of(pg_uri)
    folder = tmp_path / "buffers"
    env = clean_env(FOOTPRINT_BUFFER_DIR=folder)
    run = subprocess.Popen([FOOTPRINT, "run", "-o", pg_uri, "-n", "crashed", "-i", "5ms", "--",
                            "sleep", "60"], env=env, start_new_session=True,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(2.5)  # a shipment at least every second: some samples have arrived
    postgres.stop()
    try:
        time.sleep(1.5)  # samples go to the buffer only
        os.killpg(run.pid, 9)
        run.communicate(timeout=30)
        [listed] = json.loads(fp("push", "--list", "--json", env=env).stdout)
        assert not listed["writer_ended"] and listed["samples"] > 0, listed
    finally:
        postgres.start()
    [record] = [r for r in fp_json("runs", "-o", pg_uri) if r["name"] == "crashed"]
    arrived, _ = chunk_totals(postgres, db, record["id"])
    assert arrived > 0  # what was sent before the server went down
    # The next run into the same server sends what the dead one left, as a push would.
    proc = fp("run", "-o", pg_uri, "-q", "-n", "next", "--", "true", env=env)
    assert proc.returncode == 0 and buffers(folder) == [], describe(proc)
    assert f"sent what an earlier footprint left in {folder / listed['path'].split('/')[-1]}" \
        in proc.stderr, proc.stderr
    counted, bytes_ = chunk_totals(postgres, db, record["id"])
    assert counted == arrived + listed["samples"] and bytes_ == 8 * counted
    after = show(pg_uri, record["id"], env=env)
    assert after["run"]["status"] == "interrupted" and after["waiting"] == [], after["run"]
    [[status]] = postgres.sql(f"SELECT status FROM runs WHERE id = '{record['id']}'", db)
    assert status == "interrupted"  # marked on the server by the push, not only in show


def test_a_server_that_stops_answering_holds_nothing_up(postgres, pg_uri, tmp_path):
    """The server stops answering mid-run (its processes stopped, as a hung server or a cut
    network: no error, no closed connection): the samples go on into the local buffer, more of
    them than the sampler's queue holds, none dropped; the run ends at most 10 s after its
    command while the server still does not answer; `footprint push` sends the rest."""
    db = database_of(pg_uri)
    folder = tmp_path / "buffers"
    env = clean_env(FOOTPRINT_BUFFER_DIR=folder)
    # At least 6 samples a pass at 1 kHz (the timer sampler: a pass each ms, not 100 a second
    # beside the cpu ring): cpu and the monitor's two, and the three that an
    # interval of their own keeps from being spaced out (memory and memory.page_cache from
    # memory.stat, sys.memory); the other costly reads are spaced out by their cost, which a
    # sanitizer build raises (4 samples a pass left 52,642 in 20 s there). 20 s gives more than
    # the queue holds.
    started = time.monotonic()
    run = subprocess.Popen([FOOTPRINT, "run", "-o", pg_uri, "-n", "hung", "-i", "1ms",
                            "--cpu-sampler", "timer",  # every metric's deadline at 1 kHz
                            "--interval", "memory=1ms", "--interval", "sys.memory=1ms", "--",
                            "sleep", "20"], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)
    postgres.pause()
    try:
        out, err = run.communicate(timeout=120)
        assert run.returncode == 0, f"{out}\n{err}"
        # After the command: the connection attempt under way when it ended (connect_timeout,
        # 10 s), then 10 s for the close, once (5 s more for storing the end under load).
        assert time.monotonic() - started - 20 < 25, time.monotonic() - started
        assert "does not answer" in err and "footprint push" in err, err
        [listed] = json.loads(fp("push", "--list", "--json", env=env).stdout)
    finally:
        postgres.resume()
    proc = fp("push", "-o", pg_uri, env=env)
    assert proc.returncode == 0 and buffers(folder) == [], describe(proc)
    [record] = fp_json("runs", "-o", pg_uri)
    monitor = show(pg_uri, record["id"], env=env)["meta"]["monitor"]
    # More samples than the queue between the sampler and the writer holds (65,536) were taken
    # while the server was stopped: with the writer waiting on the server, some would be lost.
    assert listed["samples"] > 65_536 and monitor["samples_dropped"] == 0, (listed, monitor)
    counted, bytes_ = chunk_totals(postgres, db, record["id"])
    assert counted == monitor["sampler"]["samples"] == monitor["writer"]["samples_written"]
    assert bytes_ == 8 * counted


def test_push_bad_input_is_one_line(postgres, pg_uri, tmp_path):
    folder = tmp_path / "buffers"
    folder.mkdir()
    (folder / "junk.db").write_text("not a buffer")
    env = clean_env(FOOTPRINT_BUFFER_DIR=folder)
    proc = fp("push", env=env)
    line = single_error_line(proc)
    assert proc.returncode == 3 and "is not a local buffer of footprint" in line, describe(proc)
    assert fp("push", "--json", env=env).returncode == 2
    proc = fp("push", "-o", tmp_path / "fp.db", env=env)
    assert proc.returncode == 2 and "takes a postgresql:// URI" in single_error_line(proc)
    proc = fp("push", "--list", "--dir", tmp_path / "none", env=env)
    assert proc.returncode == 0 and "nothing waits in" in proc.stderr, describe(proc)


def test_credentials_are_never_printed_or_recorded(postgres, pg_uri, tmp_path):
    db = database_of(pg_uri)
    postgres.sql("CREATE ROLE secret LOGIN PASSWORD 'hunter2-pw'", db)
    postgres.sql(f"GRANT ALL ON DATABASE {db} TO secret; ALTER DATABASE {db} OWNER TO secret", db)
    uri = postgres.uri(db, "secret", "hunter2-pw")
    proc = fp("run", "-o", uri, "-n", "with-password", "--", "sh", "-c", 'echo "$FOOTPRINT_DB"')
    assert proc.returncode == 0, describe(proc)
    # The measured command gets the URI it needs (the Python API inside it connects with it)...
    assert uri in proc.stdout
    # ...and footprint says where the run went without the password.
    assert "hunter2" not in proc.stderr and "secret@" in proc.stderr, proc.stderr
    [row] = postgres.sql("SELECT meta || command || cwd FROM runs", db)
    assert "hunter2" not in row[0]
    for args in (("show", "--json"), ("runs",), ("export", "--format", "json", "--out", "-")):
        proc = fp(*args[:1], "-o", uri, *args[1:])
        assert proc.returncode == 0 and "hunter2" not in proc.stdout + proc.stderr, describe(proc)
    html = tmp_path / "p.html"
    assert fp("plot", "-o", uri, "--no-menu", "--out", html).returncode == 0
    assert "hunter2" not in html.read_text()
    # A wrong password: one line, exit 3 (database), and not the password tried either.
    proc = fp("runs", "-o", postgres.uri(db, "secret", "wrong-pw-77"))
    line = single_error_line(proc)
    assert proc.returncode == 3 and "password authentication failed" in line, describe(proc)
    assert "wrong-pw-77" not in line and "secret@" in line


def test_unreachable_server_and_newer_schema_keep_the_run_in_its_buffer(postgres, pg_uri,
                                                                        tmp_path):
    """A run starts whatever the server's state: one it cannot reach, or one written by a newer
    footprint, is said in one line, and the run's data waits in its buffer. Readers, who have
    nothing to keep, get one line and exit 3."""
    folder = tmp_path / "buffers"
    env = clean_env(FOOTPRINT_BUFFER_DIR=folder)
    nowhere = f"postgresql://postgres@/nowhere?host={tmp_path}"
    proc = fp("run", "-o", nowhere, "--", "sh", "-c", "exit 3", env=env)
    assert proc.returncode == 3, describe(proc)  # the command ran: its own status
    assert "footprint: cannot connect to" in proc.stderr and "check that the server runs" \
        in proc.stderr and "the run goes on, its data kept in" in proc.stderr, describe(proc)
    [name] = buffers(folder)
    # Not "stored": where it waits.
    assert f"waiting in buffer at {folder / name} until postgresql://" in proc.stderr
    assert " stored in " not in proc.stderr, proc.stderr
    line = single_error_line(fp("runs", "-o", nowhere))
    assert line.startswith("footprint: cannot connect to"), line
    # An experiment's last line likewise: its runs wait, they are not stored.
    plan = tmp_path / "plan.yaml"
    plan.write_text("experiment: away\nworkloads:\n  - name: one\n    runs:\n"
                    "      - command: true\n")
    proc = fp("experiment", "-o", nowhere, plan, env=env)
    last = proc.stderr.strip().splitlines()[-1]
    assert proc.returncode == 0 and "1 run(s) ran, 0 not ok; waiting in the runs' buffers until " \
        "postgresql://" in last and "footprint push" in last, describe(proc)
    for other in set(buffers(folder)) - {name}:
        (folder / other).unlink()  # the count below is of the runs after this

    db = database_of(pg_uri)
    run_ok(pg_uri, ["true"], env=env)
    postgres.sql("UPDATE footprint_schema SET version = 99", db)
    before = postgres.sql("SELECT count(*) FROM runs", db)
    proc = fp("run", "-o", pg_uri, "--", "true", env=env)
    assert proc.returncode == 0 and "written by a newer footprint (schema v99" in proc.stderr, \
        describe(proc)
    assert postgres.sql("SELECT count(*) FROM runs", db) == before  # nothing written
    assert len(buffers(folder)) == 2
    proc = fp("runs", "-o", pg_uri)
    assert proc.returncode == 3 and "written by a newer footprint" in single_error_line(proc)


def test_missing_libpq_is_one_line(pg_uri):
    proc = fp("runs", "-o", pg_uri, env=clean_env(FOOTPRINT_PQ_LIBRARY="/nonexistent/libpq.so.5"))
    line = single_error_line(proc)
    assert proc.returncode != 0 and "libpq" in line and "apt-get install libpq5" in line, line


def test_doctor_says_whether_postgresql_databases_work():
    checks = {c["check"]: c for c in fp_json("doctor")}
    pg = checks["postgresql"]
    installed = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "libpq5"],
                               capture_output=True, text=True).stdout  # e.g. 15.18-0+deb12u1
    assert pg["ok"] and f"libpq {installed.split('-')[0]} loads" in pg["detail"], pg
    proc = fp("doctor", "--json", env=clean_env(FOOTPRINT_PQ_LIBRARY="/nonexistent/libpq.so.5"))
    pg = {c["check"]: c for c in json.loads(proc.stdout)}["postgresql"]
    assert not pg["ok"] and "apt-get install libpq5" in pg["detail"], pg


def test_postgresql_gives_sqlites_answers(pg_uri, tmp_path):
    """A time written twice in one write, overlapping writes, a page after a time, a series'
    end: the same answers from both stores, and the right ones."""
    tool = os.environ.get("FP_STORE_SEMANTICS", os.path.join(os.path.dirname(FOOTPRINT),
                                                             "tests", "fp_store_semantics"))
    answers = []
    for location in (str(tmp_path / "fp.db"), pg_uri):
        proc = subprocess.run([tool, location], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        answers.append(proc.stdout)
    assert answers[0] == answers[1]
    assert answers[1].splitlines() == [
        "all: 0:9.00 10:1.00 20:3.00 30:5.00", "after 5, 2 of them: 10:1.00 20:3.00", "end: 30"]
