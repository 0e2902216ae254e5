#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Turns a CUDA source into C++ that cuda_emu.h runs on the CPU.

    cu_to_cc.py IN.cu OUT.cc

Includes cuda_emu.h first and rewrites every launch `kernel<...><<<cfg>>>(args)` into
`::cuda_emu::launch([](auto &&...a) { kernel<...>(a...); }, cfg)(args)`; a kernel declared
with __launch_bounds__(N, ...) is launched through `::cuda_emu::launch_bounded(N, ...)`
instead, which refuses a block of more than N threads as the GPU does. Line numbers are
kept (a #line directive names the .cu), so compiler messages and __syncthreads() lines
point into the original.
"""
import re
import sys

IDENT = re.compile(r"[A-Za-z0-9_:]")
BOUNDS = re.compile(r"__global__\s+void\s+__launch_bounds__\(([^,)]+)[^)]*\)\s*(\w+)\s*\(")


def launch_bounds(text):
    """Each kernel's __launch_bounds__ maximum of threads per block, by name."""
    return {name: bound.strip() for bound, name in BOUNDS.findall(text)}


def kernel_start(text, end):
    """Where the kernel expression that ends just before `end` begins: an identifier,
    possibly qualified, with an optional template argument list."""
    i = end
    while i > 0 and text[i - 1].isspace():
        i -= 1
    if i > 0 and text[i - 1] == ">":
        depth = 0
        while i > 0:
            i -= 1
            if text[i] == ">":
                depth += 1
            elif text[i] == "<":
                depth -= 1
                if depth == 0:
                    break
        if depth != 0:
            raise ValueError("unbalanced template arguments before a launch")
    while i > 0 and IDENT.match(text[i - 1]):
        i -= 1
    return i


def rewrite(text):
    bounds = launch_bounds(text)
    out, pos = [], 0
    while True:
        open_at = text.find("<<<", pos)
        if open_at < 0:
            out.append(text[pos:])
            return "".join(out)
        close_at = text.find(">>>", open_at)
        if close_at < 0:
            raise ValueError("a <<< without its >>>")
        start = kernel_start(text, open_at)
        if start < pos or not text[start:open_at].strip():
            raise ValueError("no kernel name before <<< at offset %d" % open_at)
        kernel = text[start:open_at]
        config = text[open_at + 3:close_at]
        # A generic lambda rather than the kernel itself: a kernel template whose
        # arguments the call deduces has no value of its own.
        call = "[](auto &&...a) { %s(a...); }, %s" % (" ".join(kernel.split()),
                                                      " ".join(config.split()))
        name = kernel.split("<")[0].strip().split("::")[-1]
        if name in bounds:
            replaced = "::cuda_emu::launch_bounded((%s), %s)" % (bounds[name], call)
        else:
            replaced = "::cuda_emu::launch(%s)" % call
        out.append(text[pos:start])
        out.append(replaced)
        out.append("\n" * text[start:close_at + 3].count("\n"))
        pos = close_at + 3


def main(argv):
    if len(argv) != 3:
        sys.exit("usage: cu_to_cc.py IN.cu OUT.cc")
    src, dst = argv[1], argv[2]
    with open(src, encoding="utf-8") as f:
        text = f.read()
    try:
        body = rewrite(text)
    except ValueError as e:
        sys.exit("%s: %s" % (src, e))
    with open(dst, "w", encoding="utf-8") as f:
        f.write('#include "cuda_emu.h"\n#line 1 "%s"\n' % src)
        f.write(body)


if __name__ == "__main__":
    main(sys.argv)
