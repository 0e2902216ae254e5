#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/gpu/run.sh's abort check: dt_context_abort while a device allreduce on the nccl
transport is pending.

One rank, DISTTRAIN_DEVICE_TRANSPORT=nccl, DISTTRAIN_MEMORY=cuda. A spin kernel of about
3 s (torch.cuda._sleep) holds torch's stream, so the allreduce started after it is queued
on the GPU behind its producer when another thread aborts the context 0.3 s later.

The NCCL launch waits for its producer on the GPU (wait_event), so once queued it cannot
be withdrawn: ncclCommAbort returns when the GPU is past it, and only then does the
request fail, so that no kernel of the library writes into a buffer whose request has
already failed. Passes when
- dt_context_abort itself returns within 0.1 s,
- the wait fails, with DT_ERR_ABORTED, within a second of the later of the abort and the
  end of the producer's spin (never after DISTTRAIN_TIMEOUT),
- the tensor holds either its input or the sum (a one-rank sum is the input).
Prints `nccl-abort: ...` lines with the times, or raises.
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
    torch.cuda.synchronize()
    torch.cuda._sleep(3_000_000_000)  # seconds of spinning before the producer's write
    spun = torch.cuda.Event()
    spun.record()
    x.fill_(2.0)
    handle = dt.allreduce_async_(x, op=dt.Sum, name="aborted", context=ctx)
    times = {}

    def abort_soon():
        time.sleep(0.3)
        times["abort"] = time.monotonic()
        ctx.abort()
        times["abort returned"] = time.monotonic()

    def spin_end():
        spun.synchronize()
        times["spin ended"] = time.monotonic()

    threads = [threading.Thread(target=f, daemon=True) for f in (abort_soon, spin_end)]
    for t in threads:
        t.start()
    try:
        handle.wait()
        raise AssertionError("the allreduce completed although the context was aborted")
    except disttrain.DisttrainError as e:  # the binding's base error
        failed_at = time.monotonic()
        error = e
    for t in threads:
        t.join(timeout=30)
    abort_call = (times["abort returned"] - times["abort"]) * 1000
    since_abort = (failed_at - times["abort"]) * 1000
    since_spin = (failed_at - times["spin ended"]) * 1000
    print(f"nccl-abort: dt_context_abort returned in {abort_call:.1f} ms; the wait failed "
          f"{since_abort:.0f} ms after it and {since_spin:.0f} ms after the producer's spin "
          f"ended: {type(error).__name__}: {error}")
    if abort_call >= 100:
        raise AssertionError(f"dt_context_abort took {abort_call:.0f} ms")
    if "DT_ERR_ABORTED" not in str(error):
        raise AssertionError(f"the wait failed with something else than DT_ERR_ABORTED: {error}")
    if min(since_abort, since_spin) >= 1000:
        raise AssertionError("the aborted allreduce failed more than a second after both the "
                             "abort and the end of the GPU work ahead of it")
    torch.cuda.synchronize()
    value = float(x[0])
    print(f"nccl-abort: the tensor holds {value} (its input, or the one-rank sum)")
    if value != 2.0:
        raise AssertionError(f"the aborted allreduce left {value} in its tensor, not 2.0")
    ctx.shutdown()


if __name__ == "__main__":
    main()
