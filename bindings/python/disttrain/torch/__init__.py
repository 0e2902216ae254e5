# SPDX-License-Identifier: Apache-2.0
"""disttrain.torch: PyTorch on libdisttrain, in the style of horovod.torch.

    import torch, disttrain.torch as dt
    dt.init()
    model = Net(); opt = torch.optim.SGD(model.parameters(), lr=0.1 * dt.size())
    dt.broadcast_parameters(model.state_dict(), root_rank=0)
    dt.broadcast_optimizer_state(opt, root_rank=0)
    opt = dt.DistributedOptimizer(opt, named_parameters=model.named_parameters())
    for x, y in loader: opt.zero_grad(); loss(model(x), y).backward(); opt.step()

Or, as torch's DistributedDataParallel: `model = dt.DistributedDataParallel(Net())`
(backward leaves the gradients averaged; any optimizer steps), with
`dt.SyncBatchNorm.convert_sync_batchnorm(model)` for batch statistics over every rank.

Run with `disttrainrun -np 2 -- python3 train.py`. CPU and CUDA tensors: a CUDA tensor's
collective starts after the work queued on torch's current stream, and needs a memory
provider (DISTTRAIN_MEMORY=cuda, the CUDA memory plugin), which stages it through pinned
host memory. Works with any torch version that has Tensor.data_ptr() (no compiled
extension).
"""
try:
    import torch as _torch  # noqa: F401  (the real PyTorch: absolute import)
except ImportError as e:  # pragma: no cover - depends on the machine
    raise ImportError("disttrain.torch needs PyTorch: install it (Debian: apt-get install "
                      "python3-torch, or pip install torch)") from e

from disttrain import (Average, Context, DisttrainError, Handle, Max, Min, ProcessSet,
                       Product, Sum, UsageError, add_process_set, barrier, init,
                       is_initialized, join, local_rank, local_size, rank,
                       remove_process_set, shutdown, size, transport)

from .compression import Compression
from .ddp import DistributedDataParallel
from .functions import (MetricAverager, allgather_object, allreduce_metric,
                        broadcast_object, broadcast_optimizer_state, broadcast_parameters)
from .ops import (SUPPORTED, TORCH_DTYPES, allgather, allgather_async, allreduce,
                  allreduce_, allreduce_async, allreduce_async_, alltoall, alltoall_async,
                  broadcast, broadcast_, broadcast_async, broadcast_async_,
                  grouped_allreduce, grouped_allreduce_, grouped_allreduce_async,
                  grouped_allreduce_async_, poll, reduce_scatter, reduce_scatter_async,
                  synchronize)
from .optimizer import DistributedOptimizer
from .sync_batch_norm import SyncBatchNorm
from . import elastic  # noqa: E402 (needs the functions above)

__all__ = [
    "elastic", "init", "shutdown", "is_initialized", "rank", "size", "local_rank", "local_size",
    "transport", "barrier", "join", "ProcessSet", "add_process_set",
    "remove_process_set", "allreduce", "allreduce_", "allreduce_async",
    "allreduce_async_", "broadcast", "broadcast_", "broadcast_async", "broadcast_async_",
    "allgather", "allgather_async", "reduce_scatter", "reduce_scatter_async", "alltoall",
    "alltoall_async", "grouped_allreduce", "grouped_allreduce_", "grouped_allreduce_async",
    "grouped_allreduce_async_", "synchronize", "poll", "broadcast_parameters",
    "broadcast_optimizer_state", "broadcast_object", "allgather_object",
    "DistributedOptimizer", "DistributedDataParallel", "SyncBatchNorm",
    "Compression", "allreduce_metric", "MetricAverager", "Average", "Sum", "Min", "Max",
    "Product", "Context", "Handle", "DisttrainError", "UsageError",
]
