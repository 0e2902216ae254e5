#include "ucx_worker.h"

#include "ucx_error.h"

#include <poll.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

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

} // namespace

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

Worker::Worker() {
    ucp_config_t *config = nullptr;
    ucs_status_t s = ucp_config_read(nullptr, nullptr, &config);
    if (s != UCS_OK) {
        throw UcxError(DTP_ERR_INVALID_CONFIG,
                       std::string("ucx: reading UCX's configuration (UCX_* variables) "
                                   "failed: ") + ucs_status_string(s));
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

bool Worker::wait(int timeout_ms) const {
    if (efd_ < 0) return false;
    // Arm, then sleep unless events are already pending (UCS_ERR_BUSY: progress again).
    if (ucp_worker_arm(worker_) != UCS_OK) return true;
    pollfd p{efd_, POLLIN, 0};
    ::poll(&p, 1, timeout_ms);
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
