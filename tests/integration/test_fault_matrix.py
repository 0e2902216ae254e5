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
"""
import itertools

import pytest

from conftest import BUILD, build_path
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
