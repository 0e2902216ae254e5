/* SPDX-License-Identifier: Apache-2.0 */
// The rendezvous store: a small key-value service over TCP that ranks use to find each
// other. Served by disttrainrun (or by rank 0 when no launcher serves it), used by the
// core and, through host services, by plugins. Every connection is authenticated with
// the job token (auth.h) before any command is read.
//
// Commands: set(key, value), get(key) waiting up to a timeout for the key to appear,
// add(key, delta) returning the new value (atomic counter), wait(keys, timeout).
#pragma once

#include "bootstrap/auth.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dt::bootstrap {

using Millis = std::chrono::milliseconds;

// Splits "host:port" or "[v6addr]:port"; throws DT_ERR_INVALID_CONFIG naming `what` when
// malformed (no port, port out of range).
struct HostPort {
    std::string host;
    uint16_t port = 0;
    std::string str() const;
};
HostPort parse_host_port(const std::string &what, const std::string &addr);

class StoreServer {
public:
    // Listens on bind_addr ("host:port"; port 0 picks a free port; host "0.0.0.0" for all
    // interfaces) and serves from a background thread until destroyed. Throws
    // DT_ERR_CONNECT if it cannot bind.
    StoreServer(const std::string &bind_addr, Auth auth);
    ~StoreServer();
    StoreServer(const StoreServer &) = delete;
    StoreServer &operator=(const StoreServer &) = delete;

    // The address clients should use, "host:port" with the real port.
    std::string address() const;
    // Number of connections refused so far because they failed the token challenge.
    uint64_t refused_connections() const;
    // Those of them that proved another job token (a process of this job started with
    // another token, or of another job): how many, and the address of the last one.
    struct TokenRefusals {
        uint64_t count = 0;
        std::string last_peer; // "host:port"; empty when count is 0
    };
    TokenRefusals token_refusals() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

class StoreClient {
public:
    // Connects and authenticates, retrying refused connections until timeout (the server
    // may start after the client). Errors: DT_ERR_TIMEOUT naming the address when nothing
    // answers in time, DT_ERR_AUTH when the server refuses the token (or proves a
    // different one), DT_ERR_CONNECT for a bad address, DT_ERR_PROTOCOL when the process at
    // addr is not a store. timeout <= 0 means no limit. The same timeout bounds each later
    // call on top of any wait it asks for, a reconnect included. addr_from says where addr
    // came from (a variable, or the launcher's variables it was made of), which those errors
    // name as the thing to check. served_by names the server's owner for the error when it
    // closes ("rank 0", "the launcher"; empty: unknown).
    StoreClient(const std::string &addr, Auth auth, Millis timeout,
                std::string addr_from = "DISTTRAIN_STORE_ADDR", std::string served_by = "");
    ~StoreClient();
    StoreClient(const StoreClient &) = delete;
    StoreClient &operator=(const StoreClient &) = delete;

    // Thread safe: each call holds the connection for one round trip. A call that loses
    // the connection throws DT_ERR_STORE (it is not retried); the next call reconnects
    // within its own deadline. Once the store has answered, a reconnect that is refused
    // means its server has gone: DT_ERR_STORE at once, saying the store closed and who
    // served it, not a wait for a store that will not come back. A store that does not
    // answer in time is DT_ERR_TIMEOUT naming the call.
    // For get and wait, a negative timeout waits without limit and 0 checks once.
    void set(const std::string &key, const std::string &value);
    // Waits for key up to timeout; DT_ERR_TIMEOUT names the key and the wait.
    std::string get(const std::string &key, Millis timeout);
    // The same, but nullopt when the key did not appear in time, so that a caller that
    // polls can tell an absent key from a store that failed (which still throws).
    std::optional<std::string> try_get(const std::string &key, Millis timeout);
    int64_t add(const std::string &key, int64_t delta);
    // Waits until every key exists; DT_ERR_TIMEOUT names the keys still missing.
    void wait(const std::vector<std::string> &keys, Millis timeout);

    const std::string &address() const;
    // The numeric "ip:port" ("[ip6]:port") of the store connection last made, which is
    // address() as this host resolved it; empty before the first connection. Never waits
    // for a call in flight.
    std::string peer_address() const;
    // Why the last call could not reach the store (it closed, refused or fell silent),
    // until a call reaches it again.
    std::optional<std::string> lost() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace dt::bootstrap
