# SPDX-License-Identifier: Apache-2.0
"""Collectives on torch tensors, sharing the tensor's memory (tensor.data_ptr()).

Each call tells the library where the tensor lives (dt_op_params_t, tensor_memory()): a
CPU tensor is host memory; a CUDA tensor is device memory on its device index, ordered
after torch's current stream there. The library refuses device memory
(DT_ERR_UNSUPPORTED, raised as UsageError) until a memory provider is loaded, so today
CUDA tensors fail clearly instead of being read by the CPU.

As in horovod.torch, allreduce averages by default (op=Average). In-place forms (the ones
ending in `_`) need a contiguous CPU tensor and write its memory directly (outside
autograd, like an operation under torch.no_grad()); out-of-place forms copy a
non-contiguous input first and return a new tensor, connected to autograd when the input
requires grad, as horovod.torch's are (autograd.py). Every function takes context=None
(the default context of disttrain.init()) and process_set=None: a disttrain.ProcessSet
runs the collective among its members only (context= accepts a ProcessSet too).
"""
import torch

import disttrain
from disttrain.arguments import UNSET, c_string, root_rank_of
from disttrain.errors import usage
from disttrain.handle import GroupHandle, Handle, start_group
from disttrain.memory import op_params, params_arg
from disttrain.process_set import resolve
from disttrain.types import Average, DType, to_op

from . import autograd, uneven

# torch dtype -> DType. bfloat16 exists only here: numpy has no bfloat16.
TORCH_DTYPES = {
    torch.float32: DType.FLOAT32,
    torch.float64: DType.FLOAT64,
    torch.float16: DType.FLOAT16,
    torch.bfloat16: DType.BFLOAT16,
    torch.int8: DType.INT8,
    torch.uint8: DType.UINT8,
    torch.int32: DType.INT32,
    torch.int64: DType.INT64,
}

SUPPORTED = ", ".join(str(d).replace("torch.", "") for d in TORCH_DTYPES)


def _ctx(context, process_set=None):
    ctx = resolve(context, process_set)
    return disttrain.context() if ctx is None else ctx


def _name(name):
    return None if name is None else c_string(str(name), "name")


def tensor_dtype(tensor, what="tensor"):
    """Checks device, layout and dtype; returns the DType."""
    if not isinstance(tensor, torch.Tensor):
        raise usage(f"{what} must be a torch.Tensor, got {type(tensor).__name__}")
    if tensor.device.type not in ("cpu", "cuda"):
        raise usage(f"{what} is on device '{tensor.device}'; disttrain.torch works on CPU "
                    f"tensors only (and CUDA tensors once the library has a memory "
                    f"provider): move it with {what}.cpu() (and back afterwards)")
    if tensor.layout != torch.strided:
        raise usage(f"{what} has layout {tensor.layout}; only dense (torch.strided) "
                    f"tensors are supported: use {what}.to_dense()")
    found = TORCH_DTYPES.get(tensor.dtype)
    if found is None:
        raise usage(f"dtype {str(tensor.dtype).replace('torch.', '')} of {what} is not "
                    f"supported by libdisttrain; supported: {SUPPORTED}")
    return found


def tensor_memory(tensor):
    """The call's params for where `tensor` lives, as _lib.OpParams or None (host, the
    default). A CUDA tensor: DEVICE, its device index, and torch's current stream on
    that device, after whose queued work the collective must start."""
    device = tensor.device
    if device.type != "cuda":
        return None
    index = device.index if device.index is not None else torch.cuda.current_device()
    stream = torch.cuda.current_stream(device).cuda_stream
    return op_params("device", index, stream)


def _params(tensor):
    return params_arg(tensor_memory(tensor))


def inplace_tensor(tensor, what="tensor"):
    dtype = tensor_dtype(tensor, what)
    if not tensor.is_contiguous():
        raise usage(f"{what} is not contiguous (shape {tuple(tensor.shape)}, strides "
                    f"{tensor.stride()}); an in-place collective writes the tensor's own "
                    f"memory and will not silently work on a copy: use "
                    f"t = {what}.contiguous(), or the out-of-place form")
    return dtype


def output_tensor(out):
    """Checks that the library can write a result into `out` (the out= of a collective,
    whose caller already uses the out-of-place form: the fix is another `out`)."""
    dtype = tensor_dtype(out, "out")
    if not out.is_contiguous():
        raise usage(f"out must be contiguous (shape {tuple(out.shape)}, strides "
                    f"{out.stride()}): the result is written straight into its memory; "
                    f"pass a contiguous tensor such as torch.empty_like(tensor, "
                    f"memory_format=torch.contiguous_format), or omit out= to get a new "
                    f"tensor")
    return dtype


def input_tensor(tensor, what="tensor"):
    dtype = tensor_dtype(tensor, what)
    t = tensor.detach()
    return (t if t.is_contiguous() else t.contiguous()), dtype


# -- allreduce -----------------------------------------------------------------------
def allreduce_async_(tensor, op=Average, name=None, context=None, process_set=None):
    """Starts an in-place allreduce of `tensor`; wait() returns `tensor`."""
    dtype = inplace_tensor(tensor)
    op, ctx = to_op(op), _ctx(context, process_set)
    ptr = tensor.data_ptr()
    req = ctx._submit("dt_allreduce_async_ex", _name(name), ptr, ptr, tensor.numel(),
                      int(dtype), int(op), _params(tensor))
    return Handle(ctx, req, (tensor,), result=tensor, name=name)


def allreduce_(tensor, op=Average, name=None, context=None, process_set=None):
    """Reduces `tensor` in place across ranks (average by default); returns it. One
    blocking foreign call: no request or Handle, and the engine starts it at once."""
    dtype = inplace_tensor(tensor)
    op, ctx = to_op(op), _ctx(context, process_set)
    ptr = tensor.data_ptr()
    ctx._call("dt_allreduce_ex", _name(name), ptr, ptr, tensor.numel(), int(dtype), int(op),
              _params(tensor))
    return tensor


def allreduce_async(tensor, op=Average, name=None, out=None, context=None, process_set=None):
    """Starts an allreduce into a new tensor (or `out`); wait() returns it."""
    if autograd.wanted(tensor):
        autograd.no_out(out, "allreduce")
        ctx = _ctx(context, process_set)
        with torch.no_grad():  # the plain path below, recorded at wait()
            handle = allreduce_async(tensor, op, name, None, ctx)
        return autograd.on_wait(handle, autograd.Allreduce, tensor,
                                autograd.allreduce_backward(op, name, ctx))
    op, ctx = to_op(op), _ctx(context, process_set)
    out_dtype = None if out is None else output_tensor(out)
    if out is not None and out is tensor:
        return allreduce_async_(tensor, op, name, context, process_set)
    src, dtype = input_tensor(tensor)
    if out is None:
        out = torch.empty_like(src, memory_format=torch.contiguous_format)
    else:
        if out_dtype != dtype or out.shape != src.shape:
            raise usage(f"out has dtype {out.dtype} and shape {tuple(out.shape)} but the "
                        f"input has {src.dtype} and {tuple(src.shape)}; they must match")
    req = ctx._submit("dt_allreduce_async_ex", _name(name), src.data_ptr(), out.data_ptr(),
                      src.numel(), int(dtype), int(op), _params(src))
    return Handle(ctx, req, (src, out), result=out, name=name)


def allreduce(tensor, op=Average, name=None, out=None, context=None, process_set=None):
    """Returns the allreduce of `tensor` across ranks (average by default)."""
    return allreduce_async(tensor, op, name, out, context, process_set).wait()


# -- grouped allreduce ---------------------------------------------------------------
def grouped_allreduce_async(tensors, op=Average, name=None, context=None, process_set=None):
    """Starts the allreduce of every tensor of the list at once, as one group (as
    horovod.torch's): the engine packs ready small allreduces of one dtype and operator
    into its fusion buffer. wait() returns the list of new tensors, in the order given.
    Tensor i is named "<name>.<i>" when name is given."""
    return GroupHandle(start_group(tensors, name, lambda t, n: allreduce_async(
        t, op, n, None, context, process_set)))


def grouped_allreduce(tensors, op=Average, name=None, context=None, process_set=None):
    """The list of allreduces of `tensors` (average by default), reduced as one group."""
    return grouped_allreduce_async(tensors, op, name, context, process_set).wait()


def grouped_allreduce_async_(tensors, op=Average, name=None, context=None,
                             process_set=None):
    """In-place grouped_allreduce_async; wait() returns the list of `tensors`."""
    return GroupHandle(start_group(tensors, name, lambda t, n: allreduce_async_(
        t, op, n, context, process_set)))


def grouped_allreduce_(tensors, op=Average, name=None, context=None, process_set=None):
    """Reduces every tensor of the list in place, as one group; returns the list."""
    return grouped_allreduce_async_(tensors, op, name, context, process_set).wait()


# -- broadcast -----------------------------------------------------------------------
def broadcast_async_(tensor, root_rank=UNSET, name=None, context=None, process_set=None,
                     *, root=UNSET):
    """Starts overwriting `tensor` with root_rank's tensor (root= is the deprecated
    spelling of root_rank=)."""
    root_rank = root_rank_of(root_rank, root, "broadcast_async_")
    dtype = inplace_tensor(tensor)
    ctx = _ctx(context, process_set)
    ctx._check_root(root_rank)
    req = ctx._submit("dt_broadcast_async_ex", _name(name), tensor.data_ptr(),
                      tensor.numel(), int(dtype), int(root_rank), _params(tensor))
    return Handle(ctx, req, (tensor,), result=tensor, name=name)


def broadcast_(tensor, root_rank=UNSET, name=None, context=None, process_set=None, *,
               root=UNSET):
    """Overwrites `tensor` with root_rank's tensor; returns it."""
    root_rank = root_rank_of(root_rank, root, "broadcast_")
    return broadcast_async_(tensor, root_rank, name, context, process_set).wait()


def broadcast_async(tensor, root_rank=UNSET, name=None, context=None, process_set=None,
                    *, root=UNSET):
    root_rank = root_rank_of(root_rank, root, "broadcast_async")
    copy = input_tensor(tensor)[0].clone(memory_format=torch.contiguous_format)
    handle = broadcast_async_(copy, root_rank, name, context, process_set)
    if autograd.wanted(tensor):
        backward = autograd.broadcast_backward(root_rank, name, _ctx(context, process_set))
        return autograd.on_wait(handle, autograd.Broadcast, tensor, backward)
    return handle


def broadcast(tensor, root_rank=UNSET, name=None, context=None, process_set=None, *,
              root=UNSET):
    """Returns a new tensor holding root_rank's tensor."""
    root_rank = root_rank_of(root_rank, root, "broadcast")
    return broadcast_async(tensor, root_rank, name, context, process_set).wait()


# -- allgather, reduce_scatter, alltoall ----------------------------------------------
def allgather_async(tensor, name=None, context=None, process_set=None):
    """Starts an allgather; wait() returns every rank's tensor concatenated along dim 0,
    rank 0 first. dim 0 may differ per rank (the shapes are exchanged first); the other
    dimensions and the dtype must agree: ranks whose other dimensions differ all raise
    DT_ERR_MISMATCH naming the shapes."""
    src, dtype = input_tensor(tensor)
    ctx = _ctx(context, process_set)
    if not autograd.wanted(tensor):
        return uneven.allgather_async(ctx, src, dtype, name, _params, _name)
    rows = []  # every rank's row count, which backward needs
    handle = uneven.allgather_async(ctx, src, dtype, name, _params, _name, rows)
    backward = autograd.allgather_backward(tensor.shape, name, ctx, rows)
    return autograd.on_wait(handle, autograd.Allgather, tensor, backward)


def allgather(tensor, name=None, context=None, process_set=None):
    return allgather_async(tensor, name, context, process_set).wait()


def _blocks(src, size, what):
    if src.dim() == 0 or src.shape[0] % size != 0:
        raise usage(f"{what} needs a tensor whose first dimension is a multiple of the "
                    f"number of ranks ({size}); got shape {tuple(src.shape)}")


def reduce_scatter_async(tensor, op=Average, name=None, context=None, process_set=None):
    """Reduces `tensor` (dim 0 = size * n) across ranks; rank r gets rows [r*n, (r+1)*n)."""
    if autograd.wanted(tensor):
        ctx = _ctx(context, process_set)
        with torch.no_grad():  # the plain path below, recorded at wait()
            handle = reduce_scatter_async(tensor, op, name, ctx)
        return autograd.on_wait(handle, autograd.ReduceScatter, tensor,
                                autograd.reduce_scatter_backward(op, name, ctx))
    src, dtype = input_tensor(tensor)
    op, ctx = to_op(op), _ctx(context, process_set)
    _blocks(src, ctx.size(), "reduce_scatter")
    out = src.new_empty((src.shape[0] // ctx.size(),) + tuple(src.shape[1:]))
    req = ctx._submit("dt_reduce_scatter_async_ex", _name(name), src.data_ptr(),
                      out.data_ptr(), out.numel(), int(dtype), int(op), _params(src))
    return Handle(ctx, req, (src, out), result=out, name=name)


def reduce_scatter(tensor, op=Average, name=None, context=None, process_set=None):
    return reduce_scatter_async(tensor, op, name, context, process_set).wait()


def alltoall_async(tensor, splits=None, name=None, context=None, process_set=None):
    """Without splits, block j of dim 0 goes to rank j, which stores it as block i (i the
    sender); wait() returns the new tensor. With splits (one row count per rank, summing
    to dim 0, as horovod.torch's), splits[j] rows go to rank j; wait() returns (received
    tensor, received splits), the rows from rank i being block i. With splits, ranks whose
    dimensions after the first disagree all raise DT_ERR_MISMATCH naming the shapes."""
    if autograd.wanted(tensor):
        ctx = _ctx(context, process_set)
        with torch.no_grad():  # the plain path below, recorded at wait()
            handle = alltoall_async(tensor, splits, name, ctx)
        return autograd.on_wait(handle, autograd.Alltoall, tensor,
                                autograd.alltoall_backward(name, ctx))
    src, dtype = input_tensor(tensor)
    ctx = _ctx(context, process_set)
    if splits is not None:
        return uneven.alltoall_async(ctx, src, splits, dtype, name, _params, _name)
    _blocks(src, ctx.size(), "alltoall")
    out = torch.empty_like(src, memory_format=torch.contiguous_format)
    req = ctx._submit("dt_alltoall_async_ex", _name(name), src.data_ptr(), out.data_ptr(),
                      src.numel() // ctx.size(), int(dtype), _params(src))
    return Handle(ctx, req, (src, out), result=out, name=name)


def alltoall(tensor, splits=None, name=None, context=None, process_set=None):
    """The tensor of blocks received from every rank, or with splits the tuple
    (received tensor, received splits) (see alltoall_async)."""
    return alltoall_async(tensor, splits, name, context, process_set).wait()


def synchronize(handle):
    """Waits for a handle and returns its result (horovod.torch's spelling)."""
    return handle.wait()


def poll(handle):
    """True once the handle's operation has completed."""
    return handle.test()
