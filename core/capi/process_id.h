/* SPDX-License-Identifier: Apache-2.0 */
// The id of the calling process, for telling a fork()ed child's copies of handles from
// its parent's ones (capi/guard.h) on every API call.
#pragma once

#include <sys/types.h>

namespace dt::capi {

// getpid() without a system call per API call (half a microsecond where system calls
// are slow: a good part of a small collective on shared memory): read once, and again in
// each child fork() makes (through pthread_atfork, so not in a child of the raw clone
// system call). Thread safe.
pid_t this_process() noexcept;

} // namespace dt::capi
