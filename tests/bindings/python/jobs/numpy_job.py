# SPDX-License-Identifier: Apache-2.0
"""A 2+-rank numpy job: every collective, blocking and asynchronous, checked with numpy.
Prints "OK" on success; raises (non-zero exit) on the first wrong result."""
import numpy as np

import disttrain

disttrain.init()
r, n = disttrain.rank(), disttrain.size()
eq = np.testing.assert_array_equal

# allreduce: every op, several dtypes, a size that takes the pipelined path
for dtype in (np.float32, np.float64, np.int32, np.int64, np.float16, np.int8, np.uint8):
    x = np.full((3, 5), r + 1, dtype)
    eq(disttrain.allreduce(x, op="sum"), np.full((3, 5), n * (n + 1) // 2, dtype))
    eq(disttrain.allreduce(x, op="min"), np.full((3, 5), 1, dtype))
    eq(disttrain.allreduce(x, op="max"), np.full((3, 5), n, dtype))
    eq(disttrain.allreduce(x, op="prod"), np.full((3, 5), np.prod(np.arange(1, n + 1)), dtype))
big = np.arange(1 << 18, dtype=np.float32) * (r + 1)
eq(disttrain.allreduce_(big, op="avg"),
   np.arange(1 << 18, dtype=np.float32) * ((n + 1) / 2))
# float16 averages divide before they sum, so the mean of values near float16's largest
# (65504) stays in range: in and out of place, and reduce_scatter's
h16 = np.full(7, 60000, np.float16)
eq(disttrain.allreduce(h16, op="avg"), h16)
eq(disttrain.allreduce_(h16.copy(), op="avg"), h16)
eq(disttrain.reduce_scatter(np.full(2 * n, 60000, np.float16), op="avg"), h16[:2])
# the largest float16 itself: a quotient rounded up would sum to inf on three ranks
if n <= 3:
    top = np.array([65504, -65504], np.float16)
    assert np.all(np.isfinite(disttrain.allreduce(top, op="avg"))), "the mean overflowed"

# broadcast from every root
for root in range(n):
    b = np.full(1000, r, np.int64)
    eq(disttrain.broadcast_(b, root_rank=root), np.full(1000, root))
    eq(disttrain.broadcast(np.array([[r, -r]], np.float64), root), [[root, -root]])

# a root rank that is no int is told so, on this rank at once (no rank waits)
try:
    disttrain.broadcast(np.zeros(2), root_rank=float(n - 1))
    raise AssertionError(f"root_rank={float(n - 1)} was accepted")
except disttrain.UsageError as e:
    assert f"root_rank={float(n - 1)} must be an int" in str(e), e

# allgather: concatenated along axis 0, rank order
g = disttrain.allgather(np.full((2, 3), r, np.int32))
eq(g, np.repeat(np.arange(n, dtype=np.int32), 2)[:, None] * np.ones((1, 3), np.int32))

# reduce_scatter: rank k gets block k of the sum
x = np.arange(4 * n, dtype=np.float64).reshape(2 * n, 2) + r
want = (np.arange(4 * n).reshape(2 * n, 2) * n + n * (n - 1) / 2)[2 * r:2 * r + 2]
eq(disttrain.reduce_scatter(x, op="sum"), want)

# alltoall: block j goes to rank j, stored as block i (the sender)
x = np.array([[100 * r + j] for j in range(n)], np.int64)
eq(disttrain.alltoall(x), np.array([[100 * i + r] for i in range(n)], np.int64))

# many asynchronous operations in flight at once, waited in reverse order
hs = [disttrain.allreduce_async(np.full(4096, i * (r + 1), np.float32), "sum", f"a{i}")
      for i in range(16)]
hs.append(disttrain.broadcast_async_(np.full(10, r, np.int32), root_rank=n - 1))
hs.append(disttrain.allgather_async(np.array([r], np.int64)))
results = [h.wait(timeout=60) for h in reversed(hs)][::-1]
for i in range(16):
    eq(results[i], np.full(4096, i * n * (n + 1) // 2, np.float32))
eq(results[16], np.full(10, n - 1))
eq(results[17], np.arange(n))

# wait(timeout) that runs out leaves the handle valid: rank 0 waits while rank 1 is late
import time  # noqa: E402
if r == 1:
    time.sleep(1.0)
h = disttrain.allreduce_async(np.full(3, r + 1, np.float32), name="late")  # averaged
if r == 0 and n > 1:
    try:
        h.wait(timeout=0.1)
        raise AssertionError("wait(timeout=0.1) returned before rank 1 joined")
    except disttrain.TimeoutError as e:
        assert e.status_name == "DT_ERR_TIMEOUT" and "late" in str(e), e
eq(h.wait(timeout=60), np.full(3, (n + 1) / 2, np.float32))

disttrain.barrier()
disttrain.shutdown()
print("OK", flush=True)
