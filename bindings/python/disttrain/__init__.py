# SPDX-License-Identifier: Apache-2.0
"""disttrain: Python bindings of libdisttrain (ctypes over the C API, no extension).

Horovod-style use, with a process-wide default context:

    import numpy as np, disttrain
    disttrain.init()                      # rank and size from disttrainrun's variables
    x = np.ones(4, np.float32) * disttrain.rank()
    disttrain.allreduce_(x)               # in place; averages by default, as Horovod
    disttrain.shutdown()

or with explicit contexts: `with disttrain.Context() as ctx: ctx.allreduce(x)`.
Process sets (collectives among some ranks): `ps = disttrain.add_process_set([0, 2])`,
then `ps.allreduce(x)` or `disttrain.allreduce(x, process_set=ps)` on its members.
Uneven inputs: `disttrain.join()` (negotiated mode only).
Start a job with `disttrainrun -np 2 -- python3 train.py`; a single process needs nothing.
PyTorch tensors: see disttrain.torch.
"""
import atexit
import threading

from . import _lib
from .context import Context
from .errors import (DisttrainError, InternalError, NotInitializedError, PeerLostError,
                     PluginError, TimeoutError, TransportError, UsageError)
from .handle import GroupHandle, Handle
from .process_set import ProcessSet, resolve as _resolve
from .types import Average, DType, Max, Min, MemoryType, Product, ReduceOp, Sum

__all__ = [
    "init", "shutdown", "is_initialized", "context", "rank", "size", "local_rank",
    "local_size", "transport", "allreduce", "allreduce_", "allreduce_async",
    "allreduce_async_", "broadcast", "broadcast_", "broadcast_async", "broadcast_async_",
    "allgather", "allgather_async", "reduce_scatter", "reduce_scatter_async", "alltoall",
    "alltoall_async", "barrier", "barrier_async", "join", "grouped_allreduce",
    "grouped_allreduce_async", "allgather_object", "broadcast_object", "GroupHandle", "ProcessSet",
    "add_process_set", "remove_process_set", "Context", "Handle", "DType",
    "ReduceOp", "MemoryType", "Sum", "Average", "Min", "Max", "Product", "DisttrainError",
    "UsageError", "NotInitializedError", "PluginError", "TransportError",
    "PeerLostError", "TimeoutError", "InternalError", "library_path", "version",
]

_default = None
_default_lock = threading.Lock()


def init(rank=None, size=None, local_rank=None, local_size=None, store_addr=None,
         job_token=None, transport=None, timeout=None, ordered=None, memory=None,
         name=None):
    """Creates the default context (collective: every rank calls it) and returns it.
    Arguments left None come from the environment; see Context. Calling init() again
    while initialised returns the existing context."""
    global _default
    with _default_lock:
        if _default is None or _default.closed:
            _default = Context(rank=rank, size=size, local_rank=local_rank,
                               local_size=local_size, store_addr=store_addr,
                               job_token=job_token, transport=transport, timeout=timeout,
                               ordered=ordered, memory=memory, name=name)
        return _default


def shutdown():
    """Destroys the default context after its requests in flight. Safe to call twice.
    In a child of os.fork() it only forgets the parent's context (see Context)."""
    global _default
    with _default_lock:
        ctx, _default = _default, None
    if ctx is not None:
        ctx.shutdown()


def is_initialized():
    return _default is not None and not _default.closed


def context():
    """The default context; NotInitializedError before init()."""
    ctx = _default
    if ctx is None or ctx.closed:
        raise NotInitializedError(
            -5, "DT_ERR_INVALID_STATE",
            "disttrain is not initialised: call disttrain.init() first")
    return ctx


def library_path():
    """Path of the libdisttrain.so in use."""
    return _lib.library_path()


def version():
    """Version string of the loaded library ("1.2.0")."""
    import ctypes
    v = _lib.Version()
    _lib.lib().dt_get_version(ctypes.byref(v))
    return v.string.decode()


def add_process_set(process_set, context=None):
    """Creates a process set (a ProcessSet, or a list of ranks) on `context` (default:
    the default context) and returns the ProcessSet. Collective over the context: every
    rank calls it, members or not, with the same list and in the same order relative to
    its other process sets; it blocks until they all have. See ProcessSet."""
    if not isinstance(process_set, ProcessSet):
        process_set = ProcessSet(process_set)
    return process_set._create(_context_or_default(context))


def remove_process_set(process_set):
    """Frees a process set (ProcessSet.close()); not collective."""
    process_set.close()


def _context_or_default(ctx):
    return context() if ctx is None else ctx


def _delegate(method):
    def call(*args, process_set=None, **kwargs):
        target = context() if process_set is None else _resolve(None, process_set)
        return getattr(target, method)(*args, **kwargs)
    call.__name__ = method
    call.__doc__ = (getattr(Context, method).__doc__ or "") + (
        "\n\n    process_set=ps runs it on a ProcessSet instead of the default context.")
    return call


rank = _delegate("rank")
size = _delegate("size")
local_rank = _delegate("local_rank")
local_size = _delegate("local_size")
transport = _delegate("transport")
allreduce = _delegate("allreduce")
allreduce_ = _delegate("allreduce_")
allreduce_async = _delegate("allreduce_async")
allreduce_async_ = _delegate("allreduce_async_")
broadcast = _delegate("broadcast")
broadcast_ = _delegate("broadcast_")
broadcast_async = _delegate("broadcast_async")
broadcast_async_ = _delegate("broadcast_async_")
allgather = _delegate("allgather")
allgather_async = _delegate("allgather_async")
reduce_scatter = _delegate("reduce_scatter")
reduce_scatter_async = _delegate("reduce_scatter_async")
alltoall = _delegate("alltoall")
alltoall_async = _delegate("alltoall_async")
barrier = _delegate("barrier")
barrier_async = _delegate("barrier_async")
join = _delegate("join")
grouped_allreduce = _delegate("grouped_allreduce")
grouped_allreduce_async = _delegate("grouped_allreduce_async")
allgather_object = _delegate("allgather_object")
broadcast_object = _delegate("broadcast_object")

# Destroy the default context before the interpreter tears ctypes down, so the engine's
# threads stop cleanly and peers see an orderly close. A child of os.fork() inherits this
# handler and the parent's context: there shutdown() skips it (its creator's pid is not
# the child's), since destroying it would close the parent's connections.
atexit.register(shutdown)
