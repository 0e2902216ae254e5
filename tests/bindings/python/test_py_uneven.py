# SPDX-License-Identifier: Apache-2.0
"""allgather of arrays whose first dimension differs per rank and alltoall with splits,
through the Python binding on 2 and 3 ranks (jobs/uneven_job.py)."""
import dtpy


def test_uneven_allgather_and_alltoall_on_two_ranks():
    dtpy.assert_ranks_ok(dtpy.run_job("uneven_job.py", np=2, timeout=90), np=2)


def test_uneven_allgather_and_alltoall_on_three_ranks_ordered():
    r = dtpy.run_job("uneven_job.py", np=3, env={"DISTTRAIN_ORDERED": "1"}, timeout=90)
    dtpy.assert_ranks_ok(r, np=3)
