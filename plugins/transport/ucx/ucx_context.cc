// SPDX-License-Identifier: Apache-2.0
#include "ucx_context.h"

#include "ucx_error.h"
#include "ucx_request.h"
#include "ucx_tag.h"

#include <sched.h>

#include <algorithm>
#include <chrono>

namespace dt::ucx {
namespace {

using Clock = std::chrono::steady_clock;

// How long progress spins before it sleeps on the worker's event fd.
constexpr auto kSpin = std::chrono::microseconds(50);
// How long a clean finalize waits for peers to take this rank's last messages.
constexpr auto kFlushLimit = std::chrono::seconds(10);
// How often progress looks at the watched peers' pidfds while it does not sleep (a sleep
// polls them anyway): often enough to beat any TCP reset, rarely enough to cost nothing.
constexpr auto kLivenessEvery = std::chrono::milliseconds(1);

std::string rank_text(int rank) { return "rank " + std::to_string(rank); }

ucp_request_param_t request_param(void *user_data) {
    ucp_request_param_t prm{};
    prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                       UCP_OP_ATTR_FIELD_DATATYPE;
    prm.user_data = user_data;
    prm.datatype = ucp_dt_make_contig(1);
    return prm;
}

} // namespace

Context::Context(const dt_transport_init_args_t &args)
    : host_(args.host, args.services), rank_(args.rank), size_(args.size),
      mode_(err_mode_from_env()), worker_(mode_) {
    if (size_ > kMaxRanks) {
        throw UcxError(DTP_ERR_INVALID_ARGUMENT,
                       "ucx: " + std::to_string(size_) + " ranks; this plugin encodes the "
                       "source rank in 20 tag bits, so at most " + std::to_string(kMaxRanks));
    }
    eps_.assign(static_cast<size_t>(size_), nullptr);
    lost_.resize(static_cast<size_t>(size_));
    try {
        connect(args.timeout_ms);
        exchange_hello(args.timeout_ms);
    } catch (...) {
        abort();
        throw;
    }
    for (int peer = 0; peer < size_; ++peer) {
        if (peer == rank_) continue;
        host_.log(DT_LOG_DEBUG, "endpoint to " + rank_text(peer) + ":\n" +
                                    Worker::info(eps_[static_cast<size_t>(peer)]));
    }
}

Context::~Context() {
    // After the core's own abort, the buffers of the requests it failed are gone (the
    // collective's stack unwound). A receive UCX had already matched to a rendezvous
    // survives ucp_request_cancel, and progressing the worker would write its data there
    // (a SIGSEGV in ucp_rndv_data_handler, seen with ranks that disagree on a count). So
    // then the worker is left alone: ucp_worker_destroy drops what is still under way.
    const bool unsafe = aborted_ && ucx_requests_out();
    if (!aborted_) flush_and_close();
    abort();
    if (!unsafe) {
        // Let UCX finish what abort cancelled, briefly: callbacks still refer to Pending.
        auto until = Clock::now() + std::chrono::milliseconds(200);
        while (!pending_.empty() && Clock::now() < until) ucp_worker_progress(worker_.get());
        drain_unexpected();
    }
    // Whatever UCX still holds might call back during ucp_worker_destroy: leave those few
    // records allocated rather than let a callback touch freed memory.
    for (auto &entry : pending_) entry.second.release();
    pending_.clear();
}

void Context::check_args(int32_t peer, const void *buf, size_t len,
                         const dt_transport_request_t *req) const {
    if (req == nullptr) throw UcxError(DTP_ERR_INVALID_ARGUMENT, "ucx: request is NULL");
    if (peer < 0 || peer >= size_) {
        throw UcxError(DTP_ERR_INVALID_ARGUMENT,
                       "ucx: peer " + std::to_string(peer) + " is not a rank of this job "
                       "(size " + std::to_string(size_) + ")");
    }
    if (buf == nullptr && len > 0) {
        throw UcxError(DTP_ERR_INVALID_ARGUMENT,
                       "ucx: buffer is NULL but length is " + std::to_string(len));
    }
}

int32_t Context::fail_now(dt_transport_request_t *req, int32_t status, const std::string &why) {
    complete_request(req, status, 0);
    host_.set_error(why);
    return status;
}

int32_t Context::isend(int32_t peer, uint64_t tag, const void *buf, size_t len,
                       dt_transport_request_t *req) {
    check_args(peer, buf, len, req);
    return isend_tagged(peer, encode_tag(tag, rank_), buf, len, req);
}

int32_t Context::irecv(int32_t peer, uint64_t tag, void *buf, size_t len,
                       dt_transport_request_t *req) {
    check_args(peer, buf, len, req);
    return irecv_tagged(peer, encode_tag(tag, peer), buf, len, req);
}

int32_t Context::isend_tagged(int peer, uint64_t ucp_tag, const void *buf, size_t len,
                              dt_transport_request_t *req) {
    start_request(req, peer);
    if (aborted_) return fail_now(req, DTP_ERR_ABORTED, "ucx: the transport was aborted");
    const auto i = static_cast<size_t>(peer);
    if (!lost_[i].empty()) return fail_now(req, DTP_ERR_PEER_LOST, lost_[i]);
    Pending *p = track(Pending{this, req, peer, false, len});
    ucp_request_param_t prm = request_param(p);
    prm.cb.send = on_send;
    ucs_status_ptr_t r = ucp_tag_send_nbx(eps_[i], buf, len, ucp_tag, &prm);
    if (r == nullptr) {
        untrack(p);
        complete_request(req, DTP_OK, len);
        return DTP_OK;
    }
    if (UCS_PTR_IS_ERR(r)) {
        untrack(p);
        ucs_status_t s = UCS_PTR_STATUS(r);
        return fail_now(req, status_of(s), "ucx: send to " + rank_text(peer) + " failed: " +
                                               ucs_status_string(s));
    }
    return started(p, r, req);
}

int32_t Context::irecv_tagged(int peer, uint64_t ucp_tag, void *buf, size_t len,
                              dt_transport_request_t *req) {
    start_request(req, peer);
    if (aborted_) return fail_now(req, DTP_ERR_ABORTED, "ucx: the transport was aborted");
    const auto i = static_cast<size_t>(peer);
    if (!lost_[i].empty()) return fail_now(req, DTP_ERR_PEER_LOST, lost_[i]);
    Pending *p = track(Pending{this, req, peer, true, len});
    ucp_request_param_t prm = request_param(p);
    // Always through the callback: UCX 1.13 leaves recv_info unset when a message that
    // already arrived completes the receive in place, and the length is what we need.
    prm.op_attr_mask |= UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    prm.cb.recv = on_recv;
    ucs_status_ptr_t r = ucp_tag_recv_nbx(worker_.get(), buf, len, ucp_tag, kFullMask, &prm);
    if (UCS_PTR_IS_ERR(r)) {
        untrack(p);
        ucs_status_t s = UCS_PTR_STATUS(r);
        return fail_now(req, status_of(s), truncation_or(s, peer, len));
    }
    return started(p, r, req);
}

// The record goes in before UCX sees it: UCX may run the callback inside the call that
// starts the operation (a receive matching a message that already arrived, a send to
// this rank's own posted receive), and the callback finds and frees it there.
Context::Pending *Context::track(Pending p) {
    auto owned = std::make_unique<Pending>(p);
    Pending *key = owned.get();
    pending_.emplace(key, std::move(owned));
    return key;
}

void Context::untrack(Pending *p) { pending_.erase(p); }

int32_t Context::started(Pending *p, void *ucx_req, const dt_transport_request_t *req) {
    // Still there: UCX did not complete it yet, so the request is live and ours to watch.
    // Gone: the callback already completed the core's request (and freed the UCX one).
    auto it = pending_.find(p);
    if (it == pending_.end()) return req->status;
    it->second->ucx_req = ucx_req;
    return DTP_INPROGRESS;
}

std::string Context::truncation_or(ucs_status_t s, int peer, size_t cap) const {
    if (s == UCS_ERR_MESSAGE_TRUNCATED) {
        return "ucx: the message from " + rank_text(peer) + " is larger than the " +
               std::to_string(cap) + "-byte receive posted for it; do all ranks pass the same "
               "count?";
    }
    return "ucx: receive from " + rank_text(peer) + " failed: " + ucs_status_string(s);
}

void Context::finish(Pending *p, int32_t status, size_t bytes) {
    if (p->req != nullptr) {
        complete_request(p->req, status, status == DTP_OK ? bytes : 0);
        ++completions_;
    }
    pending_.erase(p);
}

void Context::on_send(void *request, ucs_status_t status, void *user_data) {
    auto *p = static_cast<Pending *>(user_data);
    Context *c = p->self;
    if (status != UCS_OK && p->req != nullptr) {
        c->host_.log(DT_LOG_DEBUG, "send to " + rank_text(p->peer) + " failed: " +
                                       ucs_status_string(status));
    }
    c->finish(p, status_of(status), p->len);
    ucp_request_free(request);
}

void Context::on_recv(void *request, ucs_status_t status, const ucp_tag_recv_info_t *info,
                      void *user_data) {
    auto *p = static_cast<Pending *>(user_data);
    Context *c = p->self;
    if (status != UCS_OK && status != UCS_ERR_CANCELED && p->req != nullptr) {
        c->host_.log(DT_LOG_ERROR, c->truncation_or(status, p->peer, p->len));
    }
    c->finish(p, status_of(status), info != nullptr ? info->length : 0);
    ucp_request_free(request);
}

void Context::on_peer_error(void *arg, ucp_ep_h ep, ucs_status_t status) {
    auto *c = static_cast<Context *>(arg);
    auto it = std::find(c->eps_.begin(), c->eps_.end(), ep);
    if (it == c->eps_.end()) return;
    // Whatever UCX reports (a reset connection, a keepalive timeout, a failed shared
    // memory attach, an I/O error), the endpoint is unusable from now on.
    c->peer_lost(static_cast<int>(it - c->eps_.begin()), ucs_status_string(status));
}

void Context::check_liveness() {
    for (int peer : live_.exited()) peer_lost(peer, "its process exited");
}

void Context::peer_lost(int peer, const std::string &why) {
    const auto i = static_cast<size_t>(peer);
    if (!lost_[i].empty()) return;
    lost_[i] = "ucx: lost " + rank_text(peer) + ": " + why;
    host_.log(DT_LOG_INFO, lost_[i]);
    // Its receives would wait forever: fail them now and cancel them in UCX. Its sends
    // UCX fails itself; the core's requests are completed here all the same.
    std::vector<void *> cancel;
    for (auto &[key, p] : pending_) {
        if (p->peer != peer || p->req == nullptr) continue;
        complete_request(p->req, DTP_ERR_PEER_LOST, 0);
        ++completions_;
        p->req = nullptr;
        if (p->is_recv && p->ucx_req != nullptr) cancel.push_back(p->ucx_req);
    }
    for (void *r : cancel) ucp_request_cancel(worker_.get(), r);
    // A failed endpoint must be closed; not from inside UCX's callback, so later.
    dead_.push_back(eps_[i]);
    eps_[i] = nullptr;
}

void Context::close_dead() {
    while (!dead_.empty()) {
        ucp_ep_h ep = dead_.back();
        dead_.pop_back();
        close_endpoint(ep);
    }
}

void Context::flush_and_close() {
    // UCX may call a send complete once the data sits in its own buffers (TCP's bcopy
    // path does); a forced close would drop what was not written yet and leave a peer
    // waiting for its last chunk. Closing in flush mode delivers it first.
    std::vector<void *> closing;
    for (ucp_ep_h &ep : eps_) {
        if (ep == nullptr) continue;
        ucp_request_param_t prm{};
        prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        prm.flags = 0;  // UCP_EP_CLOSE_MODE_FLUSH
        ucs_status_ptr_t r = ucp_ep_close_nbx(ep, &prm);
        ep = nullptr;   // on_peer_error ignores it from now on
        if (r != nullptr && !UCS_PTR_IS_ERR(r)) closing.push_back(r);
    }
    auto until = Clock::now() + kFlushLimit;
    auto busy = [&] {
        return std::any_of(closing.begin(), closing.end(), [](void *r) {
            return ucp_request_check_status(r) == UCS_INPROGRESS;
        });
    };
    while (busy() && Clock::now() < until) ucp_worker_progress(worker_.get());
    if (busy()) {
        host_.log(DT_LOG_WARN, "ucx: a peer did not take this rank's last messages within " +
                                   std::to_string(kFlushLimit.count()) + " s; closing anyway");
    }
    // Released, not waited for: UCX finishes or drops them with the worker.
    for (void *r : closing) ucp_request_free(r);
}

void Context::close_endpoint(ucp_ep_h ep) const {
    ucp_request_param_t prm{};
    prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    // A forced close may fail the peer's side of the connection, which UCX allows only
    // where every endpoint handles peer failure: a peer without a handler would abort.
    prm.flags = mode_ == ErrMode::peer ? UCP_EP_CLOSE_FLAG_FORCE : 0;
    ucs_status_ptr_t r = ucp_ep_close_nbx(ep, &prm);
    // The close goes on inside UCX; we need nothing more from it.
    if (r != nullptr && !UCS_PTR_IS_ERR(r)) ucp_request_free(r);
}

bool Context::ucx_requests_out() const {
    return std::any_of(pending_.begin(), pending_.end(),
                       [](const auto &entry) { return entry.second->ucx_req != nullptr; });
}

int32_t Context::progress(int32_t timeout_ms) {
    // Nothing of the core's is pending after an abort, and UCX may still hold requests
    // whose buffers are freed (see ~Context): progressing could only do harm.
    if (aborted_) return DTP_OK;
    const uint64_t before = completions_;
    const auto start = Clock::now();
    const auto deadline = timeout_ms < 0 ? Clock::time_point::max()
                                         : start + std::chrono::milliseconds(timeout_ms);
    for (;;) {
        while (ucp_worker_progress(worker_.get()) != 0) {
        }
        auto now = Clock::now();
        if (now >= next_live_check_) {
            check_liveness();
            next_live_check_ = now + kLivenessEvery;
        }
        close_dead();
        if (completions_ != before || timeout_ms == 0 || pending_.empty() || now >= deadline)
            return DTP_OK;
        // Spin briefly (a small message's round trip), then sleep on the worker's events:
        // ranks that outnumber the cores must not burn each other's time.
        if (now - start < kSpin) {
            sched_yield();
            continue;
        }
        int ms = deadline == Clock::time_point::max()
                     ? -1
                     : static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count());
        if (worker_.wait(ms, live_.fds())) {
            next_live_check_ = {}; // woken, perhaps by a pidfd: look at once
        } else {
            sched_yield();
        }
    }
}

void Context::abort() {
    if (aborted_) return;
    aborted_ = true;
    std::vector<void *> cancel;
    for (auto &[key, p] : pending_) {
        if (p->req != nullptr) {
            complete_request(p->req, DTP_ERR_ABORTED, 0);
            ++completions_;
            p->req = nullptr;
        }
        // ucx_req is null only inside the call that starts it (track()).
        if (p->is_recv && p->ucx_req != nullptr) cancel.push_back(p->ucx_req);
    }
    for (void *r : cancel) ucp_request_cancel(worker_.get(), r);
    close_dead();
    // Closing tells UCX to drop the connections: peers see them fail and give up on us.
    for (ucp_ep_h &ep : eps_) {
        if (ep != nullptr) close_endpoint(ep);
        ep = nullptr;
    }
    ucp_worker_progress(worker_.get());
}

} // namespace dt::ucx
