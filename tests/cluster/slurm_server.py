"""A Slurm cluster of its own for the cluster tests: munged on a private socket and key,
slurmctld and slurmd on free ports, state and logs in a temporary folder, no accounting
database (sstat works without one) unless accounting=True: then a MariaDB and a slurmdbd of its
own too (slurmdbd_server.py), and sacct answers. Needs root (slurmd runs the tasks as their
user) and Debian's slurm-wlm and munge (and mariadb-server and slurmdbd for accounting).

One node by default, this host under its own name. With nodes=N, N nodes fp-n1..fp-nN, each
a slurmd of its own on this host (`slurmd -N NAME`, on a port of its own: Debian's Slurm
allows several slurmd per host), which is how the multi-node tests run without a second
machine."""
import os
import shutil
import socket
import subprocess
import tempfile
import time

from slurmdbd_server import SlurmDbd, stop_pid_file


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Slurm:
    def __init__(self, cpus=2, nodes=1, accounting=False):
        self.root = tempfile.mkdtemp(prefix="fp-slurm-")
        os.chmod(self.root, 0o755)
        host = socket.gethostname()
        self.nodes = [host] if nodes == 1 else [f"fp-n{i + 1}" for i in range(nodes)]
        self.munge_socket = os.path.join(self.root, "munge.socket")
        key = os.path.join(self.root, "munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(key, 0o400)
        self.conf = os.path.join(self.root, "slurm.conf")
        self.dbd = SlurmDbd(self.root, free_port(), free_port()) if accounting else None
        accounting = (self.dbd.slurm_conf_lines(self.munge_socket) if self.dbd
                      else "AccountingStorageType=accounting_storage/none")
        with open(self.conf, "w") as f:
            f.write(f"""ClusterName=fp
SlurmctldHost={host}
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={self.munge_socket}
StateSaveLocation={self.root}/state
SlurmdSpoolDir={self.root}/spool-%n
SlurmctldPidFile={self.root}/slurmctld.pid
SlurmdPidFile={self.root}/slurmd-%n.pid
SlurmctldLogFile={self.root}/slurmctld.log
SlurmdLogFile={self.root}/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=1
{accounting}
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
Epilog={self.root}/epilog.sh
{self._node_lines(host, cpus)}
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
""")
        os.makedirs(os.path.join(self.root, "state"))
        self.epilog = os.path.join(self.root, "epilog.user")
        self.epilog_log = os.path.join(self.root, "epilog.log")
        epilog = os.path.join(self.root, "epilog.sh")
        with open(epilog, "w") as f:
            # Runs as root on each node at each job's end. A test puts its own lines in
            # epilog.user (see self.epilog); a failing epilog would drain the node.
            f.write(f"#!/bin/sh\n[ -x {self.epilog} ] && {self.epilog} >> {self.epilog_log} 2>&1\n"
                    "exit 0\n")
        os.chmod(epilog, 0o755)
        self.env = dict(os.environ, SLURM_CONF=self.conf)
        try:
            self._start_daemons(key)
        except BaseException:
            self.close()  # what did start
            raise

    def _start_daemons(self, key):
        self._daemon(["munged", "--force", f"--socket={self.munge_socket}", f"--key-file={key}",
                      f"--pid-file={self.root}/munged.pid", f"--log-file={self.root}/munged.log",
                      f"--seed-file={self.root}/munged.seed"])
        if self.dbd:
            self.dbd.start(self.env, self.munge_socket)
        self._daemon(["slurmctld", "-f", self.conf])
        for node in self.nodes:
            self._daemon(["slurmd", "-f", self.conf] +
                         (["-N", node] if len(self.nodes) > 1 else []))
        self._wait_idle()

    def _node_lines(self, host, cpus):
        if len(self.nodes) == 1:
            return f"NodeName={host} CPUs={cpus} State=UNKNOWN"
        return "\n".join(f"NodeName={node} NodeHostname={host} NodeAddr=127.0.0.1 "
                         f"Port={free_port()} CPUs={cpus} State=UNKNOWN" for node in self.nodes)

    def _daemon(self, cmd):
        proc = subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, f"{cmd[0]}: {proc.stdout}{proc.stderr}{self.logs()}"

    def logs(self):
        out = ""
        names = ["slurmctld.log", "munged.log"] + [f"slurmd-{n}.log" for n in self.nodes]
        for name in names:
            path = os.path.join(self.root, name)
            if os.path.exists(path):
                with open(path) as f:
                    out += f"\n--- {name}\n" + f.read()[-3000:]
        return out + (self.dbd.logs() if self.dbd else "")

    def _wait_idle(self, timeout_s=60):
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            proc = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], env=self.env,
                                  capture_output=True, text=True)
            if proc.stdout.split() == ["idle"] * len(self.nodes):
                return
            time.sleep(0.2)
        raise AssertionError("Slurm did not become idle" + self.logs())

    def run(self, *cmd, **kw):
        """Runs a Slurm command (srun, sbatch, sstat, ...) against this cluster."""
        env = dict(self.env, **kw.pop("env", {}))
        return subprocess.run(list(map(str, cmd)), env=env, capture_output=True, text=True,
                              timeout=kw.pop("timeout", 120), **kw)

    def close(self):
        pid_files = [f"slurmd-{n}.pid" for n in self.nodes] + ["slurmctld.pid"]
        for pid_file in pid_files:
            stop_pid_file(os.path.join(self.root, pid_file))
        if self.dbd:
            self.dbd.close()  # after slurmctld, which sends it what it still holds
        stop_pid_file(os.path.join(self.root, "munged.pid"))
        shutil.rmtree(self.root, ignore_errors=True)
