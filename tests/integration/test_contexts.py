# SPDX-License-Identifier: Apache-2.0
"""How the contexts of a job pair up across its ranks: by creation order, where a context
of one process alone does not count."""
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
    assert "rank 1 of 2 did not reach dt_context_create" in r.stderr, r.stderr
    assert ("a rank that created a different number of contexts before this one reaches "
            "dt_context_create under another context and waits there") in r.stderr, r.stderr
    assert "create them in the same order on every rank" in r.stderr, r.stderr
