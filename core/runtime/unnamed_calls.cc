// SPDX-License-Identifier: Apache-2.0
#include "runtime/unnamed_calls.h"

#include "runtime/error.h"
#include "telemetry/log.h"

namespace dt {

std::string UnnamedCalls::name(OpKind kind)
{
    note_thread();
    return cat(op_kind_name(kind), ".", count_++);
}

void UnnamedCalls::note_thread()
{
    const std::thread::id me = std::this_thread::get_id();
    // The common case, one thread: a load, no write to a shared line.
    std::thread::id first = first_thread_.load(std::memory_order_relaxed);
    if (first == me)
        return;
    if (first == std::thread::id{} && first_thread_.compare_exchange_strong(first, me))
        return;
    if (first == me || warned_.exchange(true))
        return;
    DT_LOG(warn, "context", "unnamed calls (name NULL) come from more than one thread of "
           "this context: each rank names them in the order they reach it, so calls that "
           "threads make at the same time can pair with another thread's call on other "
           "ranks and exchange its data without an error; give the calls of concurrent "
           "threads names of their own");
}

} // namespace dt
