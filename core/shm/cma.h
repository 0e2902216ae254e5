/* SPDX-License-Identifier: Apache-2.0 */
// Cross-memory attach: reading another process's memory with one kernel copy
// (process_vm_readv). The single-copy allreduce (allreduce_cma.cc) reads its peers'
// buffers this way instead of staging them through the shared segments.
//
// The kernel allows it only where this process may ptrace the other (same user and no
// yama restriction, or CAP_SYS_PTRACE) and no seccomp filter refuses the call, as in
// some containers. Domain probes every peer once at attach time, so a call never has
// to find out; see domain.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <sys/types.h>

namespace dt::shm::cma {

// Copies bytes at address `remote` of process pid into local. Returns 0, or the errno of
// the failure (ESRCH: no such process; EPERM: not allowed; EFAULT: a range is not
// mapped, on either side; ENOSYS: no such call). A short read is retried from where it
// stopped (the kernel caps one call near 2 GiB), so a range that is only partly mapped
// ends in the error the retry gets.
int read(pid_t pid, void *local, uint64_t remote, size_t bytes);

// "EPERM (Operation not permitted)", for messages.
std::string describe(int error);

} // namespace dt::shm::cma
