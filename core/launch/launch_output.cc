// SPDX-License-Identifier: Apache-2.0
#include "launch/launch_output.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace dt::launch {

void write_all(int fd, const char *data, size_t len) noexcept
{
    while (len > 0) {
        ssize_t n = write(fd, data, len);
        if (n > 0) {
            data += n;
            len -= static_cast<size_t>(n);
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            pollfd p{fd, POLLOUT, 0};
            poll(&p, 1, 1000);
        } else {
            return;
        }
    }
}

void LineTagger::append_line(std::string &out, const char *begin, size_t len, bool ended) const
{
    if (watch_)
        watch_(std::string_view(begin, len));
    out += prefix_;
    out.append(begin, len);
    // A piece of a longer line, or a last line without '\n': a tagged piece needs a line
    // of its own, but untagged output passes through byte for byte.
    if (ended || !prefix_.empty())
        out += '\n';
}

void LineTagger::feed(const char *data, size_t len)
{
    std::string out;
    const char *end = data + len;
    while (data < end) {
        const char *nl = static_cast<const char *>(std::memchr(data, '\n', end - data));
        if (!nl) {
            partial_.append(data, end);
            break;
        }
        if (partial_.empty()) {
            append_line(out, data, static_cast<size_t>(nl - data), true);
        } else {
            partial_.append(data, nl);
            append_line(out, partial_.data(), partial_.size(), true);
            partial_.clear();
        }
        data = nl + 1;
    }
    if (partial_.size() >= max_line) {
        append_line(out, partial_.data(), partial_.size(), false);
        partial_.clear();
    }
    // One write for all the lines of this chunk: we are the only writer of fd_, so
    // whole lines stay whole.
    if (!out.empty())
        write_all(fd_, out.data(), out.size());
}

void LineTagger::finish()
{
    if (partial_.empty())
        return;
    std::string out;
    append_line(out, partial_.data(), partial_.size(), false);
    partial_.clear();
    write_all(fd_, out.data(), out.size());
}

} // namespace dt::launch
