"""DistributedOptimizer: data-parallel gradient averaging overlapped with backward.

As in Horovod, the wrapper is a subclass of the wrapped optimizer's own class (so
isinstance checks and learning-rate schedulers keep working). A hook on each parameter's
gradient accumulator starts an asynchronous allreduce of that gradient as soon as
backward has produced it; step() first waits for all of them (synchronize()).

Ordering: today's engine runs operations in the order they are submitted and needs every
rank to submit the same collectives in the same order. Backward visits the same model in
the same order on every rank, so hooks submit in a stable order; gradients a backward
pass did not produce are submitted in synchronize() in parameter order. Names are the
parameter names ("grad.<name>"), identical on every rank.
"""
import warnings
from contextlib import contextmanager

import torch

import disttrain
from disttrain.errors import usage
from disttrain.types import Average, to_op

from . import ops
from .compression import Compression


class _DistributedOptimizer(torch.optim.Optimizer):
    def __init__(self, params, named_parameters, compression, backward_passes_per_step,
                 op, context):
        super(self.__class__, self).__init__(params)
        self._dt_context = disttrain.context() if context is None else context
        self._compression = compression
        self._op = to_op(op)
        self._passes = backward_passes_per_step
        self._names = _parameter_names(self.param_groups, named_parameters)
        # Stable submission order for the gradients backward did not produce.
        self._order = [p for g in self.param_groups for p in g["params"]
                       if p.requires_grad]
        self._handles = {}   # param -> (Handle, tensor on the wire, compression ctx)
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
        def hook(*_):
            if p in self._handles:
                raise AssertionError(
                    f"the gradient of {self._names[p]!r} was computed more than "
                    f"backward_passes_per_step={self._passes} times before step(); raise "
                    f"backward_passes_per_step to accumulate gradients locally")
            self._delay[p] -= 1
            if self._delay[p] == 0:
                self._handles[p] = self._allreduce_grad_async(p)
        return hook

    def _allreduce_grad_async(self, p):
        if p.grad is None:
            p.grad = torch.zeros_like(p, memory_format=torch.contiguous_format)
        grad = p.grad.detach()
        wire, cctx = self._compression.compress(grad)
        if wire is grad and not grad.is_contiguous():
            wire = grad.contiguous()  # reduced here, copied back in synchronize()
        handle = ops.allreduce_async_(wire, op=self._op, name="grad." + self._names[p],
                                      context=self._dt_context)
        return handle, wire, cctx

    # -- synchronisation --------------------------------------------------------------
    def synchronize(self):
        """Waits for every gradient allreduce of this step (starting those a backward
        pass did not produce) and writes the results into p.grad."""
        for p in self._order:
            if p not in self._handles:
                self._handles[p] = self._allreduce_grad_async(p)
        try:
            for p, (handle, wire, cctx) in self._handles.items():
                handle.wait()
                out = self._compression.decompress(wire, cctx)
                if out.data_ptr() != p.grad.data_ptr():
                    p.grad.copy_(out)
        finally:
            self._handles.clear()
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
        if self._handles:
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
                         compression=Compression.none, op=Average, context=None):
    """Wraps `optimizer` so that step() applies gradients averaged (op) over all ranks.

    named_parameters: model.named_parameters(); the names identify each gradient across
    ranks (without it, positions in param_groups are used).
    backward_passes_per_step: gradients are accumulated locally over this many backward
    passes and reduced once (as in Horovod, they are summed, not divided by it).
    compression: Compression.none, .fp16 or .bf16 for the gradients on the wire.
    """
    if isinstance(backward_passes_per_step, bool) or \
            not isinstance(backward_passes_per_step, int) or backward_passes_per_step < 1:
        raise usage(f"backward_passes_per_step={backward_passes_per_step!r}: need an "
                    f"integer >= 1")
    cls = type(optimizer.__class__.__name__, (optimizer.__class__,),
               dict(_DistributedOptimizer.__dict__))
    wrapped = cls(optimizer.param_groups, named_parameters, compression,
                  backward_passes_per_step, op, context)
    if optimizer.state:
        wrapped.load_state_dict(optimizer.state_dict())
    return wrapped
