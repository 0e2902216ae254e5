# SPDX-License-Identifier: Apache-2.0
"""A one-node Slurm cluster of this machine for tests: munged, slurmctld and slurmd from
Debian's slurm-wlm and munge, configured in a temporary folder of their own (slurm.conf,
munge key and socket, state, spool and log folders, free ports, this host's short name as
the node, its CPU count) and started in the foreground as children of the test.

Cluster() returns once the node is idle, or raises Unavailable with the daemon's own words
when one cannot run here (pytest skips with them). close() stops every daemon it started,
whatever happened before; each daemon also dies with the test process (PR_SET_PDEATHSIG)
and after a fixed lifetime (coreutils timeout); slurm_reaper.py then ends what they leave
(step daemons, srun, tasks), so nothing outlives a killed run.
"""
import ctypes
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

LIFETIME_S = 300       # no daemon lives longer, even if close() is never reached
START_TIMEOUT_S = 30   # munge socket up, node idle
PR_SET_PDEATHSIG = 1


class Unavailable(Exception):
    """A daemon cannot run on this machine; the message quotes its own error."""


def _die_with_parent():
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _free_port():
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def missing_programs():
    return [p for p in ("munged", "slurmctld", "slurmd", "srun", "sbatch", "sinfo")
            if shutil.which(p) is None and not os.path.exists(f"/usr/sbin/{p}")]


def _program(name):
    return shutil.which(name) or f"/usr/sbin/{name}"


class Cluster:
    def __init__(self):
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix="dtslurm"))  # short: socket path
        self.node = socket.gethostname().split(".")[0]
        self.daemons = []  # (name, Popen, log path)
        self.conf = self.dir / "slurm.conf"
        # Started first, so that it is there whatever happens next.
        self.reaper = subprocess.Popen(
            [sys.executable, str(pathlib.Path(__file__).with_name("slurm_reaper.py")),
             str(self.conf), str(self.dir)], stdin=subprocess.PIPE,
            start_new_session=True)  # out of reach of a signal to the test's group
        try:
            self._configure()
            self._start()
        except BaseException:
            self.close()
            raise

    # --- set-up -------------------------------------------------------------------------
    def _configure(self):
        d = self.dir
        for sub in ("state", "spool", "log", "munge"):
            (d / sub).mkdir(mode=0o700)
        key = d / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        self.munge_socket = d / "munge" / "munge.sock"
        user = subprocess.run(["id", "-un"], capture_output=True, text=True,
                              timeout=10).stdout.strip()
        self.conf.write_text(f"""\
ClusterName=dttest
SlurmctldHost={self.node}
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
SlurmUser={user}
SlurmdUser={user}
AuthType=auth/munge
AuthInfo=socket={self.munge_socket}
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/log/slurmctld.log
SlurmdLogFile={d}/log/slurmd.log
# No cgroups: they are often unavailable in containers.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
# srun without --mpi gives every task a PMI2 server, as many sites configure.
MpiDefault=pmi2
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
SlurmdParameters=config_overrides
KillWait=2
MailProg=/bin/true
NodeName={self.node} CPUs={os.cpu_count() or 1} State=UNKNOWN
PartitionName=test Nodes={self.node} Default=YES MaxTime=5 State=UP OverSubscribe=FORCE:4
""")

    def _spawn(self, name, args):
        log = self.dir / "log" / f"{name}.out"
        out = open(log, "wb")
        try:
            p = subprocess.Popen(["timeout", "-k", "5", str(LIFETIME_S), _program(name), *args],
                                 stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                 env=self.env(), preexec_fn=_die_with_parent)
        finally:
            out.close()
        self.daemons.append((name, p, log))
        return p

    def _why(self, name):
        """The daemon's own last words, from its output and its log file."""
        text = ""
        for path in (self.dir / "log" / f"{name}.out", self.dir / "log" / f"{name}.log"):
            if path.exists():
                text += path.read_text(errors="replace")
        lines = [l for l in text.splitlines() if l.strip()]
        errors = [l for l in lines if "error" in l.lower() or "fatal" in l.lower()]
        return " | ".join((errors or lines)[-3:]) or "no output"

    def _check_running(self):
        for name, p, _ in self.daemons:
            if p.poll() is not None:
                raise Unavailable(f"{name} exited with status {p.returncode}: "
                                  f"{self._why(name)}")

    def _wait(self, what, cond):
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            self._check_running()
            if cond():
                return
            time.sleep(0.2)
        self._check_running()
        raise Unavailable(f"{what} within {START_TIMEOUT_S} s; slurmctld: "
                          f"{self._why('slurmctld')}; slurmd: {self._why('slurmd')}")

    def _start(self):
        d = self.dir
        self._spawn("munged", ["--foreground", "--force", f"--socket={self.munge_socket}",
                               f"--key-file={d}/munge/munge.key",
                               f"--pid-file={d}/munge/munged.pid",
                               f"--seed-file={d}/munge/munge.seed",
                               f"--log-file={d}/log/munged.log"])
        self._wait("munged did not open its socket", self.munge_socket.exists)
        self._spawn("slurmctld", ["-D", "-f", str(self.conf)])
        self._spawn("slurmd", ["-D", "-f", str(self.conf), "-N", self.node])
        self._wait("the node did not become idle", lambda: self.node_state() == "idle")

    # --- use ----------------------------------------------------------------------------
    def env(self, extra=None):
        """The environment of a client command: no Slurm, PMI or DISTTRAIN variable but
        this cluster's SLURM_CONF, plus extra."""
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("DISTTRAIN_", "SLURM_", "PMI_", "PMIX_", "OMPI_",
                                    "TORCHELASTIC_"))}
        env["SLURM_CONF"] = str(self.conf)
        env.update(extra or {})
        return env

    def run(self, cmd, extra_env=None, timeout=60, **kwargs):
        return subprocess.run([str(c) for c in cmd], env=self.env(extra_env), timeout=timeout,
                              capture_output=True, text=True, **kwargs)

    def node_state(self):
        try:
            r = self.run(["sinfo", "-h", "-N", "-n", self.node, "-o", "%T"], timeout=10)
        except subprocess.TimeoutExpired:
            return ""
        return r.stdout.strip().rstrip("*~#")

    # --- tear-down ----------------------------------------------------------------------
    def close(self):
        if any(p.poll() is None for name, p, _ in self.daemons if name == "slurmctld"):
            try:  # jobs first, so that their step daemons end their tasks
                self.run(["scancel", "--full", "--partition=test"], timeout=10)
                deadline = time.monotonic() + 10
                while time.monotonic() < deadline and self.run(
                        ["squeue", "-h", "-o", "%i"], timeout=10).stdout.strip():
                    time.sleep(0.2)
            except (subprocess.TimeoutExpired, OSError):
                pass
        for _, p, _ in reversed(self.daemons):
            if p.poll() is None:
                p.terminate()
        for _, p, _ in reversed(self.daemons):
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=10)
        self.daemons = []
        # The reaper ends anything left (a step daemon of a job that timed out) and
        # removes the folder.
        self.reaper.stdin.close()
        try:
            self.reaper.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.reaper.kill()
            self.reaper.wait(timeout=10)
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
