/* SPDX-License-Identifier: Apache-2.0 */
// Rank output: bytes read from a rank's pipe are cut into lines and written to our own
// stdout/stderr with a "[rank] " prefix. Only whole lines are written, so lines of
// different ranks never interleave; a last line without '\n' is completed at EOF. Without
// a prefix (--no-tag-output) the bytes pass through unchanged: a line longer than
// max_line and a last line without '\n' are written as they came, with no '\n' added.
#pragma once

#include <poll.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dt::launch {

class LineTagger {
public:
    // fd: where tagged lines go (1 or 2). prefix: e.g. "[3] ", empty for none.
    LineTagger(int fd, std::string prefix) : fd_(fd), prefix_(std::move(prefix)) {}

    // Takes bytes from the rank; writes every line completed by them.
    void feed(const char *data, size_t len);
    // Writes the partial last line, if any, with a '\n' added when tagged (call at EOF).
    void finish();
    // Calls fn with every line written from now on, without prefix and '\n'.
    void watch(std::function<void(std::string_view)> fn) { watch_ = std::move(fn); }

    // A line longer than this without '\n' is written in pieces rather than buffered
    // without bound (each piece a line of its own when tagged).
    static constexpr size_t max_line = 1 << 20;

private:
    // ended: the rank wrote the line's '\n' (else a piece, or a last line without one).
    void append_line(std::string &out, const char *begin, size_t len, bool ended) const;

    int fd_;
    std::string prefix_;
    std::string partial_;
    std::function<void(std::string_view)> watch_;
};

// Writes all of data to fd, waiting when fd is non-blocking and full. Errors (a closed
// reader) drop the output: the job keeps running without its log, as with `| head`.
void write_all(int fd, const char *data, size_t len) noexcept;

// Our own stdout and stderr (fd 1 and 2). A reader that does not keep up (a pager left
// unread, a full pipe) must not stall the launcher's loop, which handles signals,
// --timeout and failing ranks: what cannot be written at once is queued, in order, and
// the loop waits for room with POLLOUT. Pipes, FIFOs and terminals are written through
// a descriptor of our own (reopened non-blocking, so the flags of the one we share with
// the shell stay as they are); other files (a regular file never blocks for long, a
// socket cannot be reopened) are written directly, blocking, as before. A reader that is
// gone drops the output, as write_all does.
void emit(int fd, const char *data, size_t len);
inline void emit(int fd, const std::string &text) { emit(fd, text.data(), text.size()); }
// Bytes waiting in the queues of both.
size_t emit_queued();
// Adds a POLLOUT entry for each queue with bytes waiting.
void add_emit_fds(std::vector<pollfd> &fds);
// Writes what the readers take now, without waiting.
void emit_flush();
// Waits until the queues are written, until `until`, or until stop_fd (>= 0) is
// readable; what is left then is dropped. Returns whether stop_fd became readable.
bool emit_drain(std::chrono::steady_clock::time_point until, int stop_fd = -1);
// Above this many bytes queued, the ranks' pipes are not read: the ranks feel the slow
// reader as they would without us, and our memory stays bounded.
constexpr size_t emit_limit = size_t(4) << 20;

} // namespace dt::launch
