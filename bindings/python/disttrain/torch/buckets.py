# SPDX-License-Identifier: Apache-2.0
"""Gradient buckets of DistributedOptimizer: one flat buffer per group of parameters,
reduced with one allreduce once backward has produced every gradient in it.

Why buckets: each collective costs a negotiation and a few round trips between ranks, and
on a busy host every round trip waits for the peer to be scheduled. Reducing a model's
gradients as a few large buffers instead of one small collective per tensor cuts those
waits, as DistributedDataParallel's 25 MiB buckets do.

Why gradients live in the buffer: after the first step each p.grad is set to a view of
its bucket, so autograd accumulates straight into the buffer (p.grad += new, in place)
and the reduced result is already p.grad: no copy in, no copy out. A gradient that is not
the view (the first step, or after zero_grad(set_to_none=True)) is copied in once and
p.grad is pointed at the view again after the reduction.

Why views keep their parameter's layout: autograd lays a gradient out as its parameter
(channels_last, transposed: its layout contract), and accumulating into a view of
another layout is a strided add, which torch warns may impair performance. So the bucket
holds each gradient in its parameter's memory order, and an elementwise reduction of
the flat buffer is right only where every rank lays each parameter out alike, as torch's
DDP requires too. DistributedDataParallel checks that at construction; every bucket that
holds a parameter that is not row-major also carries a checksum of its layouts in its
name, so ranks that differ never reduce mismatched memory together.
"""
import zlib

import torch

from . import ops


def plan(params, bucket_bytes):
    """Groups params (in the order given: backward's usual order) into lists of one dtype
    and device
    whose sizes add up to at most bucket_bytes (a larger tensor gets a bucket of its
    own). bucket_bytes=0: one bucket per tensor."""
    buckets, current, current_bytes = [], [], 0
    for p in params:
        nbytes = p.numel() * p.element_size()
        fits = current and current[0].dtype == p.dtype and \
            current[0].device == p.device and current_bytes + nbytes <= bucket_bytes
        if current and not fits:
            buckets.append(current)
            current, current_bytes = [], 0
        current.append(p)
        current_bytes += nbytes
    if current:
        buckets.append(current)
    return buckets


def grad_strides(p):
    """The strides of p's gradient in its bucket: p's own where p's memory is dense in
    some order of its dimensions (contiguous, channels_last, transposed), as autograd
    makes p.grad; otherwise row-major, as autograd makes it then."""
    step = 1
    for stride, size in sorted((st, n) for n, st in zip(p.shape, p.stride()) if n > 1):
        if stride != step:
            return _row_major(p.shape)
        step *= size
    return tuple(p.stride())


def _row_major(shape):
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def _order(shape, strides):
    """The strides that set a memory order: a dimension of size 1 has none (its stride,
    which may be anything, counts as 0)."""
    return [st if n > 1 else 0 for n, st in zip(shape, strides)]


def layout(p):
    """p's shape and gradient layout as one list of ints, the same on two ranks exactly
    when their buckets hold p's gradient in the same memory order."""
    return [p.dim(), *p.shape, *_order(p.shape, grad_strides(p))]


def bucket_name(base, params, names=None):
    """"<base>+<count>", followed by a checksum of the parameters' names (names: the
    name of each parameter, where the bucket holds more than one) and by one of the
    gradients' layouts where one of them is not row-major: ranks that list their
    parameters in another order (modules registered in another order) or lay them out
    otherwise then submit differently named buckets, which never reduce together (a
    bucket of the same first parameter and count would otherwise add up one rank's
    gradient of a parameter with another's of another parameter of the same shape)."""
    name = f"{base}+{len(params)}"
    if names is not None and len(params) > 1:
        listed = "\0".join(names[p] for p in params)
        name = f"{name}~{zlib.crc32(listed.encode('utf-8')):08x}"
    if all(_order(p.shape, grad_strides(p)) == _order(p.shape, _row_major(p.shape))
           for p in params):
        return name
    return f"{name}@{zlib.crc32(repr([layout(p) for p in params]).encode()):08x}"


def start_ready(buckets, next_index, started, compression, op, collectives):
    """Starts the complete buckets from next_index on, in order, except the last one
    (the owner reduces it once backward is over); appends them to started and returns
    the index of the next bucket to start. Buckets go in the same order on every rank."""
    last = len(buckets) - 1
    while next_index < last and buckets[next_index].waiting == 0:
        buckets[next_index].start(compression, op, collectives)
        started.append(buckets[next_index])
        next_index += 1
    return next_index


class Bucket:
    """One flat buffer, the views that are its parameters' gradients, and the allreduce
    in flight (if any)."""

    def __init__(self, params, name):
        self.params = params
        self.name = name
        # On the parameters' device: CUDA parameters get a CUDA bucket, which the library
        # stages through pinned host memory (DISTTRAIN_MEMORY=cuda).
        self.flat = torch.zeros(sum(p.numel() for p in params), dtype=params[0].dtype,
                                device=params[0].device)
        self.views = {}
        offset = 0
        for p in params:
            self.views[p] = self.flat.as_strided(p.shape, grad_strides(p), offset)
            offset += p.numel()
        self.waiting = len(params)  # gradients not yet produced this step
        self.handle = None
        self.wire = None            # the tensor on the wire (flat, or its compressed copy)
        self.cctx = None

    def reset(self):
        self.waiting = len(self.params)
        self.handle = self.wire = self.cctx = None

    def gather(self, p):
        """Makes the bucket hold p's gradient (zeros where backward produced none)."""
        view = self.views[p]
        grad = p.grad
        if grad is None:
            view.zero_()
        elif grad.data_ptr() != view.data_ptr() or grad.stride() != view.stride():
            view.copy_(grad.detach())

    def start(self, compression, op, context):
        """Starts the allreduce of the whole bucket."""
        wire, self.cctx = compression.compress(self.flat)
        self.wire = wire
        self.handle = ops.allreduce_async_(wire, op=op, name=self.name, context=context)

    def run(self, compression, op, context):
        """Reduces the whole bucket now (blocking) and makes every p.grad its view."""
        wire, cctx = compression.compress(self.flat)
        try:
            ops.allreduce_(wire, op=op, name=self.name, context=context)
        finally:
            self.reset()
        self._unpack(compression.decompress(wire, cctx))

    def finish(self, compression):
        """Waits for the allreduce and makes every p.grad the bucket's reduced view."""
        try:
            self.handle.wait()
            out = compression.decompress(self.wire, self.cctx)
        finally:
            self.reset()
        self._unpack(out)

    def _unpack(self, out):
        if out.data_ptr() != self.flat.data_ptr():
            self.flat.copy_(out)
        for p in self.params:
            view = self.views[p]
            if p.grad is None or p.grad.data_ptr() != view.data_ptr() or \
                    p.grad.stride() != view.stride():
                p.grad = view
