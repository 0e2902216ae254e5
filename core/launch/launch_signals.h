/* SPDX-License-Identifier: Apache-2.0 */
// The signals disttrainrun acts on (SIGCHLD, SIGINT, SIGTERM, and SIGHUP unless it was
// started under nohup) are blocked and read from a signalfd in the event loop. Create this before any thread starts (the
// store's thread inherits the mask, so a SIGTERM cannot land there and kill us).
#pragma once

#include "launch/launch_process.h"

#include <signal.h>

namespace dt::launch {

class SignalReader {
public:
    SignalReader();   // blocks the signals and ignores SIGPIPE; throws dt::Error
    ~SignalReader();  // restores the old mask
    SignalReader(const SignalReader &) = delete;
    SignalReader &operator=(const SignalReader &) = delete;

    int fd() const noexcept { return fd_.get(); }
    // The next pending signal number, or 0 when none is pending.
    int next();

private:
    Fd fd_;
    sigset_t old_mask_{};
};

} // namespace dt::launch
