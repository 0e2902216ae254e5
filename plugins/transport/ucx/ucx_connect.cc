// SPDX-License-Identifier: Apache-2.0
// Setting up the mesh: addresses and host identities through the store, one endpoint per
// rank, a hello with every peer; and draining what nobody received before the worker goes.
#include "ucx_context.h"

#include "ucx_error.h"
#include "ucx_request.h"
#include "ucx_tag.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>

namespace dt::ucx {
namespace {

using Clock = std::chrono::steady_clock;

std::string rank_text(int rank) { return "rank " + std::to_string(rank); }

Clock::time_point deadline_after(int32_t timeout_ms) {
    return timeout_ms > 0 ? Clock::now() + std::chrono::milliseconds(timeout_ms)
                          : Clock::time_point::max();
}

// What UCX itself compares to decide that shared memory reaches a peer: the host name
// and this boot of the kernel.
std::string host_identity() {
    char name[256] = {};
    ::gethostname(name, sizeof(name) - 1);
    std::string boot;
    std::ifstream("/proc/sys/kernel/random/boot_id") >> boot;
    return std::string(name) + "/" + boot;
}

} // namespace

void Context::drain_unexpected() {
    // Messages nobody will receive (peers' last notices after our receives were
    // cancelled) would make UCX warn about unmatched descriptors at ucp_worker_destroy.
    for (int i = 0; i < 1024; ++i) {
        ucp_worker_progress(worker_.get());
        ucp_tag_recv_info_t info{};
        ucp_tag_message_h msg = ucp_tag_probe_nb(worker_.get(), 0, 0, 1, &info);
        if (msg == nullptr) return;
        sinks_.emplace_back(info.length);
        std::vector<char> &sink = sinks_.back();
        ucp_request_param_t prm{};
        prm.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
        prm.datatype = ucp_dt_make_contig(1);
        ucs_status_ptr_t r =
            ucp_tag_msg_recv_nbx(worker_.get(), sink.data(), sink.size(), msg, &prm);
        if (r == nullptr || UCS_PTR_IS_ERR(r)) continue;
        auto until = Clock::now() + std::chrono::milliseconds(50);
        while (ucp_request_check_status(r) == UCS_INPROGRESS && Clock::now() < until)
            ucp_worker_progress(worker_.get());
        ucp_request_free(r);
    }
}

void Context::connect(int32_t timeout_ms) {
    const std::string &addr = worker_.address();
    const std::string me = host_identity();
    // "<host>\n<process>": one key tells a peer both whether shared memory reaches this
    // rank and which process to watch.
    const std::string here = me + "\n" + Liveness::self();
    int32_t rc = host_.store_set("addr/" + std::to_string(rank_), addr.data(), addr.size());
    if (rc == DTP_OK) {
        rc = host_.store_set("host/" + std::to_string(rank_), here.data(), here.size());
    }
    if (rc != DTP_OK) {
        throw UcxError(rc, "ucx: could not publish this worker's address in the store");
    }
    auto deadline = deadline_after(timeout_ms);
    auto fetch = [&](const std::string &key, int peer) {
        int32_t left = -1;
        if (timeout_ms > 0) {
            left = static_cast<int32_t>(std::max<int64_t>(
                1, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now())
                       .count()));
        }
        std::string value;
        int32_t r = host_.store_get(key + "/" + std::to_string(peer), &value, left);
        if (r != DTP_OK) {
            throw UcxError(r, "ucx: " + rank_text(rank_) + " did not find the UCX address of " +
                                  rank_text(peer) + " in the store" +
                                  (r == DTP_ERR_TIMEOUT ? " in time: did that rank start, and "
                                                          "does it use ucx too?"
                                                        : ""));
        }
        return value;
    };
    const bool handle = mode_ == ErrMode::peer;
    for (int peer = 0; peer < size_; ++peer) {
        std::string remote = peer == rank_ ? addr : fetch("addr", peer);
        if (handle && peer != rank_) {
            // Peer failure handling alone leaves a dead peer on this host to UCX's
            // keepalive (20 s); its pidfd tells at once (ucx_liveness.h).
            std::string there = fetch("host", peer);
            size_t nl = there.find('\n');
            if (nl != std::string::npos && there.compare(0, nl, me) == 0) {
                live_.watch(peer, there.substr(nl + 1));
            }
        }
        ucp_ep_params_t ep{};
        ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
        ep.address = reinterpret_cast<const ucp_address_t *>(remote.data());
        ep.err_mode = handle ? UCP_ERR_HANDLING_MODE_PEER : UCP_ERR_HANDLING_MODE_NONE;
        if (handle) {
            // Peer failure must fail requests, never hang nor abort: without a handler
            // UCX aborts the process on a transport error (a failed single-copy read of
            // a peer that is gone, a reset connection).
            ep.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
            ep.err_handler.cb = on_peer_error;
            ep.err_handler.arg = this;
        }
        ucs_status_t s = ucp_ep_create(worker_.get(), &ep, &eps_[static_cast<size_t>(peer)]);
        if (s != UCS_OK) {
            eps_[static_cast<size_t>(peer)] = nullptr;
            throw UcxError(DTP_ERR_CONNECT,
                           "ucx: no endpoint from " + rank_text(rank_) + " to " +
                               rank_text(peer) + ": " + ucs_status_string(s) +
                               "; UCX found no transport that reaches that rank (" +
                               ucx_selection() + "). Check UCX_TLS and UCX_NET_DEVICES, or "
                               "choose DISTTRAIN_TRANSPORT=tcp");
        }
    }
    host_.log(DT_LOG_DEBUG, std::string("peer failure handling ") + (handle ? "on" : "off") +
                                "; " + std::to_string(live_.fds().size()) + " of " +
                                std::to_string(size_ - 1) + " peers' processes watched");
}

void Context::exchange_hello(int32_t timeout_ms) {
    if (size_ == 1) return;
    const size_t n = static_cast<size_t>(size_);
    // Heap arrays: the plugin may keep pointers to them until they complete or abort.
    std::vector<dt_transport_request_t> sends(n), recvs(n);
    std::vector<int32_t> in(n, -1);
    const int32_t out = rank_;
    auto post = [&](int peer) {
        int32_t rc = irecv_tagged(peer, hello_tag(peer), &in[static_cast<size_t>(peer)],
                                  sizeof(int32_t), &recvs[static_cast<size_t>(peer)]);
        if (rc < 0) throw UcxError(rc, lost_[static_cast<size_t>(peer)]);
        rc = isend_tagged(peer, hello_tag(rank_), &out, sizeof(out),
                          &sends[static_cast<size_t>(peer)]);
        if (rc < 0) throw UcxError(rc, lost_[static_cast<size_t>(peer)]);
    };
    for (int peer = 0; peer < size_; ++peer) {
        if (peer != rank_) post(peer);
    }
    auto deadline = deadline_after(timeout_ms);
    auto missing = [&] {
        std::string list;
        for (int peer = 0; peer < size_; ++peer) {
            if (peer == rank_) continue;
            auto i = static_cast<size_t>(peer);
            if (recvs[i].status == DTP_INPROGRESS || sends[i].status == DTP_INPROGRESS ||
                recvs[i].status < 0 || sends[i].status < 0) {
                list += (list.empty() ? "" : ", ") + std::to_string(peer);
            }
        }
        return list;
    };
    for (;;) {
        std::string m = missing();
        if (m.empty()) return;
        bool failed = false;
        for (size_t i = 0; i < n; ++i) failed |= recvs[i].status < 0 || sends[i].status < 0;
        if (failed || Clock::now() >= deadline) {
            std::string why = failed ? "lost the connection to" : "timed out after " +
                                                                       std::to_string(timeout_ms) +
                                                                       " ms waiting for";
            throw UcxError(failed ? DTP_ERR_CONNECT : DTP_ERR_TIMEOUT,
                           "ucx: " + rank_text(rank_) + " " + why + " ranks [" + m +
                               "] while connecting (" + ucx_selection() +
                               "); check that every rank started and that the devices UCX "
                               "uses (UCX_NET_DEVICES) reach each other");
        }
        progress(10);
    }
}

} // namespace dt::ucx
