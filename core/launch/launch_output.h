/* SPDX-License-Identifier: Apache-2.0 */
// Rank output: bytes read from a rank's pipe are cut into lines and written to our own
// stdout/stderr with a "[rank] " prefix. Only whole lines are written, so lines of
// different ranks never interleave; a last line without '\n' is completed at EOF. Without
// a prefix (--no-tag-output) the bytes pass through unchanged: a line longer than
// max_line and a last line without '\n' are written as they came, with no '\n' added.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <utility>

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

} // namespace dt::launch
