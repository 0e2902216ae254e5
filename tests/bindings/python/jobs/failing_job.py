# SPDX-License-Identifier: Apache-2.0
"""Rank 1 dies before the allreduce that rank 0 is waiting in."""
import sys

import numpy as np

import disttrain

disttrain.init(timeout=30)
if disttrain.rank() == 1:
    print("rank 1 gives up", flush=True)
    sys.exit(3)
disttrain.allreduce(np.ones(10, np.float32))
print("rank 0 should not get here", flush=True)
