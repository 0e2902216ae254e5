# SPDX-License-Identifier: Apache-2.0
"""One fault trial: 4 ranks of dt_engine_worker in a loop of allreduces, one of them
SIGKILLed or SIGSTOPped by itself at a chosen iteration; then what the survivors said,
how long they took, whether any died by a signal, and which processes of the job were
still there once the launcher returned. test_fault_matrix.py asserts bounds on it,
tests/bench/fault_matrix.py prints figures.

Times come from the ranks themselves: the victim prints the CLOCK_MONOTONIC time of its
signal and each survivor that of its error, so neither the launcher's teardown nor the
load of the machine between the events and our reading of them adds to the figures.
"""
import os
import pathlib
import re
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass, field

RANKS = 4
TIMEOUT_S = 3  # DISTTRAIN_TIMEOUT: the bound on noticing a stopped (hung) rank
# Survivors ignore SIGTERM and must end on their own: one still running GRACE_S after
# the launcher began stopping the job dies by its SIGKILL and shows as silent.
GRACE_S = 6
# disttrainrun --timeout: a job past every bound (a stop's 8 s, then mpirun's 2 x 1 s of
# teardown) is stopped by the launcher, and fails; the subprocess limit after it only
# catches a launcher that itself hangs.
JOB_TIMEOUT_S = 15
HARD_LIMIT_S = JOB_TIMEOUT_S + GRACE_S + 15
BOUND_S = {"kill": 5.0, "stop": TIMEOUT_S + 5.0}

TRANSPORTS = ["tcp", "ucx", "mpi"]
MODES = {"ordered": "1", "negotiated": "0"}
SHM = {"shm1": "1", "shm0": "0"}
SIGNALS = {"kill": "fault", "stop": "stop"}  # -> the worker's subcommand
MARKER = "DT_FAULT_MATRIX_JOB"

VICTIM_LINE = re.compile(r"victim rank (\d+) raises signal \d+ at clock ([0-9.]+)")
ERROR_LINE = re.compile(r"failed after \d+ iterations \([0-9.]+ s, rank (\d+), "
                        r"clock ([0-9.]+)\): (DT_\w+): (.*)")
CRASH_LINE = re.compile(r"rank (\d+) crashed by signal (\d+)")
# disttrainrun's summary (local ranks), and mpirun's note on a rank it saw die.
LAUNCHER_SIGNAL = re.compile(r"^disttrainrun: rank (\d+) \(.*\) was (?:also )?killed by "
                             r"signal (\d+)", re.M)
LAUNCHER_STOPPED = re.compile(r"^disttrainrun: ranks? ([0-9, -]+) (?:was|were) stopped by "
                              r"disttrainrun with signal (\d+)", re.M)
MPIRUN_SIGNAL = re.compile(r"process rank (\d+) with PID \d+ on node \S+ exited on signal "
                           r"(\d+)")


def plugin_dir(build, transport):
    return pathlib.Path(build) / "plugins" / "transport" / transport


def plugin_built(build, transport):
    return (plugin_dir(build, transport) / f"libdt-transport-{transport}.so").exists()


def rank_set(text):
    """'0-2, 5' -> {0, 1, 2, 5}"""
    ranks = set()
    for part in text.split(","):
        lo, _, hi = part.strip().partition("-")
        ranks.update(range(int(lo), int(hi or lo) + 1))
    return ranks


def job_processes(marker):
    """Pids of live (not zombie) processes whose environment holds marker."""
    found = []
    needle = marker.encode() + b"\0"
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if needle not in f.read() + b"\0":
                    continue
            with open(f"/proc/{entry}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state not in ("Z", "X"):
            found.append(int(entry))
    return found


def describe(pid):
    try:
        cmd = pathlib.Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
        return f"{pid} {cmd.decode(errors='replace').strip()}"
    except OSError:
        return str(pid)


@dataclass
class Trial:
    transport: str
    mode: str
    shm: str
    signal: str
    victim: int
    at: int
    returncode: int = None  # None: the launcher had to be killed
    victim_clock: float = None
    ended_clock: float = None  # when the launcher returned (CLOCK_MONOTONIC, as the ranks')
    errors: dict = field(default_factory=dict)  # rank -> (status, message)
    delays: dict = field(default_factory=dict)  # rank -> s from the signal to its error
    crashed: dict = field(default_factory=dict)  # survivor -> how it died
    leftovers: list = field(default_factory=list)
    output: str = ""

    def mpirun_kill_problems(self):
        """mpirun ends the whole job when a rank dies (SIGTERM to the others about 1 s
        later, SIGKILL 1 s after that), as Open MPI users know it: the survivors are ended
        by it rather than by an error of their own. The job must end within the kill's
        bound, name the killed rank, and leave nothing; a survivor that did report first
        must report the loss (or a timeout), and none may crash."""
        out = []
        named = re.search(rf"rank {self.victim} killed by signal 9|process rank "
                          rf"{self.victim} with PID \d+ on node \S+ exited on signal 9",
                          self.output)
        if not named:
            out.append(f"the launcher's report does not name rank {self.victim} killed "
                       f"by signal 9")
        took = self.ended_clock - self.victim_clock
        if took > BOUND_S["kill"]:
            out.append(f"the job ended {took:.2f} s after the kill, over the "
                       f"{BOUND_S['kill']:.0f} s bound")
        for r, how in self.crashed.items():
            if "crashed" in how:
                out.append(f"survivor {r} {how}")
        for r, (status, message) in self.errors.items():
            if status not in ("DT_ERR_PEER_LOST", "DT_ERR_TIMEOUT"):
                out.append(f"survivor {r}: {status}: {message}")
        if self.leftovers:
            out.append(f"processes left behind: {self.leftovers}")
        return out

    @property
    def survivors(self):
        return [r for r in range(RANKS) if r != self.victim]

    def problems(self):
        """What went wrong, one sentence each; empty when the trial behaved."""
        out = []
        if self.returncode is None:
            out.append(f"the launcher did not return within {HARD_LIMIT_S} s")
        elif self.returncode == 0:
            out.append("the job exited 0 although a rank was lost")
        elif self.returncode == 124:
            out.append(f"the job did not end by itself: disttrainrun --timeout "
                       f"{JOB_TIMEOUT_S} stopped it")
        if self.victim_clock is None:
            out.append(f"rank {self.victim} never reached iteration {self.at}")
            return out
        if self.transport == "mpi" and self.signal == "kill":
            return out + self.mpirun_kill_problems()
        for r in self.survivors:
            if r in self.crashed:
                out.append(f"survivor {r} {self.crashed[r]}")
            if r not in self.errors:
                out.append(f"survivor {r} reported no error")
                continue
            status, message = self.errors[r]
            if self.signal == "kill":
                # A dead peer is noticed as lost, not by waiting for it until the timeout
                # (which the 5 s bound alone would let through, DISTTRAIN_TIMEOUT being 3).
                if (status != "DT_ERR_PEER_LOST" or "DISTTRAIN_TIMEOUT passed" in message
                        or not re.search(rf"\branks? ([0-9, ]*\b)?{self.victim}\b", message)):
                    out.append(f"survivor {r}: {status}: {message} (expected "
                               f"DT_ERR_PEER_LOST naming rank {self.victim}, not a timeout)")
            elif status not in ("DT_ERR_TIMEOUT", "DT_ERR_PEER_LOST"):
                out.append(f"survivor {r}: {status}: {message} "
                           f"(expected DT_ERR_TIMEOUT or DT_ERR_PEER_LOST)")
            if self.delays[r] > BOUND_S[self.signal]:
                out.append(f"survivor {r} failed {self.delays[r]:.2f} s after the "
                           f"{self.signal}, over the {BOUND_S[self.signal]:.0f} s bound")
        if self.leftovers:
            out.append(f"processes left behind: {self.leftovers}")
        return out


def command(build, transport, subcommand, victim, at):
    build = pathlib.Path(build)
    launcher = [str(build / "core" / "launch" / "disttrainrun")]
    if transport == "mpi":
        launcher += ["--launcher", "mpi"]
    worker = build / "tests" / "integration" / "dt_engine_worker"
    return launcher + ["-np", str(RANKS), "--grace", str(GRACE_S),
                       "--timeout", str(JOB_TIMEOUT_S), str(worker), subcommand,
                       str(victim), str(at)]


def environment(build, transport, mode, shm, marker):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DISTTRAIN_", "OMPI_", "PMI_", "PMIX_", "SLURM_"))}
    env.update({"DISTTRAIN_TRANSPORT": transport,
                "DISTTRAIN_PLUGIN_PATH": str(plugin_dir(build, transport)),
                "DISTTRAIN_ORDERED": MODES[mode], "DISTTRAIN_SHM": SHM[shm],
                "DISTTRAIN_TIMEOUT": str(TIMEOUT_S),
                "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
                MARKER: marker})
    return env


def run_trial(build, transport, mode, shm, sig, victim, at):
    """Runs one job to its end (or kills it at HARD_LIMIT_S) and returns its Trial. Kills
    whatever of the job is left afterwards, so a failed trial leaves nothing behind."""
    trial = Trial(transport, mode, shm, sig, victim, at)
    marker = f"{MARKER}={uuid.uuid4().hex}"
    proc = subprocess.Popen(command(build, transport, SIGNALS[sig], victim, at),
                            env=environment(build, transport, mode, shm,
                                            marker.split("=", 1)[1]),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            errors="replace")
    try:
        trial.output, _ = proc.communicate(timeout=HARD_LIMIT_S)
        trial.returncode = proc.returncode
        trial.ended_clock = time.monotonic()
    except subprocess.TimeoutExpired:
        proc.kill()
        trial.output, _ = proc.communicate()
    # A process still exiting when the launcher returned is given a moment; what is
    # still there after it was left behind.
    deadline = time.monotonic() + 1.0
    while job_processes(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = job_processes(marker)
    trial.leftovers = [describe(p) for p in left]
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    parse(trial)
    return trial


def parse(trial):
    text = trial.output
    m = VICTIM_LINE.search(text)
    if m and int(m.group(1)) == trial.victim:
        trial.victim_clock = float(m.group(2))
    for m in ERROR_LINE.finditer(text):
        rank = int(m.group(1))
        if rank != trial.victim and rank not in trial.errors:
            trial.errors[rank] = (m.group(3), m.group(4).strip())
            if trial.victim_clock is not None:
                trial.delays[rank] = float(m.group(2)) - trial.victim_clock
    dead = {}
    for m in CRASH_LINE.finditer(text):
        dead.setdefault(int(m.group(1)), f"crashed by signal {m.group(2)}")
    for m in MPIRUN_SIGNAL.finditer(text):
        dead.setdefault(int(m.group(1)), f"died by signal {m.group(2)} (mpirun)")
    if trial.transport != "mpi":  # under mpirun, disttrainrun's rank 0 is mpirun
        for m in LAUNCHER_SIGNAL.finditer(text):
            dead.setdefault(int(m.group(1)), f"died by signal {m.group(2)}")
        for m in LAUNCHER_STOPPED.finditer(text):
            for rank in rank_set(m.group(1)):
                dead.setdefault(rank, f"was ended by disttrainrun's signal {m.group(2)}")
    trial.crashed = {r: how for r, how in dead.items() if r != trial.victim}


def moment(index):
    """The victim and the iteration of its signal for the index-th trial: every rank in
    turn, at iterations spread over the first few dozen (before, during and after the
    engine's first negotiations have warmed up)."""
    return index % RANKS, 2 + (index * 11) % 37
