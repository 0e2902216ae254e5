// SPDX-License-Identifier: Apache-2.0
#include "capi/process_id.h"

#include <atomic>

#include <pthread.h>
#include <unistd.h>

namespace dt::capi {

namespace {

std::atomic<pid_t> cached_pid{0};

// Runs in the child inside fork(), before fork() returns there: no thread of the child
// can see the parent's id after that.
void refresh() noexcept
{
    cached_pid.store(::getpid(), std::memory_order_relaxed);
}

bool watch_forks() noexcept
{
    refresh();
    return pthread_atfork(nullptr, nullptr, refresh) == 0;
}

} // namespace

pid_t this_process() noexcept
{
    static const bool watched = watch_forks();
    // Without the handler (pthread_atfork out of memory) each call asks the kernel.
    return watched ? cached_pid.load(std::memory_order_relaxed) : ::getpid();
}

} // namespace dt::capi
