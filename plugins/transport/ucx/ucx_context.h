/* SPDX-License-Identifier: Apache-2.0 */
// One transport instance: the worker, an endpoint to every rank (this one included: UCX's
// self transport carries those messages) and the requests in flight. The core calls it
// from one thread at a time (plugin ABI), so it has no locks; UCX runs the callbacks
// below inside ucp_worker_progress, on that thread.
#pragma once

#include "ucx_host.h"
#include "ucx_liveness.h"
#include "ucx_worker.h"

#include <disttrain/plugin/transport.h>

#include <ucp/api/ucp.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace dt::ucx {

class Context {
public:
    // Publishes this worker's address (addr/<rank>) and host and process (host/<rank>),
    // reads every peer's, creates the endpoints (peer failure handling on every one,
    // unless DISTTRAIN_UCX_ERR_HANDLING=none), watches the processes of the peers on this
    // host (ucx_liveness.h) and exchanges a hello with every peer, so that a peer that
    // cannot be reached fails init (naming it) rather than the first collective. Throws
    // UcxError.
    explicit Context(const dt_transport_init_args_t &args);
    // finalize: unless aborted, closes the endpoints in flush mode (bounded wait) so the
    // peers get this rank's last messages; then fails what is pending with
    // DTP_ERR_ABORTED.
    ~Context();
    Context(const Context &) = delete;
    Context &operator=(const Context &) = delete;

    const Host &host() const { return host_; }

    int32_t isend(int32_t peer, uint64_t tag, const void *buf, size_t len,
                  dt_transport_request_t *req);
    int32_t irecv(int32_t peer, uint64_t tag, void *buf, size_t len,
                  dt_transport_request_t *req);
    // ucp_worker_progress until a request completes or timeout_ms passes (0: one round;
    // < 0: until a request completes). A watched peer whose process exited is lost here.
    // Does nothing once aborted.
    int32_t progress(int32_t timeout_ms);
    // Fails every pending request with DTP_ERR_ABORTED and closes every endpoint.
    void abort();

private:
    // A UCX request in flight for one core request. req is null once the core's request
    // was completed by other means (abort, a lost peer) and the UCX request only has to
    // finish before this is freed.
    struct Pending {
        Context *self;
        dt_transport_request_t *req;
        int peer;
        bool is_recv;
        size_t len;
        void *ucx_req = nullptr;
    };

    static void on_send(void *request, ucs_status_t status, void *user_data);
    static void on_recv(void *request, ucs_status_t status, const ucp_tag_recv_info_t *info,
                        void *user_data);
    static void on_peer_error(void *arg, ucp_ep_h ep, ucs_status_t status);

    void connect(int32_t timeout_ms);
    void exchange_hello(int32_t timeout_ms);
    int32_t isend_tagged(int peer, uint64_t ucp_tag, const void *buf, size_t len,
                         dt_transport_request_t *req);
    int32_t irecv_tagged(int peer, uint64_t ucp_tag, void *buf, size_t len,
                         dt_transport_request_t *req);
    Pending *track(Pending p);
    void untrack(Pending *p);
    int32_t started(Pending *p, void *ucx_req, const dt_transport_request_t *req);
    std::string truncation_or(ucs_status_t s, int peer, size_t cap) const;
    void check_args(int32_t peer, const void *buf, size_t len,
                    const dt_transport_request_t *req) const;
    int32_t fail_now(dt_transport_request_t *req, int32_t status, const std::string &why);
    void finish(Pending *p, int32_t status, size_t bytes);
    void peer_lost(int peer, const std::string &why);
    void check_liveness();
    void close_dead();
    // True while UCX holds a request of ours (not yet called back).
    bool ucx_requests_out() const;
    void flush_and_close();
    void drain_unexpected();
    void close_endpoint(ucp_ep_h ep) const;

    Host host_;
    int rank_;
    int size_;
    ErrMode mode_;
    // Buffers of drained messages (drain_unexpected); declared before worker_ so they
    // outlive it, in case UCX is still writing one when the worker goes.
    std::vector<std::vector<char>> sinks_;
    Worker worker_;
    std::vector<ucp_ep_h> eps_;
    std::vector<std::string> lost_;    // per peer: why it is gone; empty while alive
    std::vector<ucp_ep_h> dead_;       // failed endpoints still to close
    Liveness live_;
    std::chrono::steady_clock::time_point next_live_check_{};
    std::unordered_map<Pending *, std::unique_ptr<Pending>> pending_;
    uint64_t completions_ = 0;         // requests completed, to tell progress made
    bool aborted_ = false;
};

} // namespace dt::ucx
