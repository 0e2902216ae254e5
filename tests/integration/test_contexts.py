# SPDX-License-Identifier: Apache-2.0
"""How the contexts of a job pair up across its ranks: by name, or unnamed by creation
order, where a context of one process alone does not count."""
import pytest

from conftest import build_path, run


@pytest.fixture(scope="module")
def worker():
    return build_path("tests", "integration", "dt_contexts_worker")


def test_a_context_of_one_process_leaves_the_jobs_numbering_alone(worker, disttrainrun):
    # Rank 0 alone first creates a context of its own: the job's context that every rank
    # creates next is still the same context on every rank.
    r = run([disttrainrun, "-np", "2", worker, "private-first"], timeout=90,
            env={"DISTTRAIN_TIMEOUT": "10"})
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("ok private-first") == 2, r.stdout + r.stderr


def test_a_rank_that_never_arrives_is_named_with_how_contexts_pair(worker, disttrainrun):
    r = run([disttrainrun, "-np", "2", worker, "rank0-only"], timeout=90,
            env={"DISTTRAIN_TIMEOUT": "1"})
    assert r.returncode != 0, r.stdout + r.stderr
    assert "rank 1 of 2 did not reach the rendezvous store" in r.stderr, r.stderr
    assert ("a rank that created a different number of contexts before this one reaches "
            "dt_context_create under another context and waits there") in r.stderr, r.stderr
    assert "create them in the same order on every rank" in r.stderr, r.stderr


def test_named_contexts_pair_up_by_name_whatever_order_the_ranks_create_them_in(
        worker, disttrainrun):
    # Three threads of each rank create a context each, rank 0 in one order and rank 1
    # in the other: each context still meets the context of its name.
    r = run([disttrainrun, "-np", "2", worker, "threads", "3"], timeout=90,
            env={"DISTTRAIN_TIMEOUT": "20"})
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("ok threads 3") == 2, r.stdout + r.stderr


def test_a_program_built_against_an_older_header_passes_no_name(worker):
    # The name bit and field are read only from a program built against API 1.4 or later:
    # one built against 1.3 has neither, whatever lies past the end of its struct.
    r = run([worker, "header-1.3"], timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "this header: DT_ERR_INVALID_CONFIG" in r.stdout, r.stdout
    assert "dt_context_params_t.name='not a name!' is not a context name" in r.stdout, r.stdout
