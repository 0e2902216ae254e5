/* SPDX-License-Identifier: Apache-2.0 */
// UCP's context and this rank's one worker, owned together: the context reads UCX's own
// variables (UCX_TLS, UCX_NET_DEVICES, ...) through ucp_config_read, so users steer UCX
// exactly as they do for Open MPI or any other UCX program.
#pragma once

#include <ucp/api/ucp.h>

#include <poll.h>

#include <span>
#include <string>

namespace dt::ucx {

// DISTTRAIN_UCX_ERR_HANDLING: peer (default; "auto" is the same) gives every endpoint
// UCP_ERR_HANDLING_MODE_PEER; none gives none of them, for measurement only (see
// README.md). Throws UcxError(DTP_ERR_INVALID_CONFIG) for any other value.
enum class ErrMode { peer, none };
ErrMode err_mode_from_env();

class Worker {
public:
    // Throws UcxError with a message naming UCX_TLS / UCX_NET_DEVICES when UCX finds no
    // device it can use. In peer mode UCX's shared-memory transports are allowed on
    // endpoints that handle peer failure (see ucx_worker.cc).
    explicit Worker(ErrMode mode);
    ~Worker();
    Worker(const Worker &) = delete;
    Worker &operator=(const Worker &) = delete;

    ucp_worker_h get() const { return worker_; }
    // Sleeps until the worker has events, one of `also` is readable, or timeout_ms passes
    // (< 0: no limit). False when this worker has no event fd (the caller spins instead).
    bool wait(int timeout_ms, std::span<const pollfd> also) const;

    // This worker's address, to publish in the store.
    const std::string &address() const { return address_; }

    // What ucp_worker_print_info / ucp_ep_print_info write, for the debug log.
    std::string info() const;
    static std::string info(ucp_ep_h ep);

private:
    ucp_context_h context_ = nullptr;
    ucp_worker_h worker_ = nullptr;
    std::string address_;
    int efd_ = -1;
};

// "UCX_TLS=..., UCX_NET_DEVICES=..." as set, or "(UCX_TLS and UCX_NET_DEVICES unset)":
// what an error about devices should show the user.
std::string ucx_selection();

} // namespace dt::ucx
