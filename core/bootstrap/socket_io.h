/* SPDX-License-Identifier: Apache-2.0 */
// Small POSIX socket helpers for the rendezvous store: an owning fd, deadlines, and reads
// and writes that never block past a deadline. Every wait goes through poll() so a peer
// that accepts a connection and then says nothing can never hang us; an optional wake fd
// (an eventfd the store server writes on shutdown) interrupts any wait at once.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

namespace dt::bootstrap {

// Owns one file descriptor; closes it on destruction.
class Fd {
public:
    Fd() = default;
    explicit Fd(int fd) : fd_(fd) {}
    ~Fd() { reset(); }
    Fd(Fd &&other) noexcept : fd_(other.release()) {}
    Fd &operator=(Fd &&other) noexcept;
    Fd(const Fd &) = delete;
    Fd &operator=(const Fd &) = delete;

    int get() const { return fd_; }
    bool valid() const { return fd_ >= 0; }
    int release()
    {
        int fd = fd_;
        fd_ = -1;
        return fd;
    }
    void reset(int fd = -1);

private:
    int fd_ = -1;
};

// A point in time after which waits give up; "never" waits without limit.
class Deadline {
public:
    using Clock = std::chrono::steady_clock;

    static Deadline never() { return Deadline(); }
    // A negative timeout means no limit; very large ones saturate to no limit too, so a
    // caller's Millis::max() cannot overflow the clock.
    static Deadline after(std::chrono::milliseconds timeout);
    static Deadline earliest(const Deadline &a, const Deadline &b);

    bool is_never() const { return !at_; }
    bool expired() const { return at_ && Clock::now() >= *at_; }
    // Milliseconds left for poll(): -1 for never, 0 once expired, rounded up otherwise.
    int poll_ms() const;
    std::optional<Clock::time_point> at() const { return at_; }

private:
    std::optional<Clock::time_point> at_;
};

enum class IoStatus { ok, eof, timeout, woken, error };

// The outcome of a read or write; err is errno when status is error.
struct IoResult {
    IoStatus status = IoStatus::ok;
    int err = 0;
    bool ok() const { return status == IoStatus::ok; }
    std::string describe() const;
};

// Reads exactly len bytes. eof when the peer closed before the first or any later byte.
IoResult read_full(int fd, void *buf, size_t len, const Deadline &deadline,
                   int wake_fd = -1);
// Writes exactly len bytes (MSG_NOSIGNAL: a closed peer is an error, not SIGPIPE).
IoResult write_full(int fd, const void *buf, size_t len, const Deadline &deadline,
                    int wake_fd = -1);

// True when the peer has hung up (or the socket errored); never blocks.
bool peer_closed(int fd);

// "ip:port" or "[ip6]:port" of the socket's peer, for log lines; "?" when unknown.
std::string peer_name(int fd);

} // namespace dt::bootstrap
