# SPDX-License-Identifier: Apache-2.0
"""A 2+-rank job of allgather_object and broadcast_object with an object that a rank
cannot pickle: every rank raises a UsageError naming that rank and its exception, and
the calls after it, unnamed ones included, still line up across the ranks. Prints "OK";
raises on the first wrong result."""
import threading

import numpy as np

import disttrain

disttrain.init()
r, n = disttrain.rank(), disttrain.size()
last = n - 1


def expect_failure(call, failing, *texts):
    """call() raises on every rank, naming each failing rank and its exception text; on
    a failing rank the pickling exception is the cause."""
    try:
        call()
    except disttrain.UsageError as e:
        for rank, text in zip(failing, texts):
            assert f"rank {rank} could not serialise its object ({text}" in e.message, e
        assert (e.__cause__ is not None) == (r in failing), (e, e.__cause__)
    else:
        raise AssertionError(f"rank {r}: an object rank(s) {failing} cannot pickle passed")
    # The ranks are still in step: an unnamed allreduce matches the same call everywhere.
    ones = disttrain.allreduce(np.ones(2, np.float32), op="sum")
    np.testing.assert_array_equal(ones, [n, n])


expect_failure(lambda: disttrain.broadcast_object((k for k in "ab") if r == 0 else None, 0),
               [0], "TypeError: cannot pickle 'generator' object")
expect_failure(lambda: disttrain.allgather_object(threading.Lock() if r == last else r),
               [last], "TypeError: cannot pickle '_thread.lock' object")
both = sorted({0, last})
expect_failure(lambda: disttrain.allgather_object(threading.Lock() if r in both else r,
                                                  name="objs"),
               both, *["TypeError: cannot pickle"] * len(both))
assert disttrain.broadcast_object({"from": r}, last) == {"from": last}
assert disttrain.allgather_object(r * 10) == [k * 10 for k in range(n)]

try:
    import torch
except ImportError:
    torch = None
if torch is not None:
    import disttrain.torch as dt
    expect_failure(lambda: dt.broadcast_object(threading.Lock() if r == last else None,
                                               root_rank=last),
                   [last], "TypeError: cannot pickle '_thread.lock' object")
    assert dt.broadcast_object(torch.tensor([r]), root_rank=last).tolist() == [last]

disttrain.shutdown()
print("OK", flush=True)
