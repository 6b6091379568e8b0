"""Slurm's accounting database for a test cluster (slurm_server.Slurm(accounting=True)): a
throwaway MariaDB (an empty data folder in the cluster's, on 127.0.0.1 and a free port only)
and a slurmdbd storing into it, authenticated by the cluster's own munged. Needs root and
Debian's mariadb-server and slurmdbd.

MariaDB runs with --skip-grant-tables, so that it needs no system tables: mariadb-install-db,
which writes them, took 0.5 s on an idle machine and 5 s on a busy one, longer than all else.
Whoever reaches the port is let in; it is a loopback port of a database thrown away with the
test.

slurmdbd takes no config file option: it reads slurmdbd.conf beside $SLURM_CONF's slurm.conf,
owned by SlurmUser with mode 600."""
import os
import shutil
import socket
import subprocess
import time


def missing_programs():
    """The programs an accounting database needs that are not installed."""
    return [p for p in ("mariadbd", "slurmdbd", "sacctmgr")
            if shutil.which(p) is None]


def wait_until(ready, timeout_s, what, logs):
    deadline = time.monotonic() + timeout_s
    while not ready():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout_s} s" + logs())
        time.sleep(0.05)


def accepts(port):
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def running(pid):
    """Whether PID runs (a zombie, ended but not yet reaped by whoever adopted it, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def stop_pid_file(path, timeout_s=30):
    """SIGTERM to the daemon whose pid PATH holds; waits until it ended."""
    try:
        with open(path) as f:
            pid = int(f.read().strip())
        os.kill(pid, 15)
    except (OSError, ValueError):
        return
    wait_until(lambda: not running(pid), timeout_s, f"the end of {path}'s process", lambda: "")


class SlurmDbd:
    """MariaDB and slurmdbd in ROOT (the cluster's folder), on the ports given; start() once
    slurm.conf (with slurm_conf_lines()) is written and munged is up."""

    def __init__(self, root, db_port, dbd_port):
        self.root, self.db_port, self.dbd_port = root, db_port, dbd_port
        self.mariadbd = None

    def start(self, env, munge_socket):
        root, self.env = self.root, env
        data = os.path.join(root, "mariadb")
        os.mkdir(data)
        self.mariadbd = subprocess.Popen(
            ["mariadbd", "--no-defaults", f"--datadir={data}", "--user=root", "--skip-grant-tables",
             "--bind-address=127.0.0.1", f"--port={self.db_port}", f"--socket={root}/mariadb.sock",
             f"--pid-file={root}/mariadb.pid", f"--log-error={root}/mariadb.log",
             "--skip-name-resolve", "--innodb-buffer-pool-size=32M"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)
        dbd_conf = os.path.join(os.path.dirname(env["SLURM_CONF"]), "slurmdbd.conf")
        with open(dbd_conf, "w") as f:
            f.write(f"""AuthType=auth/munge
AuthInfo=socket={munge_socket}
DbdHost=localhost
DbdPort={self.dbd_port}
SlurmUser=root
PidFile={root}/slurmdbd.pid
LogFile={root}/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort={self.db_port}
StorageUser=root
StorageLoc=slurm_acct
""")
        os.chmod(dbd_conf, 0o600)
        wait_until(lambda: accepts(self.db_port), 30, "mariadbd", self.logs)
        self._run(["slurmdbd"])
        # The cluster must be known to slurmdbd before slurmctld registers with it.
        wait_until(lambda: self._run(["sacctmgr", "-i", "add", "cluster", "fp"], check=False)
                   .returncode == 0, 30, "slurmdbd", self.logs)

    def slurm_conf_lines(self, munge_socket):
        # AccountingStoragePass: the munge socket with which clients (sacct, sacctmgr) and
        # slurmctld sign what they send slurmdbd.
        return (f"AccountingStorageType=accounting_storage/slurmdbd\n"
                f"AccountingStorageHost=localhost\nAccountingStoragePort={self.dbd_port}\n"
                f"AccountingStoragePass={munge_socket}")

    def _run(self, cmd, check=True):
        proc = subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=60)
        assert not check or proc.returncode == 0, \
            f"{cmd[0]}: {proc.stdout}{proc.stderr}{self.logs()}"
        return proc

    def logs(self):
        out = ""
        for name in ("mariadb.log", "slurmdbd.log"):
            path = os.path.join(self.root, name)
            if os.path.exists(path):
                with open(path) as f:
                    out += f"\n--- {name}\n" + f.read()[-3000:]
        return out

    def close(self):
        stop_pid_file(os.path.join(self.root, "slurmdbd.pid"))
        if self.mariadbd:  # killed: its data goes with the folder (a clean stop took 2-3 s)
            self.mariadbd.kill()
            self.mariadbd.wait(timeout=30)
