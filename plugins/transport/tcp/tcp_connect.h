/* SPDX-License-Identifier: Apache-2.0 */
// Building the full mesh. Each rank listens, publishes "addr/<rank>" = "ip:port" in the
// store, connects to every lower rank and accepts every higher one; each connection is
// authenticated (tcp_handshake.h) before it becomes an endpoint. The listening socket
// stays open in epoll for the whole job, so a stray or hostile connection is refused
// and logged instead of queueing unseen.
#pragma once

#include "tcp_address.h"
#include "tcp_config.h"
#include "tcp_handshake.h"
#include "tcp_host.h"
#include "tcp_socket.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dt::tcp {

// An authenticated connection to `rank`, ready to become an endpoint.
struct Established {
    int rank;
    Fd fd;
    std::string addr;
};

// Keys of the epoll set: kind in the top byte, an id or rank below.
constexpr uint64_t kKeyListener = uint64_t{1} << 56;
constexpr uint64_t kKeyHandshake = uint64_t{2} << 56;
constexpr uint64_t kKeyEndpoint = uint64_t{3} << 56;
constexpr uint64_t kKeyKindMask = uint64_t{0xff} << 56;

class Mesh {
public:
    // Listens on bind_addr (any port), adds the socket to epoll_fd and publishes it.
    Mesh(const Host &host, const Config &config, int rank, int size, const SockAddr &bind_addr,
         int epoll_fd);

    const std::string &listen_addr() const { return listen_addr_; }

    // Init only: looks up missing peer addresses (waiting up to wait_ms in all) and starts
    // the connections that are due. Throws TcpError(DTP_ERR_AUTH) when a peer proved it
    // does not hold the job's token.
    void connect_step(int wait_ms);

    // Init only: throws TcpError when the host has given up on this transport while the
    // mesh waits (a peer could not start it, or a member of the job died), or when the
    // store fails. Looks at most every few milliseconds.
    void check_given_up();

    // epoll events.
    void on_listener();
    std::optional<Established> on_handshake(uint64_t key);

    // Refuses or retries handshakes past their deadline.
    void expire();
    // Milliseconds until the next handshake deadline or retry, capped at cap_ms.
    int next_wakeup_ms(int cap_ms) const;

    bool complete() const { return connected_count_ == size_ - 1; }
    // "rank 2 (...), rank 3 (...)": the peers not connected yet and why.
    std::string missing() const;

private:
    struct Lower { // a lower rank this rank connects to
        std::string addr_text;
        SockAddr addr;
        bool have_addr = false;
        Clock::time_point retry_at{};
        int backoff_ms = 10;
        uint64_t handshake = 0; // key of the connection in progress, 0 when none
        std::string last_error;
    };

    void fetch_addresses(int wait_ms);
    // A store read failed with rc while this rank did `what`, or the job gave up on this
    // transport: names the peers still missing, which the host's reason cannot know.
    [[noreturn]] void read_failed(int32_t rc, const std::string &what) const;
    void start_connect(int peer);
    void add(Handshake h);
    void refused(const Handshake &h, const std::string &why);
    void connector_failed(int peer, const std::string &why, bool fatal);

    Host host_;
    Config config_;
    int rank_;
    int size_;
    int epoll_fd_;
    Fd listener_;
    std::string listen_addr_;
    std::vector<Lower> lower_;
    std::vector<bool> connected_;
    int connected_count_ = 0;
    std::map<uint64_t, Handshake> handshakes_;
    uint64_t next_id_ = 1;
    Clock::time_point next_check_{};
};

} // namespace dt::tcp
