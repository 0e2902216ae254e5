/* SPDX-License-Identifier: Apache-2.0 */
// The one exception type inside the plugin. It carries the DTP_ status the C entry points
// return; its message is handed to the core through services->set_error. Nothing thrown
// here ever crosses the C ABI (ucx_plugin.cc catches everything).
#pragma once

#include <disttrain/plugin/common.h>

#include <ucs/type/status.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace dt::ucx {

class UcxError : public std::runtime_error {
public:
    UcxError(int32_t status, const std::string &message)
        : std::runtime_error(message), status_(status) {}
    int32_t status() const { return status_; }

private:
    int32_t status_;
};

// The DTP_ status a UCX status means for the core: a truncated message is a protocol
// error (the ranks disagree on a size), a lost or unreachable peer is DTP_ERR_PEER_LOST,
// a timeout DTP_ERR_TIMEOUT, a cancelled request DTP_ERR_ABORTED, the rest a transport
// failure.
inline int32_t status_of(ucs_status_t s) {
    switch (s) {
    case UCS_OK: return DTP_OK;
    case UCS_ERR_MESSAGE_TRUNCATED: return DTP_ERR_PROTOCOL;
    case UCS_ERR_CANCELED: return DTP_ERR_ABORTED;
    case UCS_ERR_TIMED_OUT:
    case UCS_ERR_ENDPOINT_TIMEOUT: return DTP_ERR_PEER_LOST;
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_UNREACHABLE:
    case UCS_ERR_REJECTED:
    case UCS_ERR_NOT_CONNECTED: return DTP_ERR_PEER_LOST;
    default: return DTP_ERR_TRANSPORT;
    }
}

// Throws UcxError(status, "ucx: <what> failed: <UCX's text>") unless s is UCS_OK.
[[noreturn]] inline void fail(int32_t status, const std::string &what, ucs_status_t s) {
    throw UcxError(status, "ucx: " + what + " failed: " + ucs_status_string(s));
}

} // namespace dt::ucx
