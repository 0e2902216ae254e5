/* SPDX-License-Identifier: Apache-2.0 */
// One transport instance: this rank's connections to every peer, the epoll set that
// drives them, and the requests in flight. The core calls it from one thread at a time
// (plugin ABI), so it has no locks.
#pragma once

#include "tcp_config.h"
#include "tcp_connect.h"
#include "tcp_endpoint.h"
#include "tcp_host.h"
#include "tcp_self.h"
#include "tcp_socket.h"

#include <disttrain/plugin/transport.h>

#include <memory>
#include <vector>

namespace dt::tcp {

class Context {
public:
    // Listens, connects the full mesh and authenticates every connection. Blocks until
    // all peers are connected or args.timeout_ms passes (DTP_ERR_TIMEOUT naming the
    // missing peers). Throws TcpError.
    explicit Context(const dt_transport_init_args_t &args);
    // finalize: fails what is pending with DTP_ERR_ABORTED, closes every socket.
    ~Context();
    Context(const Context &) = delete;
    Context &operator=(const Context &) = delete;

    const Host &host() const { return host_; }

    int32_t isend(int32_t peer, uint64_t tag, const void *buf, size_t len,
                  dt_transport_request_t *req);
    int32_t irecv(int32_t peer, uint64_t tag, void *buf, size_t len,
                  dt_transport_request_t *req);
    // One epoll_wait of up to timeout_ms (< 0: until something happens) and the work
    // it reports.
    int32_t progress(int32_t timeout_ms);
    // Fails every pending request with DTP_ERR_ABORTED and closes every connection.
    void abort();
    // finalize: lets the peers read all we sent before the connections close.
    void close_gracefully(std::chrono::milliseconds linger);

private:
    void connect_mesh(int32_t timeout_ms);
    void wait_events(int timeout_ms);
    void add_endpoint(Established e);
    void choose_congestion_control(const Established &e);
    void check_peer(int32_t peer, const void *buf, size_t len,
                    const dt_transport_request_t *req) const;

    Host host_;
    Config config_;
    int rank_;
    int size_;
    Fd epoll_;
    std::unique_ptr<Mesh> mesh_;
    SendScratch send_scratch_; // before peers_: every endpoint refers to it
    std::vector<std::unique_ptr<Endpoint>> peers_;
    SelfChannel self_;
    bool aborted_ = false;
};

} // namespace dt::tcp
