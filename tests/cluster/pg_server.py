"""A throwaway PostgreSQL server for the cluster tests and benchmarks (bench/cluster_bench.py):
initdb into a temporary folder, a socket there and no TCP port, run as the postgres user when
started by root (PostgreSQL refuses to run as root)."""
import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile


def server_bin():
    """The folder of the newest PostgreSQL server programs (Debian: /usr/lib/postgresql/N/bin)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: int(p.split("/")[4]))
    return os.path.dirname(found[-1]) if found else None


class Postgres:
    """A PostgreSQL cluster of its own in a temporary folder, listening only on a socket there.

    PostgreSQL refuses to run as root: as root, its programs run as the postgres user."""

    def __init__(self):
        self.bin = server_bin()
        self.root = tempfile.mkdtemp(prefix="fp-pg-")
        os.chmod(self.root, 0o755)
        self.as_user = []
        if os.geteuid() == 0:
            os.chown(self.root, pwd.getpwnam("postgres").pw_uid, -1)
            self.as_user = ["runuser", "-u", "postgres", "--"]
        self.data = os.path.join(self.root, "data")
        self._server("initdb", "-D", self.data, "-A", "trust", "-U", "postgres", "--no-sync",
                     "-E", "UTF8")
        with open(os.path.join(self.data, "pg_hba.conf"), "w") as hba:
            # The role 'secret' must give its password; everyone else is trusted on the socket.
            hba.write("local all secret scram-sha-256\nlocal all all trust\n")
        self.start()

    def _server(self, program, *args):
        proc = subprocess.run([*self.as_user, os.path.join(self.bin, program), *args],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, f"{program}: {proc.stdout}{proc.stderr}"

    def start(self, **settings):
        """Starts the server, with SETTINGS (name=value) for this start only."""
        extra = "".join(f" -c {name}={value}" for name, value in settings.items())
        self._server("pg_ctl", "-D", self.data, "-w", "-l", self.log, "-o",
                     f"-k {self.root} -c listen_addresses='' -c fsync=off{extra}", "start")

    @property
    def log(self):
        return os.path.join(self.root, "log")

    def stop(self):
        self._server("pg_ctl", "-D", self.data, "-w", "-m", "fast", "stop")

    def _processes(self):
        """The server's processes: the postmaster (first line of postmaster.pid) and its
        children."""
        with open(os.path.join(self.data, "postmaster.pid")) as f:
            main = int(f.readline())
        children = subprocess.run(["ps", "-o", "pid=", "--ppid", str(main)],
                                  capture_output=True, text=True).stdout.split()
        return [main, *map(int, children)]

    def pause(self):
        """Stops the server's processes where they are: it no longer answers, as a hung server
        or a cut network, without closing a connection."""
        self._signal(signal.SIGSTOP)

    def resume(self):
        self._signal(signal.SIGCONT)

    def _signal(self, sig):
        for pid in self._processes():
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass  # a backend that ended since it was listed (a client that went)

    def uri(self, database="postgres", user="postgres", password=None):
        auth = user + (":" + password if password else "")
        return f"postgresql://{auth}@/{database}?host={self.root}"

    def sql(self, query, database="postgres"):
        """Rows of QUERY as lists of strings (psql's unaligned output)."""
        proc = subprocess.run(["psql", "-X", "-At", "-F", "\t", "-v", "ON_ERROR_STOP=1",
                               "-h", self.root, "-U", "postgres", "-d", database, "-c", query],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        return [line.split("\t") for line in proc.stdout.splitlines()]

    def create_database(self, name):
        self.sql(f"CREATE DATABASE {name}")
        return self.uri(name)

    def close(self):
        try:
            self.stop()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
