/* SPDX-License-Identifier: Apache-2.0 */
// Helpers shared by the bootstrap tests: environment save/restore, raw loopback sockets
// for talking to the store byte by byte, and status assertions.
#pragma once

#include "bootstrap/socket_io.h"
#include "runtime/error.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <initializer_list>
#include <map>
#include <netinet/in.h>
#include <optional>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace dt::bootstrap::test {

// Clears the given variables for the test's lifetime and restores them afterwards.
class EnvGuard {
public:
    explicit EnvGuard(std::initializer_list<const char *> names)
    {
        for (const char *n : names) {
            const char *v = std::getenv(n);
            saved_[n] = v ? std::optional<std::string>(v) : std::nullopt;
            ::unsetenv(n);
        }
    }
    ~EnvGuard()
    {
        for (const auto &[n, v] : saved_) {
            if (v)
                ::setenv(n.c_str(), v->c_str(), 1);
            else
                ::unsetenv(n.c_str());
        }
    }
    void set(const char *name, const std::string &value)
    {
        ASSERT_TRUE(saved_.count(name)) << name << " is not guarded";
        ::setenv(name, value.c_str(), 1);
    }
    void unset(const char *name)
    {
        ASSERT_TRUE(saved_.count(name)) << name << " is not guarded";
        ::unsetenv(name);
    }

private:
    std::map<std::string, std::optional<std::string>> saved_;
};

// Runs f, expects a dt::Error with the status, returns its message ("" if none thrown).
inline std::string error_of(const std::function<void()> &f, dt_status_t status)
{
    try {
        f();
    } catch (const Error &e) {
        EXPECT_EQ(e.status(), status) << e.what();
        return e.what();
    }
    ADD_FAILURE() << "expected a dt::Error with status " << status;
    return "";
}

// A raw TCP connection to 127.0.0.1:port with receive timeouts, for speaking bytes.
inline Fd connect_raw(uint16_t port)
{
    Fd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(s.get(), reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
    return s;
}

// A listening socket on 127.0.0.1 with an ephemeral port that never accepts: the kernel
// completes TCP handshakes, but nothing ever speaks.
inline Fd listen_raw(uint16_t &port)
{
    Fd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(s.get(), reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(s.get(), 16), 0);
    socklen_t len = sizeof a;
    ::getsockname(s.get(), reinterpret_cast<sockaddr *>(&a), &len);
    port = ntohs(a.sin_port);
    return s;
}

// A loopback port that was free a moment ago (bound then closed).
inline uint16_t free_port()
{
    uint16_t port = 0;
    listen_raw(port);
    return port;
}

inline uint16_t port_of(const std::string &address)
{
    return static_cast<uint16_t>(std::stoi(address.substr(address.rfind(':') + 1)));
}

// True once the peer closes the connection (reads and discards anything it sends first);
// false if it is still open after the timeout.
inline bool closed_by_peer(int fd, std::chrono::milliseconds timeout = std::chrono::seconds(5))
{
    Deadline deadline = Deadline::after(timeout);
    char buf[256];
    for (;;) {
        IoResult r = read_full(fd, buf, 1, deadline);
        if (r.status == IoStatus::eof)
            return true;
        if (r.status != IoStatus::ok)
            return false;
    }
}

// Polls cond every 10 ms until it holds or the timeout passes.
inline bool eventually(const std::function<bool()> &cond,
                       std::chrono::milliseconds timeout = std::chrono::seconds(5))
{
    auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
        if (cond())
            return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return cond();
}

} // namespace dt::bootstrap::test
