# SPDX-License-Identifier: Apache-2.0
"""disttrain (numpy) on 2 ranks through disttrainrun, results checked with numpy."""
import pytest

import dtpy


def test_numpy_collectives_on_two_ranks():
    dtpy.assert_ranks_ok(dtpy.run_job("numpy_job.py", np=2, timeout=90), np=2)


def test_numpy_collectives_on_three_ranks():
    dtpy.assert_ranks_ok(dtpy.run_job("numpy_job.py", np=3, timeout=90), np=3)


def test_same_job_as_a_single_process_without_launcher():
    r = dtpy.run_python("numpy_job.py", timeout=60)
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout + r.stderr


def test_named_contexts_created_from_threads_pair_up_by_name():
    dtpy.assert_ranks_ok(dtpy.run_job("named_contexts_job.py", np=2, timeout=90), np=2)


def test_a_failing_rank_fails_the_job_not_hangs():
    # Rank 1 raises before the collective; rank 0 must not wait forever.
    r = dtpy.run_job("failing_job.py", np=2, timeout=90)
    assert r.returncode != 0
    assert "rank 1 gives up" in r.stdout + r.stderr


def test_ctrl_c_while_a_collective_waits_interrupts_at_once_and_fails_the_peers():
    # Rank 0 gets SIGINT while it waits in an allreduce rank 1 never submits: rank 0
    # raises KeyboardInterrupt and rank 1 PeerLostError within seconds, not after
    # DISTTRAIN_TIMEOUT (60 s there).
    dtpy.assert_ranks_ok(dtpy.run_job("interrupt_job.py", np=2, timeout=50), np=2)


def test_an_object_a_rank_cannot_pickle_fails_on_every_rank_and_later_calls_work():
    dtpy.assert_ranks_ok(dtpy.run_job("objects_job.py", np=2, timeout=90), np=2)


def test_an_object_a_rank_cannot_pickle_fails_on_every_rank_on_three_ranks_ordered():
    r = dtpy.run_job("objects_job.py", np=3, env={"DISTTRAIN_ORDERED": "1"}, timeout=90)
    dtpy.assert_ranks_ok(r, np=3)


@pytest.mark.parametrize("shm", ["0", "1"])
def test_a_forked_child_exits_leaving_the_parents_context_alone(shm):
    # The child's atexit shutdown and garbage collection only forget the inherited
    # context, process set and request; the parent's job goes on (fork_job.py).
    r = dtpy.run_job("fork_job.py", np=2, env={"DISTTRAIN_SHM": shm}, timeout=90)
    dtpy.assert_ranks_ok(r, np=2)
    assert (r.stdout + r.stderr).count("child exits") == 2, r.stdout + r.stderr


def test_a_forked_child_of_a_single_process_exits_leaving_its_context_alone():
    r = dtpy.run_python("fork_job.py", timeout=60)
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout + r.stderr
