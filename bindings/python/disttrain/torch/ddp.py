# SPDX-License-Identifier: Apache-2.0
"""DistributedDataParallel: a module wrapper in the style of torch's, on libdisttrain.

    model = dt.DistributedDataParallel(Net())      # rank 0's parameters and buffers
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss_fn(model(x), y).backward()                  # gradients averaged when it returns
    opt.step()

At construction rank 0's parameters and buffers are broadcast to every rank. During
backward a hook on each parameter's gradient accumulator fills that parameter's bucket
(buckets.py: one flat buffer per up to bucket_bytes of parameters, in reverse
registration order, which is backward's usual order); a complete bucket starts its
asynchronous allreduce at once, so communication overlaps the rest of backward. The last
bucket, and the waits for the others, run in a callback that autograd calls at the end of
backward (queue_callback, as torch's DDP does), so loss.backward() returns with every
p.grad averaged and any optimizer can step.

Buckets are submitted in bucket order on every rank (a bucket completed early waits for
the ones before it; a parameter that this backward did not reach counts as a zero
gradient and its bucket is submitted at the end), so ordered mode is safe and the
negotiating engine matches them by name ("ddp<k>.grad.<first parameter>+<count>", k
counting the wrappers made over the same context or process set: every rank of it makes
its wrappers in the same order, as their construction is collective anyway).

Each bucket holds its gradients in their parameters' layouts (buckets.py), so a bucket is
reduced right only where every rank lays each parameter out alike. As torch's DDP does,
the construction checks that, with one small allreduce, and fails on every rank, naming the
first parameter that differs; the same allreduce checks that every rank lists the same
parameters (by name) in the same order.

no_sync(): forward passes run inside it skip the reduction of their backward; the
gradients accumulate locally and the next synchronised backward reduces the sum.
"""
import weakref
import zlib
from contextlib import contextmanager

import torch

import disttrain
from disttrain.errors import usage
from disttrain.process_set import resolve
from disttrain.types import Average, Max, to_op

from . import ops
from .buckets import Bucket, bucket_name, layout, plan, start_ready
from .compression import Compression
from .functions import broadcast_parameters
from .optimizer import DEFAULT_BUCKET_BYTES

# Numbers the wrappers made over each context or process set, in creation order, which
# the ranks replicating a model share: two wrapped models reduced in one backward (a
# GAN's loss through both) then never give their buckets the same name. Counted per
# context or set (names are matched per group), so that members of other sets making
# other wrappers do not shift the numbers.
_instances = weakref.WeakKeyDictionary()


def _prefix(collectives):
    n = _instances.get(collectives, 0)
    _instances[collectives] = n + 1
    return f"ddp{n}"


def _accumulator(p):
    """The AccumulateGrad node of p: its hooks run right after p.grad is written
    (torch 1.13 has no register_post_accumulate_grad_hook)."""
    with torch.enable_grad():
        return p.expand_as(p).grad_fn.next_functions[0][0]


def _check_device_ids(module, device_ids):
    """device_ids as torch's DDP takes it: None, or one device that the module is on."""
    if device_ids is None:
        return
    devices = {p.device for p in module.parameters()}
    listed = list(device_ids)
    if len(listed) != 1 or len(devices) > 1:
        raise usage(f"device_ids={device_ids!r}: one process drives one device; pass "
                    f"device_ids=[the device of the module] or leave it out")
    wanted = torch.device(listed[0] if not isinstance(listed[0], int) else
                          f"cuda:{listed[0]}")
    if devices and devices != {wanted}:
        raise usage(f"device_ids={device_ids!r} but the module's parameters are on "
                    f"{devices.pop()}; move the module first (module.to(device))")


class DistributedDataParallel(torch.nn.Module):
    """Wraps `module` for data-parallel training: every rank (of process_set, or of the
    job) starts from rank 0's parameters and buffers, and backward leaves each p.grad
    averaged (op) over the ranks.

    process_set: a disttrain.ProcessSet the module is replicated over (its members only
    construct the wrapper; rank 0 means the set's first rank). context: a Context
    instead of the default one.
    bucket_bytes: gradients are reduced in buckets of up to this many bytes (default
    25 MiB, as torch's bucket_cap_mb=25; 0: one allreduce per parameter).
    broadcast_buffers: rank 0's buffers (BatchNorm running statistics) are copied to
    every rank at each forward in training mode, as torch's DDP does.
    compression: Compression.none, .fp16 or .bf16 for the gradients on the wire.
    device_ids, output_device, find_unused_parameters: accepted as torch's DDP takes them,
    so ported scripts keep their call: the module stays where it is (device_ids, if
    given, must name that one device), and parameters a backward does not reach always
    count as zero gradients.
    """

    def __init__(self, module, process_set=None, context=None,
                 bucket_bytes=DEFAULT_BUCKET_BYTES, broadcast_buffers=True, op=Average,
                 compression=Compression.none, device_ids=None, output_device=None,
                 find_unused_parameters=False):
        super().__init__()
        if not isinstance(module, torch.nn.Module):
            raise usage(f"DistributedDataParallel wraps a torch.nn.Module, got "
                        f"{type(module).__name__}")
        _check_device_ids(module, device_ids)
        if isinstance(bucket_bytes, bool) or not isinstance(bucket_bytes, int) or \
                bucket_bytes < 0:
            raise usage(f"bucket_bytes={bucket_bytes!r}: need an integer >= 0 (0: one "
                        f"allreduce per parameter)")
        self.module = module
        ctx = resolve(context, process_set)
        self._collectives = disttrain.context() if ctx is None else ctx
        self._op = to_op(op)
        self._compression = compression
        self._broadcast_buffers = broadcast_buffers
        self._prefix = _prefix(self._collectives)
        self.require_backward_grad_sync = True
        self._sync_this_pass = False

        broadcast_parameters(module.state_dict(), 0, context=self._collectives)

        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        names = {p: n for n, p in named}
        self._params = [p for _, p in named]
        self._buffers_to_sync = [(n, b) for n, b in module.named_buffers()]
        self._check_layouts(named)
        self._buckets = [Bucket(ps, bucket_name(f"{self._prefix}.grad.{names[ps[0]]}", ps,
                                                names))
                         for ps in plan(list(reversed(self._params)), bucket_bytes)]
        self._bucket_of = {p: b for b in self._buckets for p in b.params}
        self._pending = set()   # parameters whose gradient this backward has not produced
        self._next = 0          # index of the next bucket to submit
        self._started = []      # buckets in flight, in start order
        self._finalizing = False
        self._accumulators = []
        for p in self._params:
            acc = _accumulator(p)
            acc.register_hook(self._make_hook(p))
            self._accumulators.append(acc)  # the node must outlive this loop
        self._reset()

    def _check_layouts(self, named):
        """Fails on every rank where the ranks' parameters differ in name, shape or
        layout, position by position (buckets reduce the parameters in this order, so a
        rank that registered its modules in another order would add up gradients of
        different parameters). One allreduce (max) of each rank's codes (a checksum of
        the name, then the layout) and their negations: a code is the same on every rank
        where its maximum equals its minimum, the negated maximum of its negation."""
        codes = [[zlib.crc32(name.encode("utf-8")), *layout(p)] for name, p in named]
        mine = torch.tensor([len(codes)] + [c for code in codes for c in code],
                            dtype=torch.int64)
        both = torch.cat([mine, -mine])
        ops.allreduce_(both, op=Max, name=f"{self._prefix}.layouts",
                       context=self._collectives)
        differs = (both[:len(mine)] != -both[len(mine):]).nonzero()
        if len(differs) == 0:
            return
        at = int(differs[0]) - 1  # past the number of parameters
        for i, ((name, p), code) in enumerate(zip(named, codes)):
            if at == 0:
                raise usage(f"parameter {i} is {name!r} on this rank but another "
                            f"parameter on another rank; DistributedDataParallel reduces "
                            f"the gradients in parameter order, so every rank must list "
                            f"the same parameters in the same order (build the model the "
                            f"same way on every rank, registering its modules in the "
                            f"same order)")
            if 0 <= at < len(code):
                raise usage(f"parameter {name!r} (shape {tuple(p.shape)}, strides "
                            f"{p.stride()} on this rank) has another shape or layout "
                            f"on another rank; DistributedDataParallel reduces gradients as "
                            f"flat memory, so every rank must hold each parameter in the "
                            f"same layout (the same module.to(memory_format=...) on every "
                            f"rank)")
            at -= len(code)
        raise usage("the ranks' modules have different numbers of parameters; every rank "
                    "must wrap the same model")

    # -- forward ----------------------------------------------------------------------
    def forward(self, *args, **kwargs):
        self._sync_this_pass = self.require_backward_grad_sync and \
            torch.is_grad_enabled()
        if self.training and self._broadcast_buffers and self._buffers_to_sync and \
                self._collectives.size() > 1:
            broadcast_parameters(self._buffers_to_sync, 0, context=self._collectives)
        return self.module(*args, **kwargs)

    @contextmanager
    def no_sync(self):
        """Backward passes of forward passes run inside this block accumulate their
        gradients locally; the first synchronised backward after it reduces the sum."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    # -- backward ---------------------------------------------------------------------
    def _make_hook(self, p):
        bucket = self._bucket_of[p]

        def hook(*_):
            if not self._sync_this_pass or p not in self._pending:
                return
            if not self._finalizing:
                # The first gradient of this backward: have autograd call us at its end.
                self._finalizing = True
                torch.autograd.Variable._execution_engine.queue_callback(self._finish)
            self._pending.discard(p)
            bucket.gather(p)
            bucket.waiting -= 1
            if bucket.waiting == 0:
                self._start_ready()
        return hook

    def _start_ready(self):
        """Starts the complete buckets that are next in order, except the last one, which
        _finish reduces with one blocking call (backward is over by then)."""
        self._next = start_ready(self._buckets, self._next, self._started,
                                   self._compression, self._op, self._collectives)

    def _finish(self):
        """End of backward: submits what is left (parameters backward did not reach
        count as zero gradients) and waits for every bucket."""
        try:
            for bucket in self._buckets[self._next:]:
                for p in bucket.params:
                    if p in self._pending:
                        bucket.gather(p)
                bucket.waiting = 0
            self._start_ready()
            self._buckets[-1].run(self._compression, self._op, self._collectives)
            for bucket in self._started:
                bucket.finish(self._compression)
        finally:
            self._reset()

    def _reset(self):
        for bucket in self._started:
            bucket.reset()  # dropping a Handle waits for its request
        for bucket in self._buckets:
            bucket.reset()
        self._started = []
        self._next = 0
        self._pending = set(self._params)
        self._finalizing = False
        self._sync_this_pass = False
