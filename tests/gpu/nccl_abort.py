#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/gpu/run.sh's abort check: dt_context_abort in the middle of a device allreduce
on the nccl transport returns promptly.

One rank, DISTTRAIN_DEVICE_TRANSPORT=nccl, DISTTRAIN_MEMORY=cuda. A long spin kernel
(torch.cuda._sleep) holds torch's stream, so the allreduce started after it is still
waiting for its producer (the path waits for the event the call recorded) when another
thread aborts the context 0.3 s later. Passes when the wait then fails within a second of
the abort. Prints `nccl-abort: returned after N ms` or raises.
"""
import threading
import time

import torch

import disttrain
import disttrain.torch as dt


def main():
    ctx = disttrain.Context()
    torch.cuda.set_device(0)
    x = torch.ones(1 << 24, device="cuda")
    dt.allreduce_(x, op=dt.Sum, name="warm-up", context=ctx)  # the communicator is up
    torch.cuda._sleep(8_000_000_000)  # several seconds of spinning before the producer's write
    x.fill_(2.0)
    handle = dt.allreduce_async_(x, op=dt.Sum, name="aborted", context=ctx)
    aborted_at = []

    def abort_soon():
        time.sleep(0.3)
        aborted_at.append(time.monotonic())
        ctx.abort()

    threading.Thread(target=abort_soon, daemon=True).start()
    try:
        handle.wait()
        raise AssertionError("the allreduce completed although the context was aborted")
    except disttrain.DisttrainError as e:  # the binding's base error
        waited = (time.monotonic() - aborted_at[0]) * 1000 if aborted_at else -1
        print(f"nccl-abort: returned after {waited:.0f} ms: {type(e).__name__}: {e}")
        if not 0 <= waited < 1000:
            raise AssertionError(f"the aborted allreduce returned {waited:.0f} ms after "
                                 "dt_context_abort, not within a second")
    torch.cuda.synchronize()
    ctx.shutdown()


if __name__ == "__main__":
    main()
