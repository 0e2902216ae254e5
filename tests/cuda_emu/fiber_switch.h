/* SPDX-License-Identifier: Apache-2.0 */
// Switching between stacks on one thread, for cuda_emu's fibers. On x86-64 a switch
// saves the callee-saved registers and the floating-point control words and moves the
// stack pointer: a few nanoseconds. Elsewhere, under AddressSanitizer (which must be told
// of every switch) or with CUDA_EMU_UCONTEXT defined, it is glibc's swapcontext, which
// also saves the signal mask with a system call on every switch: the batch-norm kernel
// test took 25 s that way, 90% of it in the switches, against 2.7 s.
#pragma once

#include <cstddef>

#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) && !defined(CUDA_EMU_UCONTEXT)
#define CUDA_EMU_ASM_SWITCH 1
#else
#include <ucontext.h>
#endif

namespace cuda_emu {

struct FiberContext {
#ifdef CUDA_EMU_ASM_SWITCH
    void *sp = nullptr; // the saved stack pointer, the registers above it
#else
    ucontext_t uc;
#endif
};

// Makes `to` start entry() on the stack [stack, stack + bytes) at its first switch;
// entry must never return (it switches away for good instead).
void fiber_start(FiberContext &to, void *stack, size_t bytes, void (*entry)());
// Saves the running context in `from` and resumes `to`.
void fiber_switch(FiberContext &from, FiberContext &to);

} // namespace cuda_emu
