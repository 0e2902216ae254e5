// SPDX-License-Identifier: Apache-2.0
#include "launch/launch_output.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace dt::launch {
namespace {

struct Output {
    int fd = -1;         // our own non-blocking descriptor, or the shared one (queued false)
    bool queued = false; // false: written directly, blocking
    bool gone = false;   // the reader went away: output is dropped
    std::string buf;     // bytes waiting, from off on
    size_t off = 0;

    size_t waiting() const { return buf.size() - off; }
};

// Output for fd 1 and 2, set up on first use. When both are the same pipe (2>&1) they
// share one queue, so that their lines keep the order they were written in.
Output &output(int fd)
{
    static Output out[2];
    static Output *slot[2] = {nullptr, nullptr};
    if (!slot[0]) {
        struct stat st[2] {};
        for (int i = 0; i < 2; ++i) {
            int shared = i + 1;
            out[i].fd = shared;
            if (fstat(shared, &st[i]) != 0 ||
                !(S_ISFIFO(st[i].st_mode) || S_ISCHR(st[i].st_mode)))
                continue;
            std::string path = "/proc/self/fd/" + std::to_string(shared);
            int own = open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
            if (own >= 0) {
                out[i].fd = own;
                out[i].queued = true;
            }
        }
        bool same = out[0].queued && out[1].queued && st[0].st_dev == st[1].st_dev &&
                    st[0].st_ino == st[1].st_ino;
        slot[0] = &out[0];
        slot[1] = same ? &out[0] : &out[1];
    }
    return *slot[fd == 2 ? 1 : 0];
}

void flush(Output &o)
{
    while (o.waiting() > 0) {
        ssize_t n = write(o.fd, o.buf.data() + o.off, o.waiting());
        if (n > 0) {
            o.off += static_cast<size_t>(n);
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            break;
        } else {
            o.gone = true;
            break;
        }
    }
    if (o.gone || o.off == o.buf.size()) {
        o.buf.clear();
        o.off = 0;
    } else if (o.off >= (size_t(1) << 20)) {
        o.buf.erase(0, o.off); // written bytes are let go a MiB at a time
        o.off = 0;
    }
}

} // namespace

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

void emit(int fd, const char *data, size_t len)
{
    Output &o = output(fd);
    if (o.gone)
        return;
    if (!o.queued) {
        write_all(o.fd, data, len);
        return;
    }
    o.buf.append(data, len);
    flush(o);
}

size_t emit_queued()
{
    Output &out = output(1), &err = output(2);
    return out.waiting() + (&err == &out ? 0 : err.waiting());
}

void add_emit_fds(std::vector<pollfd> &fds)
{
    Output &out = output(1), &err = output(2);
    if (out.waiting() > 0)
        fds.push_back({out.fd, POLLOUT, 0});
    if (&err != &out && err.waiting() > 0)
        fds.push_back({err.fd, POLLOUT, 0});
}

void emit_flush()
{
    flush(output(1));
    flush(output(2));
}

bool emit_drain(std::chrono::steady_clock::time_point until, int stop_fd)
{
    bool stopped = false;
    for (;;) {
        emit_flush();
        std::vector<pollfd> fds;
        add_emit_fds(fds);
        auto left = std::chrono::ceil<std::chrono::milliseconds>(
            until - std::chrono::steady_clock::now());
        if (fds.empty() || left.count() <= 0)
            break;
        if (stop_fd >= 0)
            fds.push_back({stop_fd, POLLIN, 0});
        // poll takes an int of milliseconds: a far `until` waits in slices of a minute.
        poll(fds.data(), fds.size(), static_cast<int>(std::min<int64_t>(left.count(), 60000)));
        if (stop_fd >= 0 && (fds.back().revents & POLLIN)) {
            stopped = true;
            break;
        }
    }
    for (int fd : {1, 2}) { // what the reader did not take in time
        output(fd).buf.clear();
        output(fd).off = 0;
    }
    return stopped;
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
    // All the lines of this chunk at once: we are the only writer of fd_ and its queue
    // keeps the order, so whole lines stay whole.
    if (!out.empty())
        emit(fd_, out);
}

void LineTagger::finish()
{
    if (partial_.empty())
        return;
    std::string out;
    append_line(out, partial_.data(), partial_.size(), false);
    partial_.clear();
    emit(fd_, out);
}

} // namespace dt::launch
