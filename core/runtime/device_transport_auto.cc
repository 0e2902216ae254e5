// SPDX-License-Identifier: Apache-2.0
// DISTTRAIN_DEVICE_TRANSPORT=auto: device memory goes over NCCL where every rank has a
// GPU of its own, and is staged through the host transport otherwise, with the reason
// logged. Without a memory provider there is no device memory: nothing is loaded and
// nothing is asked of the store. Every rank reaches the same answer: first a vote
// through the store on whether each rank finds the plugin, then the plugin's own vote
// (in auto mode it also declines when two ranks of a host would share a GPU).
#include "runtime/context.h"

#include "plugin/loader.h"
#include "runtime/error.h"
#include "telemetry/log.h"

namespace dt {

namespace {

constexpr const char *kCandidate = "nccl";

} // namespace

void Context::open_device_transport_auto()
{
    if (memory_ == nullptr) {
        DT_LOG(debug, "context", "DISTTRAIN_DEVICE_TRANSPORT=auto: no memory provider, so "
               "no device memory: no device transport");
        return;
    }
    // Does this rank find the plugin? Loading it opens neither NCCL nor CUDA.
    std::string mine;
    try {
        plugin::load("transport", kCandidate, HostBridge::services());
    } catch (const Error &e) {
        mine = e.what();
    }
    std::string why;
    if (size() > 1 && !shared_store_) {
        why = "the ranks share no store to agree through";
    } else if (size() > 1) {
        const std::string prefix = cat(context_root(), "/device/auto/");
        store_->set(cat(prefix, rank()), mine.empty() ? "ok" : "!" + mine);
        for (int r = 0; r < size() && why.empty(); ++r) {
            std::string v = r == rank() ? (mine.empty() ? "ok" : "!" + mine)
                                        : store_->get(cat(prefix, r), time_left());
            if (v != "ok")
                why = cat("rank ", r, ": ", v.substr(1));
        }
    } else if (!mine.empty()) {
        why = mine;
    }
    if (why.empty()) {
        device_host_ = std::make_unique<HostBridge>(
            store_.get(), auth_.get(), cat(context_root(), "/device/", kCandidate, "/"),
            cfg_.timeout);
        const dt_transport_init_args_t args = transport_args(*device_host_);
        try {
            device_transport_ = plugin::open_device_transport(kCandidate, args,
                                                              HostBridge::services());
            DT_LOG(info, "context", "DISTTRAIN_DEVICE_TRANSPORT=auto: device memory goes over "
                   "transport '", kCandidate, "' from ", device_transport_->path(),
                   ": every rank has a GPU of its own");
            return;
        } catch (const Error &e) {
            // The plugin declines on every rank alike (its vote); anything else fails
            // create as an explicit choice would.
            if (e.status() != DT_ERR_UNSUPPORTED)
                throw_error(e.status(), "DISTTRAIN_DEVICE_TRANSPORT=auto: ", e.what());
            device_host_.reset();
            why = e.what();
        }
    }
    DT_LOG(info, "context", "DISTTRAIN_DEVICE_TRANSPORT=auto: device memory is staged "
           "through the host transport, since ", why);
}

} // namespace dt
