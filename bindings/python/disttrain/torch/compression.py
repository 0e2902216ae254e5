# SPDX-License-Identifier: Apache-2.0
"""Gradient compression on the wire (horovod.torch.Compression's interface).

compress(tensor) returns (tensor to send, context); decompress(tensor, context) returns a
tensor of the original dtype. fp16 and bf16 halve the bytes sent, and cost precision: each
step of the library's reduction computes in float32 and rounds its partial result to 16
bits (as NCCL's does), so on n ranks up to n - 1 roundings add up, not just the last one.
"""
import torch


class Compressor:
    """Sends tensors unchanged."""

    @staticmethod
    def compress(tensor):
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor


class NoneCompressor(Compressor):
    pass


class _CastCompressor(Compressor):
    wire_dtype = None

    @classmethod
    def compress(cls, tensor):
        if tensor.dtype.is_floating_point and tensor.dtype != cls.wire_dtype:
            return tensor.to(cls.wire_dtype), tensor.dtype
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor if ctx is None else tensor.to(ctx)


class FP16Compressor(_CastCompressor):
    """Floating-point tensors travel as IEEE float16."""
    wire_dtype = torch.float16


class BF16Compressor(_CastCompressor):
    """Floating-point tensors travel as bfloat16 (float32's range, 8-bit mantissa)."""
    wire_dtype = torch.bfloat16


class Compression:
    """Choices for DistributedOptimizer(compression=...)."""
    none = NoneCompressor
    fp16 = FP16Compressor
    bf16 = BF16Compressor
