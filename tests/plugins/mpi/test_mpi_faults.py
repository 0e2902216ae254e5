# SPDX-License-Identifier: Apache-2.0
"""A rank of an mpi job stopped (SIGSTOP), killed (SIGKILL) or aborting its context
mid-loop: the survivors report it, and every process of the job ends, none left behind.

Stopped: the survivors time out (DISTTRAIN_TIMEOUT), wait at exit up to 2 s for every
rank, and exit without MPI_Finalize (which in Open MPI would wait for the stopped rank
too); mpirun then ends the job and kills the stopped rank. Killed: mpirun itself ends the
job about 1 s later (the survivors are killed before they could report), and names the
rank that died. Aborted: the survivors, waiting in MPI's allreduce for the victim, fail
on its notice at once. Exited without destroying its context: the victim skips
MPI_Finalize, waits 2 s and exits with its own code, which mpirun reports as it ends the
job.

Skipped when the mpi plugin was not built or mpirun is missing.
"""
import os
import re
import shutil
import time

import pytest

from conftest import BUILD, build_path, run

MPI_PLUGIN = BUILD / "plugins" / "transport" / "mpi" / "libdt-transport-mpi.so"
TIMEOUT_S = 3

pytestmark = [
    pytest.mark.skipif(not MPI_PLUGIN.exists(), reason=f"mpi transport not built ({MPI_PLUGIN})"),
    pytest.mark.skipif(shutil.which("mpirun") is None, reason="mpirun not installed"),
]


def worker():
    return build_path("tests", "plugins", "mpi", "mpi_fault_worker")


def fault_job(disttrainrun, signal, victim, at, ordered, timeout_s):
    env = {"DISTTRAIN_TRANSPORT": "mpi", "DISTTRAIN_PLUGIN_PATH": str(MPI_PLUGIN.parent),
           "DISTTRAIN_TIMEOUT": str(timeout_s), "DISTTRAIN_ORDERED": ordered}
    r = run([disttrainrun, "--launcher", "mpi", "-np", "4", "--timeout", "50", "--",
             worker(), signal, victim, at], env=env, timeout=60)
    ended = time.time()
    out = r.stdout + r.stderr
    m = re.search(rf"rank {victim} signalled at ([0-9.]+)", r.stdout)
    assert m, out[-4000:]
    return r, out, float(m.group(1)), ended


def failures(stdout):
    """{rank: (time, status, message)} from the survivors' "failed after" lines."""
    found = {}
    for m in re.finditer(r"rank (\d) failed after \d+ iterations at ([0-9.]+): (\w+): (.*)",
                         stdout):
        found[int(m.group(1))] = (float(m.group(2)), m.group(3), m.group(4))
    return found


def leftovers():
    """Processes still running the worker of this build."""
    path = os.fsencode(str(worker()))
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read().split(b"\0")[0] == path:
                    pids.append(int(pid))
        except OSError:
            pass
    return pids


@pytest.mark.parametrize("victim,ordered", [(3, "1"), (0, "1"), (2, "0"), (1, "0")])
def test_stopped_rank_times_out_every_survivor_and_the_job_ends(disttrainrun, victim,
                                                                ordered):
    r, out, stopped, ended = fault_job(disttrainrun, "stop", victim, 15, ordered, TIMEOUT_S)
    survivors = {0, 1, 2, 3} - {victim}
    failed = failures(r.stdout)
    assert survivors <= set(failed), out[-6000:]
    for rank in survivors:
        at, status, message = failed[rank]
        # A survivor may hear that another survivor gave up a few milliseconds before its
        # own deadline: the core then reports the peer lost, with the timeout as cause.
        assert status in ("DT_ERR_TIMEOUT", "DT_ERR_PEER_LOST"), (rank, status, message)
        assert "DISTTRAIN_TIMEOUT passed" in message, (rank, message)
        assert TIMEOUT_S - 0.5 <= at - stopped <= TIMEOUT_S + 5, (rank, at - stopped, out)
    assert any(failed[rank][1] == "DT_ERR_TIMEOUT" for rank in survivors), out[-6000:]
    # Every process ended (the stopped one killed by mpirun), in time, and the job's exit
    # code is a survivor's own: 3 for DT_ERR_TIMEOUT, 4 for another error.
    assert ended - stopped <= TIMEOUT_S + 5, f"the job ended {ended - stopped:.1f} s after"
    assert leftovers() == []
    assert r.returncode in (3, 4), (r.returncode, out[-6000:])
    print(f"victim {victim} ordered={ordered}: survivors failed "
          f"{min(f[0] for f in failed.values()) - stopped:.2f}-"
          f"{max(failed[k][0] for k in survivors) - stopped:.2f} s after the stop, "
          f"job ended after {ended - stopped:.2f} s")


@pytest.mark.parametrize("victim,ordered", [(1, "0"), (3, "1"), (0, "0")])
def test_killed_rank_ends_the_job_and_is_named(disttrainrun, victim, ordered):
    # A timeout far beyond the 5 s allowed: the end comes from mpirun, not from it.
    r, out, killed, ended = fault_job(disttrainrun, "kill", victim, 15, ordered, 60)
    survivors = {0, 1, 2, 3} - {victim}
    # A survivor either reports an error or was killed by mpirun before it could.
    for rank, (_, status, message) in failures(r.stdout).items():
        assert rank in survivors and status.startswith("DT_ERR_"), (rank, status, message)
    assert ended - killed <= 5, f"the job ended {ended - killed:.1f} s after the kill"
    assert leftovers() == []
    assert r.returncode == 128 + 9, out[-6000:]
    assert re.search(rf"^disttrainrun: mpirun .*; mpirun reports rank {victim} killed by signal 9",
                     r.stderr, re.M), \
        r.stderr[-4000:]
    print(f"victim {victim} ordered={ordered}: job ended {ended - killed:.2f} s after the kill")


@pytest.mark.parametrize("victim", [1, 3])
def test_a_rank_aborting_fails_the_survivors_in_the_native_allreduce_at_once(disttrainrun,
                                                                            victim):
    """Ordered mode: the survivors are in MPI's allreduce (the call check's), which waits
    for the victim, when it calls dt_context_abort instead. Its notice ends their wait:
    MPI cannot cancel the collective, and it would have run to DISTTRAIN_TIMEOUT. The
    timeout is far beyond the job's own limit, so only a survivor that failed on the
    notice reports: one still waiting is killed by mpirun once the others have exited
    without MPI_Finalize (or by disttrainrun's --timeout)."""
    r, out, _, _ = fault_job(disttrainrun, "abort", victim, 15, "1", 600)
    survivors = {0, 1, 2, 3} - {victim}
    failed = failures(r.stdout)
    assert survivors <= set(failed), out[-6000:]
    for rank in survivors:
        _, status, message = failed[rank]
        assert status == "DT_ERR_PEER_LOST", (rank, status, message)
        assert f"rank {victim} aborted its context" in message, (rank, message)
        assert "DISTTRAIN_TIMEOUT passed" not in message, (rank, message)
    assert failed[victim][1] == "DT_ERR_ABORTED", out[-6000:]
    assert leftovers() == []


def test_a_rank_exiting_without_destroying_its_context_keeps_its_exit_code(disttrainrun):
    """The victim calls exit(5) mid-loop with its context open, its engine thread still
    driving MPI: the plugin's exit handler must not finalise MPI beside that thread (it
    crashed with SIGSEGV in MPI_Isend), and the job ends with the victim's own code."""
    for trial in range(3):
        r, out, _, _ = fault_job(disttrainrun, "exit", 1, 5, "0", 10)
        assert not re.search(r"Segmentation|signal 11|SIGSEGV|backtrace", out), out[-6000:]
        assert r.returncode != 0, out[-4000:]
        assert re.search(r"rank 1 .*code 5|exit code:? *5|exited with code 5", out), \
            f"trial {trial}:\n" + out[-4000:]
        assert leftovers() == []


@pytest.mark.parametrize("shm", ["0", "1"])
def test_a_rank_still_finishing_the_last_allreduce_is_not_failed_by_clean_exits(
        disttrainrun, shm):
    """Negotiated mode, three ranks, each makes its calls and destroys its context. MPI
    reports the last native allreduce done on rank 0 at once, on rank 2 100 ms later and
    on rank 1 300 ms later (mpi_hold_collectives.c: each has done its part). Rank 0
    leaves cleanly; rank 2's engine hears of it after its allreduce and passes it on,
    which must say that rank 2 too completed every call it made: rank 1, still waiting
    for the native allreduce, must complete it, not fail with DT_ERR_PEER_LOST. Under
    load this happened now and then without any hold (rank 1 descheduled)."""
    assert_every_rank_completes(disttrainrun, shm, hold="1:300,2:100")


@pytest.mark.parametrize("shm", ["0", "1"])
def test_a_rank_still_finishing_the_last_allreduce_is_not_failed_by_an_idle_rank(
        disttrainrun, shm):
    """As above, but rank 0 waits 250 ms before it destroys its context (a program saving
    a checkpoint): its engine's next negotiation meets rank 1's clean exit. Rank 0 had no
    call in flight, so its notice must say it completed every call: rank 2, which MPI
    reports done with the last allreduce 300 ms late, must complete it."""
    assert_every_rank_completes(disttrainrun, shm, hold="2:300", linger="0:250")


def assert_every_rank_completes(disttrainrun, shm, hold, linger=None):
    shim = build_path("tests", "plugins", "mpi", "libmpi-hold-collectives.so")
    env = {"DISTTRAIN_TRANSPORT": "mpi", "DISTTRAIN_PLUGIN_PATH": str(MPI_PLUGIN.parent),
           "DISTTRAIN_TIMEOUT": "10", "DISTTRAIN_ORDERED": "0", "DISTTRAIN_SHM": shm,
           "LD_PRELOAD": str(shim), "DT_TEST_MPI_HOLD": hold}
    r = run([disttrainrun, "--launcher", "mpi", "-np", "3", "--timeout", "50", "--",
             build_path("tests", "integration", "dt_mismatch_worker"), "none",
             *([linger] if linger else [])],
            env=env, timeout=60)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-6000:]
    for rank in range(3):
        assert re.search(rf"^\[\d+,{rank}\]<stdout>:call next: DT_OK", r.stdout, re.M), \
            out[-6000:]
        assert re.search(rf"^\[\d+,{rank}\]<stdout>:data next: ok", r.stdout, re.M), \
            out[-6000:]
