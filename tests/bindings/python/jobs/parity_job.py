# SPDX-License-Identifier: Apache-2.0
"""A 2+-rank job of the Horovod-parity API on numpy arrays and torch tensors: one default
reduction (average) and one root spelling (root_rank=, root= deprecated) in both,
grouped_allreduce, allgather_object / broadcast_object, and disttrain.torch's uneven
allgather and alltoall with splits. Prints "OK"; raises on the first wrong result."""
import warnings

import numpy as np
import torch

import disttrain
import disttrain.torch as dt

torch.set_num_threads(1)
disttrain.init()
r, n = disttrain.rank(), disttrain.size()
eq = np.testing.assert_array_equal

# -- one default op: the average, in numpy and torch alike ----------------------------
x = np.full((2, 3), float(r), np.float64)
want = np.full((2, 3), (n - 1) / 2)
eq(disttrain.allreduce(x), want)
eq(disttrain.allreduce_async(x).wait(), want)
eq(disttrain.allreduce_(x.copy()), want)
eq(dt.allreduce(torch.from_numpy(x)).numpy(), want)
eq(disttrain.allreduce(np.full(3, 2 * r + 1, np.int32)), np.full(3, n))  # integer average
eq(disttrain.reduce_scatter(np.full((n, 2), float(r)))[0], [(n - 1) / 2] * 2)
eq(disttrain.allreduce(x, op="sum"), np.full((2, 3), n * (n - 1) / 2))

# -- one root spelling: root_rank=; root= warns, both is a TypeError ------------------
last = n - 1
eq(disttrain.broadcast(np.array([r]), root_rank=last), [last])
assert dt.broadcast(torch.tensor([r]), root_rank=last).tolist() == [last]
for call in (lambda: disttrain.broadcast(np.array([r]), root=last),
             lambda: disttrain.broadcast_(np.array([r]), root=last),
             lambda: dt.broadcast(torch.tensor([r]), root=last),
             lambda: dt.broadcast_(torch.tensor([r]), root=last)):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = call()
    assert int(got[0]) == last, got
    assert any(issubclass(w.category, DeprecationWarning) and "root_rank=" in str(w.message)
               for w in caught), [str(w.message) for w in caught]
for call in (lambda: disttrain.broadcast(np.array([r]), root_rank=0, root=0),
             lambda: dt.broadcast_(torch.tensor([r]), 0, root=0)):
    try:
        call()
    except TypeError as e:
        assert "root_rank" in str(e) and "root=" in str(e), e
    else:
        raise AssertionError("root_rank= and root= together were accepted")

# -- grouped_allreduce: one group, a list of results in order ------------------------
arrays = [np.full(k + 1, float(r + k), np.float32) for k in range(5)]
got = disttrain.grouped_allreduce(arrays, name="grouped.np")
assert isinstance(got, list) and len(got) == 5
for k, g in enumerate(got):
    eq(g, np.full(k + 1, (n - 1) / 2 + k, np.float32))
got = disttrain.grouped_allreduce([np.array([r + 1], np.int64)] * 3, op="sum")
assert [int(g[0]) for g in got] == [n * (n + 1) // 2] * 3
tensors = [torch.full((k + 2,), float(r * (k + 1))) for k in range(4)]
got = dt.grouped_allreduce(tensors, name="grouped.t")
for k, g in enumerate(got):
    assert torch.equal(g, torch.full((k + 2,), (n - 1) / 2 * (k + 1))), (k, g)
inplace = [t.clone() for t in tensors]
back = dt.grouped_allreduce_(inplace, op=dt.Max)
assert all(a is b for a, b in zip(back, inplace)) and len(back) == len(inplace)
assert all(torch.equal(t, torch.full_like(t, (n - 1) * (k + 1)))
           for k, t in enumerate(inplace))
h = dt.grouped_allreduce_async([torch.ones(2, dtype=torch.bfloat16), torch.ones(3)])
assert [t.tolist() for t in h.wait()] == [[1.0] * 2, [1.0] * 3]
assert disttrain.grouped_allreduce([]) == []
try:
    disttrain.grouped_allreduce(np.ones(3))
except disttrain.UsageError as e:
    assert "list" in str(e), e
else:
    raise AssertionError("grouped_allreduce of a bare array was accepted")

# -- objects of different sizes ------------------------------------------------------
mine = {"rank": r, "payload": "x" * (1000 * r + 1), "shape": (r, [r] * r)}
everyone = disttrain.allgather_object(mine)
assert everyone == [{"rank": k, "payload": "x" * (1000 * k + 1), "shape": (k, [k] * k)}
                    for k in range(n)], everyone
assert dt.allgather_object(("t", torch.tensor([r])))[last][1].tolist() == [last]
assert disttrain.broadcast_object({"from": r} if r == last else None,
                                  root_rank=last) == {"from": last}
assert dt.broadcast_object([r] * (r + 1), root_rank=0) == [0]

# -- disttrain.torch: uneven allgather, alltoall with splits --------------------------
for dtype in (torch.float32, torch.bfloat16, torch.int64):
    t = torch.full((r + 1, 2), r, dtype=dtype)
    g = dt.allgather(t, name=f"ag.{dtype}")
    assert g.dtype == dtype and g.shape == (n * (n + 1) // 2, 2), g.shape
    assert torch.equal(g, torch.cat([torch.full((k + 1, 2), k, dtype=dtype)
                                     for k in range(n)]))
empty_first = dt.allgather_async(torch.zeros((0, 3)) if r == 0 else torch.ones((1, 3)))
assert empty_first.wait().shape == (n - 1, 3)
splits = [j + 1 for j in range(n)]
send = torch.cat([torch.full((j + 1, 3), 10 * r + j, dtype=torch.int32) for j in range(n)])
out, received = dt.alltoall(send, splits=splits, name="a2a.t")
assert received.tolist() == [r + 1] * n, received
assert torch.equal(out, torch.cat([torch.full((r + 1, 3), 10 * i + r, dtype=torch.int32)
                                   for i in range(n)]))
out, received = dt.alltoall_async(send.float(), torch.tensor(splits)).wait()
assert out.dtype == torch.float32 and received.tolist() == [r + 1] * n
assert torch.equal(dt.alltoall(torch.arange(n) + 100 * r),  # equal blocks, as before
                   torch.tensor([100 * i + r for i in range(n)]))
try:
    dt.alltoall(torch.ones(3), splits=[3] + [1] * (n - 1))
except disttrain.UsageError as e:
    assert "splits" in str(e), e
else:
    raise AssertionError("splits that do not sum to dim 0 were accepted")

disttrain.shutdown()
print("OK", flush=True)
