# SPDX-License-Identifier: Apache-2.0
"""SyncBatchNorm: batch normalisation over the batch of every rank, as torch's own.

In training mode the forward pass allreduces (sum) each channel's sample count, sum and
sum of squares (in float64, so that var = E[x^2] - E[x]^2 loses nothing that matters at
float32), normalises with the global mean and biased variance, and updates the running
statistics with the unbiased one. The backward pass (a torch.autograd.Function) needs
two more global sums per channel, of dy and of dy * x_hat, because every sample's output
depends on the whole global batch:

    dx = weight * invstd * (dy - sum(dy) / N - x_hat * sum(dy * x_hat) / N)

where the sums and N run over every rank's batch. dweight and dbias are this rank's sums
(as in torch's SyncBatchNorm): the data-parallel gradient averaging adds up the ranks'.
In eval mode (or with a single rank) it is plain batch normalisation with the local or
running statistics. Every rank must run the same SyncBatchNorm layers in the same order.
"""
import torch
import torch.nn.functional as F

import disttrain
from disttrain.errors import usage
from disttrain.process_set import resolve
from disttrain.types import Sum

from . import ops

# The names of the layers' collectives. One name for every layer: each call blocks until
# done, so one layer's is never in flight beside another's, and ranks that made other
# models (an extra evaluation copy) still agree. Ranks that run the layers in different
# orders are told so by the engine whenever the layers' channel counts differ.
STATS_NAME = "syncbn.stats"
GRAD_NAME = "syncbn.grad"


def _per_channel(x):
    """x as (channels, samples): channel is dim 1, every other dim is a sample."""
    return x.transpose(0, 1).reshape(x.shape[1], -1)


def _broadcastable(v, x):
    """A per-channel vector shaped to broadcast against x (N, C, ...)."""
    return v.reshape((1, -1) + (1,) * (x.dim() - 2))


class _SyncBatchNormFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, running_mean, running_var, eps, momentum,
                collectives):
        xc = _per_channel(x.detach())
        local = torch.cat([torch.full((1,), float(xc.shape[1]), dtype=torch.float64,
                                      device=x.device),
                           xc.sum(1, dtype=torch.float64),
                           (xc.to(torch.float64) ** 2).sum(1)])
        ops.allreduce_(local, op=Sum, name=STATS_NAME, context=collectives)
        channels = xc.shape[0]
        count = local[0]
        if count.item() < 2:
            raise usage(f"SyncBatchNorm needs more than one value per channel across the "
                        f"ranks in training mode, got input of shape {tuple(x.shape)} "
                        f"on this rank and {int(count.item())} in all")
        mean = local[1:1 + channels] / count
        var = (local[1 + channels:] / count - mean * mean).clamp_(min=0)
        if running_mean is not None:
            with torch.no_grad():
                unbiased = var * (count / (count - 1))
                running_mean.mul_(1 - momentum).add_(mean.to(running_mean.dtype),
                                                     alpha=momentum)
                running_var.mul_(1 - momentum).add_(unbiased.to(running_var.dtype),
                                                    alpha=momentum)
        invstd = torch.rsqrt(var + eps).to(x.dtype)
        mean = mean.to(x.dtype)
        x_hat = (x - _broadcastable(mean, x)) * _broadcastable(invstd, x)
        y = x_hat
        if weight is not None:
            y = y * _broadcastable(weight, x) + _broadcastable(bias, x)
        ctx.save_for_backward(x_hat, weight, invstd)
        ctx.count = count.item()
        ctx.collectives = collectives
        return y

    @staticmethod
    def backward(ctx, dy):
        x_hat, weight, invstd = ctx.saved_tensors
        dy = dy.contiguous()
        sum_dy = _per_channel(dy).sum(1)
        sum_dy_xhat = _per_channel(dy * x_hat).sum(1)
        grad_weight = grad_bias = None
        if weight is not None:
            grad_weight, grad_bias = sum_dy_xhat.clone(), sum_dy.clone()
        grad_x = None
        if ctx.needs_input_grad[0]:
            sums = torch.cat([sum_dy, sum_dy_xhat]).to(torch.float64)
            ops.allreduce_(sums, op=Sum, name=GRAD_NAME, context=ctx.collectives)
            channels = sum_dy.shape[0]
            mean_dy = (sums[:channels] / ctx.count).to(dy.dtype)
            mean_dy_xhat = (sums[channels:] / ctx.count).to(dy.dtype)
            scale = invstd if weight is None else invstd * weight
            grad_x = _broadcastable(scale, dy) * (
                dy - _broadcastable(mean_dy, dy) - x_hat * _broadcastable(mean_dy_xhat, dy))
        return grad_x, grad_weight, grad_bias, None, None, None, None, None


class SyncBatchNorm(torch.nn.modules.batchnorm._BatchNorm):
    """torch.nn.BatchNorm{1,2,3}d whose training-mode statistics are those of the
    batches of every rank (of process_set, or of the job). Input: (N, C, ...)."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, process_set=None, context=None, device=None,
                 dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats,
                         device=device, dtype=dtype)
        self.process_set = process_set
        self.context = context

    def _check_input_dim(self, x):
        if x.dim() < 2:
            raise usage(f"SyncBatchNorm expects input of shape (N, C, ...), got "
                        f"{x.dim()}D input")

    def _collectives(self):
        ctx = resolve(self.context, self.process_set)
        return disttrain.context() if ctx is None else ctx

    def forward(self, x):
        self._check_input_dim(x)
        if x.shape[1] != self.num_features:
            raise usage(f"SyncBatchNorm({self.num_features}) got input with {x.shape[1]} "
                        f"channels (dim 1 of shape {tuple(x.shape)})")
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and \
                self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked)
        use_batch_stats = self.training or self.running_mean is None
        collectives = self._collectives() if use_batch_stats else None
        if not use_batch_stats or collectives.size() == 1:
            return F.batch_norm(
                x, self.running_mean if not self.training or self.track_running_stats
                else None,
                self.running_var if not self.training or self.track_running_stats
                else None,
                self.weight, self.bias, use_batch_stats, factor, self.eps)
        running = self.track_running_stats and self.training
        return _SyncBatchNormFunction.apply(
            x, self.weight, self.bias, self.running_mean if running else None,
            self.running_var if running else None, self.eps, factor, collectives)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_set=None, context=None):
        """Returns `module` with every BatchNorm{1,2,3}d replaced by a SyncBatchNorm with
        the same parameters, buffers and settings (module itself if it is one)."""
        out = module
        if isinstance(module, torch.nn.modules.batchnorm._BatchNorm) and \
                not isinstance(module, cls):
            out = cls(module.num_features, module.eps, module.momentum, module.affine,
                      module.track_running_stats, process_set=process_set,
                      context=context)
            if module.affine:
                with torch.no_grad():
                    out.weight = module.weight
                    out.bias = module.bias
            out.running_mean = module.running_mean
            out.running_var = module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.train(module.training)
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_set, context))
        return out
