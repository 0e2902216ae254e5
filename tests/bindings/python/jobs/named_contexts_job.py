# SPDX-License-Identifier: Apache-2.0
"""Two threads of each rank create a named context each, the ranks in opposite orders:
each context meets the one of its name, so each thread's sums are its own."""
import os
import threading
import time

import numpy as np

import disttrain

rank = int(os.environ["DISTTRAIN_RANK"])
results = {}


def work(index):
    # Rank 0 creates "a" first, rank 1 "b" first.
    time.sleep(0.05 * (index if rank == 0 else 1 - index))
    name = "ab"[index]
    with disttrain.Context(name=name, timeout=30) as ctx:
        x = np.full(8, 100 * (index + 1) + ctx.rank(), np.int64)
        results[name] = ctx.allreduce(x, op="sum")


threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
for t in threads:
    t.start()
for t in threads:
    t.join()
for index, name in enumerate("ab"):
    np.testing.assert_array_equal(results[name], np.full(8, 2 * 100 * (index + 1) + 1))
print(f"[{rank}] OK", flush=True)
