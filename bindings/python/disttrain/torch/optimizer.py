# SPDX-License-Identifier: Apache-2.0
"""DistributedOptimizer: data-parallel gradient averaging overlapped with backward.

As in Horovod, the wrapper is a subclass of the wrapped optimizer's own class (so
isinstance checks and learning-rate schedulers keep working). A hook on each parameter's
gradient accumulator counts the gradients backward has produced; as soon as every
gradient of a bucket (buckets.py: up to bucket_bytes of parameters, in reverse parameter
order, which is backward's usual order) is there, an asynchronous allreduce of the whole
bucket starts. step() first waits for all of them (synchronize()).

The last bucket (the first layers, whose gradients backward produces last) is not started
from a hook but reduced by synchronize() with one blocking call: backward is over by then,
and a blocking collective wakes the engine at once (an asynchronous one waits for its
next cycle) or, in ordered mode, runs on this thread with no handoff at all. A model that
fits one bucket (the default 25 MiB) therefore costs one foreign call per step.

Ordering: buckets are always submitted in bucket order (a bucket completed early waits
for the ones before it), and a backward pass that leaves a bucket incomplete has it
submitted in synchronize(), still in order. So every rank submits the same collectives in
the same order whatever its graph did, which ordered mode (disttrain.init(ordered=True),
DISTTRAIN_ORDERED=1) requires; the negotiating engine matches them by name
("grad.<first parameter name>+<count>", identical on every rank, followed by a checksum
of the bucket's parameter names, so that ranks listing their parameters in another order
never reduce one parameter's gradient with another's, and by one of the gradients'
layouts where one is not row-major: buckets.py).
"""
import warnings
from contextlib import contextmanager

import torch

import disttrain
from disttrain.errors import usage
from disttrain.types import Average, to_op

from .buckets import Bucket, bucket_name, plan, start_ready
from .compression import Compression

# As DistributedDataParallel's bucket_cap_mb=25: a few large collectives per step.
DEFAULT_BUCKET_BYTES = 25 << 20


class _DistributedOptimizer(torch.optim.Optimizer):
    def __init__(self, params, named_parameters, compression, backward_passes_per_step,
                 op, context, bucket_bytes):
        super(self.__class__, self).__init__(params)
        self._dt_context = disttrain.context() if context is None else context
        self._compression = compression
        self._op = to_op(op)
        self._passes = backward_passes_per_step
        self._names = _parameter_names(self.param_groups, named_parameters)
        self._order = [p for g in self.param_groups for p in g["params"]
                       if p.requires_grad]
        # Reverse parameter order: the last layers' gradients come first in backward.
        self._buckets = [
            Bucket(ps, bucket_name(f"grad.{self._names[ps[0]]}", ps, self._names))
            for ps in plan(list(reversed(self._order)), bucket_bytes)]
        self._bucket_of = {p: b for b in self._buckets for p in b.params}
        self._next = 0       # index of the next bucket to submit
        self._started = []   # buckets whose allreduce is in flight, in start order
        self._delay = {p: self._passes for p in self._order}
        self._synchronized = False
        self._should_synchronize = True
        self._grad_accs = []
        self._register_hooks()

    # -- hooks ------------------------------------------------------------------------
    def _register_hooks(self):
        for p in self._order:
            # The AccumulateGrad node of p: its hook runs right after p.grad is written.
            # (torch 1.13 has no register_post_accumulate_grad_hook.) enable_grad: the
            # wrapper may be built under torch.no_grad(), where expand_as has no grad_fn.
            with torch.enable_grad():
                p_tmp = p.expand_as(p)
            grad_acc = p_tmp.grad_fn.next_functions[0][0]
            grad_acc.register_hook(self._make_hook(p))
            self._grad_accs.append(grad_acc)  # the node must outlive this loop

    def _make_hook(self, p):
        bucket = self._bucket_of[p]

        def hook(*_):
            if self._delay[p] == 0:
                raise AssertionError(
                    f"the gradient of {self._names[p]!r} was computed more than "
                    f"backward_passes_per_step={self._passes} times before step(); raise "
                    f"backward_passes_per_step to accumulate gradients locally")
            self._delay[p] -= 1
            if self._delay[p] == 0:
                bucket.gather(p)
                bucket.waiting -= 1
                if bucket.waiting == 0:
                    self._start_ready()
        return hook

    def _start_ready(self):
        """Starts the complete buckets that are next in order, except the last one."""
        self._next = start_ready(self._buckets, self._next, self._started,
                                   self._compression, self._op, self._dt_context)

    # -- synchronisation --------------------------------------------------------------
    def synchronize(self):
        """Waits for every gradient allreduce of this step (starting those a backward
        pass did not complete) and makes p.grad the averaged gradients."""
        try:
            for bucket in self._buckets[self._next:]:
                for p in bucket.params:
                    if self._delay[p] != 0:
                        bucket.gather(p)
                        self._delay[p] = 0
                bucket.waiting = 0
            self._start_ready()
            if self._buckets:
                self._buckets[-1].run(self._compression, self._op, self._dt_context)
            for bucket in self._started:
                bucket.finish(self._compression)
        finally:
            for bucket in self._started:
                bucket.reset()  # dropping a Handle waits for its request
            self._started.clear()
            for bucket in self._buckets:
                bucket.reset()
            self._next = 0
            for p in self._order:
                self._delay[p] = self._passes
        self._synchronized = True

    @contextmanager
    def skip_synchronize(self):
        """For `opt.synchronize(); clip(...); with opt.skip_synchronize(): opt.step()`."""
        self._should_synchronize = False
        try:
            yield
        finally:
            self._should_synchronize = True

    def step(self, closure=None):
        if self._should_synchronize:
            if self._synchronized:
                warnings.warn("optimizer.step() called after optimizer.synchronize() "
                              "without skip_synchronize(): gradients are reduced again; "
                              "wrap step() in `with optimizer.skip_synchronize():`")
            self.synchronize()
        self._synchronized = False
        return super(self.__class__, self).step(closure)

    def zero_grad(self, *args, **kwargs):
        if self._started or any(d == 0 for d in self._delay.values()):
            raise AssertionError(
                "optimizer.zero_grad() was called after loss.backward() but before "
                "optimizer.step() or optimizer.synchronize(); call zero_grad() before "
                "backward, or step() first")
        return super(self.__class__, self).zero_grad(*args, **kwargs)


def _parameter_names(param_groups, named_parameters):
    params = [p for g in param_groups for p in g["params"]]
    if named_parameters is None:
        # Same model, same parameter order on every rank: positional names agree.
        return {p: f"param.{i}" for i, p in enumerate(params)}
    named = list(named_parameters)
    if any(not (isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], str))
           for x in named):
        raise usage("named_parameters must be (name, parameter) pairs, as given by "
                    "model.named_parameters()")
    names = {}
    seen = set()
    for name, p in named:
        if name in seen:
            raise usage(f"parameter name {name!r} appears twice in named_parameters; "
                        f"names identify gradients across ranks and must be unique")
        seen.add(name)
        names.setdefault(p, name)
    missing = [i for i, p in enumerate(params) if p not in names]
    if missing:
        raise usage(f"named_parameters does not cover every parameter of the optimizer "
                    f"(positions {missing[:10]} in param_groups are missing); pass "
                    f"model.named_parameters() of the model whose parameters the "
                    f"optimizer updates")
    return names


def DistributedOptimizer(optimizer, named_parameters=None, backward_passes_per_step=1,
                         compression=Compression.none, op=Average, context=None,
                         bucket_bytes=DEFAULT_BUCKET_BYTES):
    """Wraps `optimizer` so that step() applies gradients averaged (op) over all ranks.

    named_parameters: model.named_parameters(); the names identify each gradient across
    ranks (without it, positions in param_groups are used).
    backward_passes_per_step: gradients are accumulated locally over this many backward
    passes and reduced once (as in Horovod, they are summed, not divided by it).
    compression: Compression.none, .fp16 or .bf16 for the gradients on the wire.
    bucket_bytes: gradients are reduced in buckets of up to this many bytes, each as
    soon as backward has produced all of its gradients (0: one allreduce per tensor).
    p.grad becomes a view of its bucket after the first step.
    """
    if isinstance(backward_passes_per_step, bool) or \
            not isinstance(backward_passes_per_step, int) or backward_passes_per_step < 1:
        raise usage(f"backward_passes_per_step={backward_passes_per_step!r}: need an "
                    f"integer >= 1")
    if isinstance(bucket_bytes, bool) or not isinstance(bucket_bytes, int) or \
            bucket_bytes < 0:
        raise usage(f"bucket_bytes={bucket_bytes!r}: need an integer >= 0 (0: one "
                    f"allreduce per gradient tensor)")
    cls = type(optimizer.__class__.__name__, (optimizer.__class__,),
               dict(_DistributedOptimizer.__dict__))
    wrapped = cls(optimizer.param_groups, named_parameters, compression,
                  backward_passes_per_step, op, context, bucket_bytes)
    if optimizer.state:
        wrapped.load_state_dict(optimizer.state_dict())
    return wrapped
