// SPDX-License-Identifier: Apache-2.0
#include "ucx_worker.h"

#include "ucx_error.h"

#include <poll.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

namespace dt::ucx {
namespace {

// Runs print(stream) into a memory stream and returns what it wrote.
template <typename Print>
std::string capture(Print &&print) {
    char *buf = nullptr;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (f == nullptr) return "(open_memstream failed)";
    print(f);
    std::fclose(f);
    std::string out(buf, len);
    std::free(buf);
    return out;
}

std::string no_device_hint() {
    return "; UCX found no usable transport or device (" + ucx_selection() +
           "). Check UCX_TLS and UCX_NET_DEVICES (`ucx_info -d` lists what UCX sees), or "
           "choose DISTTRAIN_TRANSPORT=tcp";
}

// UCX 1.13 leaves its shared-memory transports (posix, sysv) off every endpoint that
// handles peer failure unless told otherwise, and those endpoints would then talk over
// loopback TCP (DISTTRAIN_SHM=0, 2 ranks: 8 B allreduce 0.7 -> 8.6 us, 32 KiB 17 -> 115
// us; README.md). With error
// handling on, a posix or sysv endpoint joins UCX's keepalive (the peer's process is
// checked) and its failures reach the endpoint's error handler. cma stays off (UCX 1.13
// gives it no peer failure support): its single-copy reads would otherwise abort the
// process when a peer is gone. A user's own UCX_*_ERROR_HANDLING wins.
void allow_shared_memory_with_error_handling(ucp_config_t *config) {
    for (const char *name : {"UCX_MM_ERROR_HANDLING", "UCX_POSIX_ERROR_HANDLING",
                             "UCX_SYSV_ERROR_HANDLING"}) {
        if (std::getenv(name) != nullptr) return;
    }
    // The option table posix and sysv share (prefix MM_): UCX 1.13 reports
    // POSIX_ERROR_HANDLING or SYSV_ERROR_HANDLING given here as invalid and ignores them.
    ucs_status_t s = ucp_config_modify(config, "MM_ERROR_HANDLING", "y");
    if (s != UCS_OK) fail(DTP_ERR_INVALID_CONFIG, "setting UCX_MM_ERROR_HANDLING", s);
}

} // namespace

ErrMode err_mode_from_env() {
    const char *v = std::getenv("DISTTRAIN_UCX_ERR_HANDLING");
    std::string s = v != nullptr ? v : "";
    if (s.empty() || s == "auto" || s == "peer") return ErrMode::peer;
    if (s == "none") return ErrMode::none;
    throw UcxError(DTP_ERR_INVALID_CONFIG,
                   "ucx: DISTTRAIN_UCX_ERR_HANDLING='" + s + "' is not known; use 'peer' "
                   "(the default, also 'auto': a lost peer fails its requests) or 'none' "
                   "(for measurement only: a lost peer on this host is noticed only at "
                   "DISTTRAIN_TIMEOUT, and a transport error aborts the process)");
}

std::string ucx_selection() {
    std::string out;
    for (const char *name : {"UCX_TLS", "UCX_NET_DEVICES"}) {
        const char *v = std::getenv(name);
        if (v == nullptr) continue;
        if (!out.empty()) out += ", ";
        out += std::string(name) + "=" + v;
    }
    return out.empty() ? "UCX_TLS and UCX_NET_DEVICES unset" : out;
}

Worker::Worker(ErrMode mode) {
    ucp_config_t *config = nullptr;
    ucs_status_t s = ucp_config_read(nullptr, nullptr, &config);
    if (s != UCS_OK) {
        throw UcxError(DTP_ERR_INVALID_CONFIG,
                       std::string("ucx: reading UCX's configuration (UCX_* variables) "
                                   "failed: ") + ucs_status_string(s));
    }
    if (mode == ErrMode::peer) {
        try {
            allow_shared_memory_with_error_handling(config);
        } catch (...) {
            ucp_config_release(config);
            throw;
        }
    }
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
    // WAKEUP: progress can sleep on the worker's event fd instead of spinning, which
    // matters when ranks outnumber cores.
    params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
    params.mt_workers_shared = 0;
    s = ucp_init(&params, config, &context_);
    ucp_config_release(config);
    if (s != UCS_OK) {
        throw UcxError(DTP_ERR_TRANSPORT, std::string("ucx: ucp_init failed: ") + ucs_status_string(s) +
                           no_device_hint());
    }
    ucp_worker_params_t wp{};
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    // The core calls one instance from one thread at a time, not always the same one.
    wp.thread_mode = UCS_THREAD_MODE_SERIALIZED;
    s = ucp_worker_create(context_, &wp, &worker_);
    if (s != UCS_OK) {
        ucp_cleanup(context_);
        throw UcxError(DTP_ERR_TRANSPORT, std::string("ucx: ucp_worker_create failed: ") +
                                              ucs_status_string(s) + no_device_hint());
    }
    ucp_address_t *addr = nullptr;
    size_t len = 0;
    s = ucp_worker_get_address(worker_, &addr, &len);
    if (s != UCS_OK) {
        ucp_worker_destroy(worker_);
        ucp_cleanup(context_);
        throw UcxError(DTP_ERR_TRANSPORT, std::string("ucx: ucp_worker_get_address failed: ") +
                                              ucs_status_string(s) + no_device_hint());
    }
    address_.assign(reinterpret_cast<const char *>(addr), len);
    ucp_worker_release_address(worker_, addr);
    if (ucp_worker_get_efd(worker_, &efd_) != UCS_OK) efd_ = -1; // spin instead
}

bool Worker::wait(int timeout_ms, std::span<const pollfd> also) const {
    if (efd_ < 0) return false;
    // Arm, then sleep unless events are already pending (UCS_ERR_BUSY: progress again).
    if (ucp_worker_arm(worker_) != UCS_OK) return true;
    std::vector<pollfd> fds{pollfd{efd_, POLLIN, 0}};
    fds.insert(fds.end(), also.begin(), also.end());
    ::poll(fds.data(), fds.size(), timeout_ms);
    return true;
}

Worker::~Worker() {
    if (worker_ != nullptr) ucp_worker_destroy(worker_);
    if (context_ != nullptr) ucp_cleanup(context_);
}

std::string Worker::info() const {
    return capture([&](FILE *f) { ucp_worker_print_info(worker_, f); });
}

std::string Worker::info(ucp_ep_h ep) {
    return capture([&](FILE *f) { ucp_ep_print_info(ep, f); });
}

} // namespace dt::ucx
