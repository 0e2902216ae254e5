# SPDX-License-Identifier: Apache-2.0
"""A lost rank on every transport: one of 4 ranks is SIGKILLed or SIGSTOPped at a varied
moment in a loop of allreduces, over tcp and ucx (disttrainrun) and mpi (disttrainrun
--launcher mpi), ordered and negotiated, shared memory on and off.

Each survivor must end with an error of its own, never by a signal: DT_ERR_PEER_LOST
naming the victim within 5 s of a kill; DT_ERR_TIMEOUT or DT_ERR_PEER_LOST within
DISTTRAIN_TIMEOUT (3 s) + 5 s of a stop (a stopped rank is alive, only its silence shows).
Under mpirun a kill ends the whole job (mpirun's own teardown): there the job must end
within 5 s naming the killed rank, and no survivor may crash.
And when the launcher returns, no process of the job may be left (each job's processes
carry a unique variable, looked for in /proc; any found are killed after the check).
Every job has a hard limit (fault_cases.HARD_LIMIT_S).

Two trials per case keep the whole matrix at about 2 minutes on 2 cores: a kill costs
about the start of 4 ranks, a stop DISTTRAIN_TIMEOUT more, anything under mpirun its
teardown's 2 s. The victim and the iteration differ from trial to trial and from case to case.
tests/bench/fault_matrix.py runs more trials and prints the times.

Without a launcher, rank 0 serves the store: a rank 0 lost while another rank sets up its
transport takes the store with it, and that rank must say so at once, naming the peer it
still waited for, rather than wait DISTTRAIN_TIMEOUT for each store call it makes after.
"""
import itertools
import socket
import subprocess
import time

import pytest

from conftest import BUILD, build_path, clean_env
import fault_cases as fc

TRIALS = {"kill": 2, "stop": 2}

CASES = list(itertools.product(fc.TRANSPORTS, fc.MODES, fc.SHM, fc.SIGNALS))


@pytest.mark.parametrize("transport, mode, shm, sig", CASES,
                         ids=["-".join(c) for c in CASES])
def test_survivors_fail_promptly_and_nothing_is_left(transport, mode, shm, sig):
    if not fc.plugin_built(BUILD, transport):
        pytest.skip(f"transport '{transport}' was not built "
                    f"(no {fc.plugin_dir(BUILD, transport)}/libdt-transport-{transport}.so)")
    build_path("core", "launch", "disttrainrun")
    build_path("tests", "integration", "dt_engine_worker")
    offset = CASES.index((transport, mode, shm, sig))
    failures = []
    for trial in range(TRIALS[sig]):
        victim, at = fc.moment(offset + trial)
        t = fc.run_trial(BUILD, transport, mode, shm, sig, victim, at)
        problems = t.problems()
        if problems:
            failures.append(f"trial {trial} (rank {victim} {sig} at iteration {at}): " +
                            "; ".join(problems) + "\n" + t.output[-3000:])
    assert not failures, "\n\n".join(failures)


def wait_for_line(log, text, proc, limit_s=60):
    """Waits until the rank writing log has logged text; fails if it ends first."""
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        if text in log.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    pytest.fail(f"{log.name} never logged {text!r}:\n{log.read_text(errors='replace')[-3000:]}")


# Per transport: a line rank 2 logs once its set-up waits for its peers' addresses (or
# just before, and how long to let it get there), and how its error names rank 1.
STORE_LOSS = {
    "tcp": ("tcp: listening on", 0.5, "still missing: rank 1 (no address in the store"),
    "ucx": ("loaded transport plugin 'ucx'", 3.0, "UCX address of rank 1"),
}


@pytest.mark.parametrize("transport", list(STORE_LOSS))
def test_the_store_closing_during_create_is_named_at_once(transport, tmp_path):
    # Rank 1 reaches dt_context_create and dies once it has said its settings; rank 2
    # comes, the job's settings agree, and rank 2 waits in the transport's set-up for
    # rank 1's address when rank 0, serving the store, dies too.
    if not fc.plugin_built(BUILD, transport):
        pytest.skip(f"transport '{transport}' was not built")
    ready_line, settle_s, names_rank_1 = STORE_LOSS[transport]
    worker = build_path("tests", "integration", "dt_worker")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # DISTTRAIN_TIMEOUT well beyond the steps before the kills: no rank waits it out.
    common = {"DISTTRAIN_SIZE": "3", "DISTTRAIN_STORE_ADDR": f"127.0.0.1:{port}",
              "DISTTRAIN_JOB_TOKEN": "t" * 16, "DISTTRAIN_TIMEOUT": "20",
              "DISTTRAIN_TRANSPORT": transport, "DISTTRAIN_LOG_LEVEL": "debug",
              "DISTTRAIN_PLUGIN_PATH": str(fc.plugin_dir(BUILD, transport))}
    logs = [tmp_path / f"rank{r}.log" for r in range(3)]
    procs = []

    def start(rank):
        with open(logs[rank], "w") as log:
            procs.append(subprocess.Popen([str(worker), "info"], stdout=log,
                                          stderr=subprocess.STDOUT,
                                          env=clean_env({**common,
                                                         "DISTTRAIN_RANK": str(rank)})))
        return procs[-1]

    try:
        rank0, rank1 = start(0), start(1)
        wait_for_line(logs[1], "connected to the rendezvous store", rank1)
        time.sleep(1.0)  # for its settings, one store write after connecting
        rank1.kill()
        rank2 = start(2)
        wait_for_line(logs[2], ready_line, rank2)
        time.sleep(settle_s)
        rank0.kill()
        try:
            rank2.wait(timeout=120)  # a guard against a hang: the answer is judged by its words
        except subprocess.TimeoutExpired:
            pytest.fail("rank 2 still waits for the store rank 0 took with it:\n" +
                        logs[2].read_text(errors="replace")[-3000:])
    finally:
        for p in procs:
            p.kill()
            p.wait()
    out = logs[2].read_text(errors="replace")
    error = [line for line in out.splitlines() if line.startswith("error: ")]
    assert rank2.returncode == 1, out[-3000:]
    assert error and "DT_ERR_STORE" in error[0], out[-3000:]
    assert f"the rendezvous store at 127.0.0.1:{port} (served by rank 0) closed" in error[0]
    assert "rank 0 has probably failed or exited" in error[0], error[0]
    assert names_rank_1 in error[0], error[0]
