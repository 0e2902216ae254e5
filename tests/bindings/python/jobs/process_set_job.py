# SPDX-License-Identifier: Apache-2.0
"""Process sets and join through the Python binding.

    process_set_job.py sets [torch]   4 ranks: sets {0,2} and {1,3}; prints "OK"
    process_set_job.py join           2 ranks: rank 1 has more batches, then join()

Results are checked here (an AssertionError fails the job); the test reads the lines
printed. Rank prefixes "[r] " come from disttrainrun.
"""
import sys

import numpy as np

import disttrain
from disttrain import UsageError

eq = np.testing.assert_array_equal


def expect_usage(fn, *words):
    try:
        fn()
    except UsageError as e:
        text = str(e)
        for w in words:
            assert w in text, f"{w!r} not in {text!r}"
        return text
    raise AssertionError(f"no UsageError (wanted one naming {words})")


def sets(use_torch):
    ctx = disttrain.init()
    r, n = disttrain.rank(), disttrain.size()
    assert n == 4, n
    # Two ways to make a set; both are collective over the whole job, in the same order.
    even = disttrain.ProcessSet([0, 2])
    assert not even.included() and even.size() == 2
    disttrain.add_process_set(even)
    odd = ctx.group([1, 3])
    mine, other = (even, odd) if r % 2 == 0 else (odd, even)
    assert mine.included() and not other.included()
    assert mine.rank() == r // 2 and mine.size() == 2 and mine.ranks == (r % 2, r % 2 + 2)
    print(f"set ranks={list(mine.ranks)} rank={mine.rank()} size={mine.size()}")

    # Collectives among members only: {0,2} sums to 2, {1,3} to 4.
    want = 2 if r % 2 == 0 else 4
    s = mine.allreduce(np.array([r], np.int64), op="sum")
    eq(s, [want])
    eq(disttrain.allreduce(np.full(3, r, np.float32), op="sum", process_set=mine),
       np.full(3, want, np.float32))
    x = np.full(5, float(r), np.float64)
    mine.allreduce_(x, op="avg")
    eq(x, np.full(5, want / 2))
    eq(mine.allreduce_async(np.array([r + 1], np.int32), op="max").wait(), [r % 2 + 3])
    eq(mine.broadcast(np.array([r, r]), root_rank=1), [r % 2 + 2] * 2)  # set rank 1
    eq(mine.allgather(np.array([r], np.int32)), list(mine.ranks))
    mine.barrier()
    # Sets that run different numbers of operations, then the whole job again.
    if r % 2 == 0:
        eq(disttrain.allreduce(np.array([1]), "sum", process_set=even), [2])
    world = disttrain.allreduce(np.array([r], np.int64), op="sum")
    eq(world, [6])
    print(f"set sum={int(s[0])} world={int(world[0])}")

    if use_torch:
        import torch

        import disttrain.torch as dt
        t = torch.full((4,), float(r))
        got = dt.allreduce(t, op=dt.Sum, process_set=mine)
        assert torch.equal(got, torch.full((4,), float(want))), got
        dt.allreduce_(t, process_set=mine)  # average by default
        assert torch.equal(t, torch.full((4,), want / 2)), t
        b = dt.broadcast(torch.tensor([r]), root_rank=0, context=mine)
        assert b.item() == r % 2, b
        expect_usage(lambda: dt.allreduce(t, process_set=other), "not a member")
        expect_usage(lambda: dt.allreduce(t, context=other, process_set=mine),
                     "either context= or process_set=")
        print(f"torch set sum={int(got[0])}")

    # A non-member's call names the set and the rank; nothing is sent.
    msg = expect_usage(lambda: other.allreduce(np.ones(2)), "not a member",
                       f"rank {r} ", str(list(other.ranks)))
    expect_usage(lambda: disttrain.allreduce(np.ones(2), process_set=other), "not a member")
    expect_usage(other.rank, "not a member")
    print(f"non-member: {msg}")

    # Bad lists fail on every rank before any rank waits, so the job goes on.
    out_of_range = expect_usage(lambda: disttrain.add_process_set([0, 4]), "ranks[1] is 4")
    expect_usage(lambda: disttrain.add_process_set([1, 1]), "rank 1 is listed twice")
    expect_usage(lambda: disttrain.ProcessSet([0, "1"]), "ranks[1]")
    expect_usage(lambda: disttrain.add_process_set(even), "already added")
    print(f"bad list: {out_of_range}")

    # Sets are made from the whole job only (the library numbers them per job).
    expect_usage(lambda: mine.group([0]), "cannot be made inside")

    # join is for the whole job, not a set.
    expect_usage(mine.join, "DT_ERR_UNSUPPORTED", "not on a group")

    # Freeing: with-block and close(); a closed set refuses work.
    with disttrain.add_process_set([3, 2, 1, 0]) as rev:
        assert rev.rank() == 3 - r
        eq(rev.allgather(np.array([r])), [3, 2, 1, 0])
    assert rev.closed
    expect_usage(lambda: rev.allreduce(np.ones(1)), "closed")
    disttrain.remove_process_set(odd)
    assert odd.closed
    disttrain.barrier()
    # Ranks that pass different lists: DT_ERR_MISMATCH on every rank (as the C test).
    mismatch = expect_usage(lambda: disttrain.add_process_set([0 if r == 0 else 1, 2]),
                            "DT_ERR_MISMATCH")
    print(f"mismatched lists: {mismatch}")
    disttrain.shutdown()  # closes `even` before the context
    assert even.closed
    print("OK")


def join():
    disttrain.init()
    r = disttrain.rank()
    # Rank r has 3 + 2r batches, as the engine's C test (test_engine.py, join).
    for i in range(3 + 2 * r):
        v = disttrain.allreduce_(np.ones(4, np.float32), op="sum", name="count")
        avg = disttrain.allreduce_(np.array([r + 1, 0, 0, 0], np.float32), op="avg",
                                   name="mean")
        print(f"batch {i} sum={v[0]:g} avg={avg[0]:g}", flush=True)
    last = disttrain.join()
    print(f"joined last={last}", flush=True)
    disttrain.shutdown()


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "sets":
        sets("torch" in sys.argv[2:])
    elif mode == "join":
        join()
    else:
        raise SystemExit(f"unknown mode {mode}")
