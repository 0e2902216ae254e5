# SPDX-License-Identifier: Apache-2.0
"""Ctrl-C while a collective waits: rank 0 gets SIGINT while it waits for an allreduce
that rank 1 never submits (rank 1 waits in another). Rank 0 must get KeyboardInterrupt
within a moment, and rank 1 an error as promptly, both long before DISTTRAIN_TIMEOUT."""
import os
import signal
import threading
import time

import numpy as np

import disttrain

disttrain.init(timeout=60)
r = disttrain.rank()
disttrain.allreduce(np.ones(4, np.float32), name="warm")
start = time.monotonic()
try:
    if r == 0:
        threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
    disttrain.allreduce(np.ones(4, np.float32), name=f"never.{r}")
    raise AssertionError("the allreduce completed")
except KeyboardInterrupt:
    assert r == 0, "KeyboardInterrupt on the rank that was not interrupted"
    what = "KeyboardInterrupt"
except disttrain.PeerLostError:
    assert r == 1, "PeerLostError on the interrupted rank"
    what = "PeerLostError"
elapsed = time.monotonic() - start
assert elapsed < 15, f"{what} after {elapsed:.1f} s"
disttrain.shutdown()  # the interrupted rank's request is not waited for
assert time.monotonic() - start < 20, "shutdown waited"
print(f"OK {what} after {elapsed:.1f} s", flush=True)
