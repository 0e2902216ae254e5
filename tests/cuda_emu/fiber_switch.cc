// SPDX-License-Identifier: Apache-2.0
// Stack switching for cuda_emu's fibers (fiber_switch.h).
#include "fiber_switch.h"

#include <cstdint>
#include <cstdlib>

#ifdef CUDA_EMU_ASM_SWITCH

// cuda_emu_swap(&from_sp, to_sp): pushes what the System V ABI asks a callee to keep (rbx,
// rbp, r12-r15, MXCSR and the x87 control word), saves rsp in *from_sp, loads to_sp and
// pops the same from it. A fresh stack is laid out as if it had been saved on its way
// into cuda_emu_fiber_entry (fiber_start).
asm(R"(
    .text
    .globl cuda_emu_swap
    .hidden cuda_emu_swap
    .type cuda_emu_swap, @function
cuda_emu_swap:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    subq $8, %rsp
    stmxcsr (%rsp)
    fnstcw 4(%rsp)
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    ldmxcsr (%rsp)
    fldcw 4(%rsp)
    addq $8, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size cuda_emu_swap, .-cuda_emu_swap
)");

extern "C" void cuda_emu_swap(void **from_sp, void *to_sp);

namespace {
// The entry of a fresh fiber: fiber_start leaves its function in r12 (restored by the
// first switch) and rsp a multiple of 16 once the switch's ret has popped this address,
// so that the call below enters the function as the ABI wants it (rsp + 8 a multiple of
// 16).
extern "C" [[noreturn]] void cuda_emu_fiber_entry();
asm(R"(
    .text
    .type cuda_emu_fiber_entry, @function
cuda_emu_fiber_entry:
    callq *%r12
    ud2
    .size cuda_emu_fiber_entry, .-cuda_emu_fiber_entry
)");
} // namespace

namespace cuda_emu {

void fiber_start(FiberContext &to, void *stack, size_t bytes, void (*entry)())
{
    // From the 16-byte aligned top: cuda_emu_fiber_entry as the switch's return address,
    // rbp, rbx, r12 = entry, r13, r14, r15, then MXCSR and the control word as
    // they are now (the defaults the kernels expect).
    auto top = (reinterpret_cast<uintptr_t>(stack) + bytes) & ~uintptr_t(15);
    auto *slot = reinterpret_cast<uint64_t *>(top);
    *--slot = reinterpret_cast<uint64_t>(&cuda_emu_fiber_entry);
    *--slot = 0;                                     // rbp
    *--slot = 0;                                     // rbx
    *--slot = reinterpret_cast<uint64_t>(entry);     // r12
    *--slot = 0;                                     // r13
    *--slot = 0;                                     // r14
    *--slot = 0;                                     // r15
    uint32_t mxcsr;
    uint16_t control;
    asm volatile("stmxcsr %0" : "=m"(mxcsr));
    asm volatile("fnstcw %0" : "=m"(control));
    *--slot = uint64_t(mxcsr) | (uint64_t(control) << 32);
    to.sp = slot;
}

void fiber_switch(FiberContext &from, FiberContext &to) { cuda_emu_swap(&from.sp, to.sp); }

} // namespace cuda_emu

#else

namespace cuda_emu {

void fiber_start(FiberContext &to, void *stack, size_t bytes, void (*entry)())
{
    getcontext(&to.uc);
    to.uc.uc_stack.ss_sp = stack;
    to.uc.uc_stack.ss_size = bytes;
    to.uc.uc_link = nullptr; // entry never returns
    makecontext(&to.uc, entry, 0);
}

void fiber_switch(FiberContext &from, FiberContext &to) { swapcontext(&from.uc, &to.uc); }

} // namespace cuda_emu

#endif
