/* SPDX-License-Identifier: Apache-2.0 */
// The one exception type inside the plugin. It carries the DTP_ status the C entry points
// return; its message is handed to the core through services->set_error. Nothing thrown
// here ever crosses the C ABI (tcp_plugin.cc catches everything).
#pragma once

#include <disttrain/plugin/common.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

namespace dt::tcp {

class TcpError : public std::runtime_error {
public:
    TcpError(int32_t status, const std::string &message)
        : std::runtime_error(message), status_(status) {}
    int32_t status() const { return status_; }

private:
    int32_t status_;
};

// "<what>: <strerror(err)>", for messages built from a failed system call.
inline std::string errno_text(const std::string &what, int err) {
    return what + ": " + std::strerror(err);
}

[[noreturn]] inline void throw_errno(int32_t status, const std::string &what,
                                     int err = errno) {
    throw TcpError(status, errno_text(what, err));
}

} // namespace dt::tcp
