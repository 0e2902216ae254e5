#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The memory-bandwidth bound of an allreduce on one host, measured: every rank copies
the message once (memcpy through numpy, from rotating buffers as the allreduce
benchmarks use), all ranks at once, each pinned to its own CPU where they fit.

A rank of an allreduce must at least read its input and write its result, one copy's
traffic, while the other ranks do the same on the same memory: so the time of this copy
is a floor for the allreduce's, and size / time the busbw it could reach (for 2 ranks
busbw = size / time; for n, busbw = 2 (n-1)/n size / time). It prints rows in
disttrain-perf's --csv format (10 fields), so compare_allreduce.py reads it as it reads
the two programs, and it alternates with them. Python's loop costs a microsecond or so
per copy: below 64 KiB the figures bound nothing.

  /usr/bin/python3 tests/bench/copy_bound.py --ranks 2 -b 64K -e 64M -f 4 -n 200 -w 20
"""
import argparse
import multiprocessing as mp
import os
import time

import numpy as np


def size_arg(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper()
    if text and text[-1] in units:
        return int(text[:-1]) * units[text[-1]]
    return int(text)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("-b", "--minbytes", type=size_arg, default=size_arg("64K"))
    p.add_argument("-e", "--maxbytes", type=size_arg, default=size_arg("64M"))
    p.add_argument("-f", "--stepfactor", type=int, default=4)
    p.add_argument("-n", "--iters", type=int, default=200)
    p.add_argument("-w", "--warmup", type=int, default=20)
    p.add_argument("--rotate", type=size_arg, default=size_arg("64M"),
                   help="smallest working set of the rotating buffers (as disttrain-perf)")
    a = p.parse_args(argv)
    if a.ranks < 1 or a.minbytes < 1 or a.maxbytes < a.minbytes or a.stepfactor < 2:
        p.error("need --ranks >= 1, 1 <= -b <= -e and -f >= 2")
    return a


def sizes(a):
    s = a.minbytes
    while s <= a.maxbytes:
        yield s
        s *= a.stepfactor


def worker(rank, a, barrier, times):
    cpus = os.cpu_count() or 1
    if a.ranks <= cpus:
        os.sched_setaffinity(0, {rank})
    # Touched once before any timing, as the benchmarks touch theirs: a first touch
    # costs a page fault per page, which is no part of the copy.
    total = max(a.rotate, a.maxbytes)
    src = np.empty(total, dtype=np.uint8)
    dst = np.empty(total, dtype=np.uint8)
    src.fill(1)
    dst.fill(0)
    for size in sizes(a):
        slots = max(1, a.rotate // size)
        for i in range(a.warmup):
            k = (i % slots) * size
            np.copyto(dst[k:k + size], src[k:k + size])
        barrier.wait()
        start = time.perf_counter()
        for i in range(a.iters):
            k = (i % slots) * size
            np.copyto(dst[k:k + size], src[k:k + size])
        elapsed = time.perf_counter() - start
        barrier.wait()
        times[rank] = elapsed / a.iters
        barrier.wait()
        if rank == 0:
            t = max(times[:a.ranks])  # the slowest rank ends the collective
            algbw = size / t / 1e9
            busbw = algbw * (2 * (a.ranks - 1) / a.ranks if a.ranks > 1 else 1)
            print(f"copy,{size},{size // 4},float32,sum,-1,{t * 1e6:.3f},{algbw:.3f},"
                  f"{busbw:.3f},0", flush=True)
        barrier.wait()


def main():
    a = parse_args()
    barrier = mp.Barrier(a.ranks)
    times = mp.Array("d", a.ranks, lock=False)
    procs = [mp.Process(target=worker, args=(r, a, barrier, times)) for r in range(a.ranks)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    return max(abs(p.exitcode) for p in procs)


if __name__ == "__main__":
    raise SystemExit(main())
