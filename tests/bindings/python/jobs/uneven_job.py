# SPDX-License-Identifier: Apache-2.0
"""A 2+-rank job for allgather with a first dimension that differs per rank and alltoall
with splits (as Horovod's), on numpy arrays and CPU torch tensors, blocking and
asynchronous, including ranks that disagree. Prints "OK"; raises on the first wrong
result."""
import numpy as np

import disttrain

disttrain.init()
r, n = disttrain.rank(), disttrain.size()
eq = np.testing.assert_array_equal

# allgather: rank k contributes k+1 rows (rank 0 also an empty array in a second call)
x = np.full((r + 1, 3), r, np.float32)
want = np.concatenate([np.full((k + 1, 3), k, np.float32) for k in range(n)])
eq(disttrain.allgather(x, name="ag"), want)
eq(disttrain.allgather_async(x, name="ag.async").wait(), want)
rows = np.zeros((0, 2), np.int64) if r == 0 else np.full((2, 2), r, np.int64)
eq(disttrain.allgather(rows), np.concatenate([np.full((0 if k == 0 else 2, 2), k, np.int64)
                                              for k in range(n)]))

# alltoall with splits: rank i sends j+1 rows of value 10*i+j to rank j
splits = [j + 1 for j in range(n)]
send = np.concatenate([np.full((j + 1, 2), 10 * r + j, np.int32) for j in range(n)])
out, received = disttrain.alltoall(send, splits=splits, name="a2a")
eq(received, [r + 1] * n)
eq(out, np.concatenate([np.full((r + 1, 2), 10 * i + r, np.int32) for i in range(n)]))
out, received = disttrain.alltoall_async(send, splits, name="a2a.async").wait()
eq(received, [r + 1] * n)
# without splits: equal blocks, the array alone, as before
eq(disttrain.alltoall(np.arange(n, dtype=np.int64) + 100 * r),
   np.array([100 * i + r for i in range(n)], np.int64))

# bad splits are refused on this rank at once
for bad in ([1] * (n + 1), [-1] + [0] * (n - 1), [0] * n):
    try:
        disttrain.alltoall(np.ones(3, np.float32), splits=bad)
    except disttrain.UsageError as e:
        assert "splits" in str(e), e
    else:
        raise AssertionError(f"splits={bad} were accepted")


def expect_shape_mismatch(call, array, name, shapes, what="allgather"):
    """Every rank gets DT_ERR_MISMATCH naming each shape, and the context goes on."""
    try:
        call(array, name=name)
    except disttrain.DisttrainError as e:
        assert e.status_name == "DT_ERR_MISMATCH", e
        assert f"{what} '{name}'" in e.message, e
        for ranks, shape in shapes:
            assert f"{ranks} pass" in e.message and shape in e.message, (ranks, shape, e)
    else:
        raise AssertionError(f"{name}: an {what} with another shape on "
                             f"rank {n - 1} returned")
    eq(disttrain.allgather(np.array([r]), name=f"{name}.after"), np.arange(n))


# ranks that disagree on the trailing dimensions, with rows of other sizes and of the
# same size (which dt_allgatherv's counts cannot tell apart)
others = "rank 0" if n == 2 else f"ranks {', '.join(map(str, range(n - 1)))}"
last_differs = r == n - 1
expect_shape_mismatch(disttrain.allgather, np.ones((1, 2 + last_differs), np.float32),
                      "ag.bad", [(others, "(1, 2)"), (f"rank {n - 1}", "(1, 3)")])
expect_shape_mismatch(disttrain.allgather,
                      np.zeros((2, 3, 2) if last_differs else (2, 2, 3), np.float32),
                      "ag.same_size", [(others, "(2, 2, 3)"), (f"rank {n - 1}", "(2, 3, 2)")])
expect_shape_mismatch(lambda a, name: disttrain.allgather_async(a, name=name).wait(),
                      np.zeros((r + 1, 2, 1) if last_differs else (r + 1, 1, 2)),
                      "ag.async_bad", [(others, "(*, 1, 2)" if n > 2 else "(1, 1, 2)"),
                                       (f"rank {n - 1}", f"({n}, 2, 1)")])


def alltoall_splits(array, name):
    """One row to each rank."""
    return disttrain.alltoall(array, splits=[1] * n, name=name)


# alltoall with splits: the same, the shapes travelling with the splits (rows of the same
# size would pass dt_alltoallv's counts and be read in the receiver's shape)
expect_shape_mismatch(alltoall_splits,
                      np.zeros((n, 3, 2) if last_differs else (n, 2, 3), np.float32),
                      "a2a.same_size", [(others, f"({n}, 2, 3)"), (f"rank {n - 1}",
                                                                   f"({n}, 3, 2)")],
                      "alltoall")
expect_shape_mismatch(lambda a, name: disttrain.alltoall_async(
                          a, [0] * (n - 1) + [r + 1], name=name).wait(),
                      np.ones((r + 1, 3) if last_differs else (r + 1, 2), np.int32),
                      "a2a.async_bad", [(others, "(*, 2)" if n > 2 else "(1, 2)"),
                                        (f"rank {n - 1}", f"({n}, 3)")], "alltoall")
out, received = alltoall_splits(np.full((n, 3, 2), r, np.float32), "a2a.after")
eq(received, [1] * n)
eq(out, np.concatenate([np.full((1, 3, 2), i, np.float32) for i in range(n)]))

try:
    import torch
except ImportError:
    torch = None
if torch is not None:
    import disttrain.torch
    t = torch.full((r + 1, 2), float(r))
    g = disttrain.allgather(t, name="ag.torch")
    assert isinstance(g, torch.Tensor) and g.shape == (n * (n + 1) // 2, 2), g
    assert torch.equal(g, torch.cat([torch.full((k + 1, 2), float(k)) for k in range(n)]))
    send = torch.cat([torch.full((j + 1,), 10 * r + j, dtype=torch.int64) for j in range(n)])
    out, received = disttrain.alltoall(send, splits=torch.tensor(splits), name="a2a.torch")
    assert isinstance(out, torch.Tensor) and isinstance(received, torch.Tensor)
    assert received.tolist() == [r + 1] * n
    assert out.tolist() == [10 * i + r for i in range(n) for _ in range(r + 1)]
    expect_shape_mismatch(disttrain.torch.allgather,
                          torch.zeros((2, 3, 2) if last_differs else (2, 2, 3)), "ag.torch_bad",
                          [(others, "(2, 2, 3)"), (f"rank {n - 1}", "(2, 3, 2)")])
    same_size = torch.zeros((n, 3, 2) if last_differs else (n, 2, 3))
    expect_shape_mismatch(lambda t, name: disttrain.torch.alltoall(t, [1] * n, name=name),
                          same_size, "a2a.torch_bad",
                          [(others, f"({n}, 2, 3)"), (f"rank {n - 1}", f"({n}, 3, 2)")],
                          "alltoall")

disttrain.shutdown()
print("OK")
