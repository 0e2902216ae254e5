/* SPDX-License-Identifier: Apache-2.0 */
// Names for the calls a context is given without one (name NULL). Ranks pair a call up by
// its name, and an unnamed call's name only counts the context's unnamed calls in the
// order they reach the library on this rank. Calls made from several threads at once
// reach it in an order that differs between ranks, so they would pair with another
// thread's call elsewhere and silently exchange its data: such threads must name their
// calls. The library cannot tell "at once" from "in turn", so it warns, once per context,
// when unnamed calls come from a second thread.
#pragma once

#include "runtime/operation.h"

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

namespace dt {

class UnnamedCalls {
public:
    // "<kind>.<n>", n counting this context's unnamed calls; warns (DT_LOG) the first time
    // it is called from a thread other than the first caller's.
    std::string name(OpKind kind);

private:
    void note_thread();
    std::atomic<uint64_t> count_{0};
    std::atomic<std::thread::id> first_thread_{};
    std::atomic<bool> warned_{false};
};

} // namespace dt
