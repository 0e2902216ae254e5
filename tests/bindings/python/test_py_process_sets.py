# SPDX-License-Identifier: Apache-2.0
"""Process sets and join through the Python binding: 4- and 2-rank jobs under
disttrainrun (jobs/process_set_job.py), and single-process checks. Every job has a hard
timeout and DISTTRAIN_TIMEOUT, so a hang fails the test."""
import pytest

import dtpy

dtpy.use_build_tree()
import disttrain  # noqa: E402


@pytest.mark.parametrize("ordered", ["0", "1"])
def test_sets_reduce_among_their_members_only(ordered):
    r = dtpy.run_job("process_set_job.py", "sets", np=4, timeout=120,
                     env={"DISTTRAIN_ORDERED": ordered, "DISTTRAIN_TIMEOUT": "30"})
    dtpy.assert_ranks_ok(r, np=4)
    out = r.stdout
    assert "[0] set ranks=[0, 2] rank=0 size=2" in out
    assert "[2] set ranks=[0, 2] rank=1 size=2" in out
    assert "[1] set ranks=[1, 3] rank=0 size=2" in out
    assert "[3] set ranks=[1, 3] rank=1 size=2" in out
    for rank, want in ((0, 2), (2, 2), (1, 4), (3, 4)):
        assert f"[{rank}] set sum={want} world=6" in out, out
    # Non-members and bad lists: a UsageError that says what was wrong.
    assert "[1] non-member: DT_ERR_INVALID_ARGUMENT: this process (rank 1 of the parent) " \
           "is not a member of process set [0, 2]" in out, out
    assert "[0] bad list: dt_group_create: DT_ERR_INVALID_ARGUMENT: dt_group_create: " \
           "ranks[1] is 4, not a rank of the parent (0 to 3)" in out, out
    assert out.count("mismatched lists: dt_group_create: DT_ERR_MISMATCH") == 4, out


def test_sets_with_torch_tensors():
    pytest.importorskip("torch", reason="PyTorch is not installed")
    r = dtpy.run_job("process_set_job.py", "sets", "torch", np=4, timeout=120,
                     env={"DISTTRAIN_TIMEOUT": "30"})
    dtpy.assert_ranks_ok(r, np=4)
    for rank, want in ((0, 2), (2, 2), (1, 4), (3, 4)):
        assert f"[{rank}] torch set sum={want}" in r.stdout, r.stdout


def test_join_with_uneven_batches():
    # As the engine's C test: rank 1 has 5 batches, rank 0 has 3; the last two sum only
    # rank 1's 1 and average over the one rank still reducing; rank 1 joins last.
    r = dtpy.run_job("process_set_job.py", "join", np=2, timeout=90,
                     env={"DISTTRAIN_TIMEOUT": "30"})
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    for i in range(3):
        assert f"[0] batch {i} sum=2 avg=1.5" in r.stdout, out
    assert "[1] batch 2 sum=2 avg=1.5" in r.stdout, out
    assert "[1] batch 3 sum=1 avg=2" in r.stdout, out
    assert "[1] batch 4 sum=1 avg=2" in r.stdout, out
    assert "[0] batch 3" not in r.stdout, out
    assert "[0] joined last=1" in r.stdout and "[1] joined last=1" in r.stdout, out


def test_join_needs_negotiated_mode():
    with disttrain.Context(rank=0, size=1, ordered=True, timeout=30) as c:
        with pytest.raises(disttrain.UsageError, match="DISTTRAIN_ORDERED=1") as e:
            c.join()
        assert e.value.status_name == "DT_ERR_UNSUPPORTED"
    with disttrain.Context(rank=0, size=1, ordered=False, timeout=30) as c:
        assert c.join() == 0


def test_single_process_sets_and_bad_lists():
    with disttrain.Context(rank=0, size=1, timeout=30) as c:
        with pytest.raises(disttrain.UsageError, match=r"ranks\[0\] is 1, not a rank"):
            c.group([1])
        with pytest.raises(disttrain.UsageError, match="listed twice"):
            c.group([0, 0])
        with pytest.raises(disttrain.UsageError, match="at least one rank"):
            c.group([])
        with pytest.raises(disttrain.UsageError, match="not an integer"):
            c.group([True])
        ps = c.group([0])
        assert ps.included() and ps.rank() == 0 and ps.size() == 1
        assert ps.transport() == c.transport()
        assert list(ps.allreduce([1.5, 2.5])) == [1.5, 2.5]
        h = ps.allreduce_async([3])  # in flight when the parent shuts down
        assert "rank 0/1" in repr(ps)
    assert c.closed and ps.closed  # the parent closed its set first
    assert list(h.wait()) == [3]
    with pytest.raises(disttrain.UsageError, match="was closed"):
        ps.allreduce([1])
    with pytest.raises(disttrain.UsageError, match="was not added"):
        disttrain.ProcessSet([0]).allreduce([1])
    with pytest.raises(disttrain.UsageError, match="ProcessSet"):
        disttrain.allreduce([1], process_set=[0])
