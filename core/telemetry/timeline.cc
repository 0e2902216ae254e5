// SPDX-License-Identifier: Apache-2.0
#include "telemetry/timeline.h"

#include "runtime/env.h"
#include "runtime/error.h"
#include "telemetry/log.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace dt {

namespace {

// The length of the well-formed UTF-8 sequence at s[i] (Unicode's table 3-7: no overlong
// forms, no surrogates, nothing past U+10FFFF), or 0 when the bytes there are not one.
size_t utf8_sequence(const std::string &s, size_t i)
{
    const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char b = byte(i);
    size_t len;
    unsigned char lo = 0x80, hi = 0xbf; // the second byte's range
    if (b >= 0xc2 && b <= 0xdf) {
        len = 2;
    } else if (b >= 0xe0 && b <= 0xef) {
        len = 3;
        lo = b == 0xe0 ? 0xa0 : 0x80;
        hi = b == 0xed ? 0x9f : 0xbf;
    } else if (b >= 0xf0 && b <= 0xf4) {
        len = 4;
        lo = b == 0xf0 ? 0x90 : 0x80;
        hi = b == 0xf4 ? 0x8f : 0xbf;
    } else {
        return 0;
    }
    if (i + len > s.size() || byte(i + 1) < lo || byte(i + 1) > hi)
        return 0;
    for (size_t k = 2; k < len; ++k)
        if (byte(i + k) < 0x80 || byte(i + k) > 0xbf)
            return 0;
    return len;
}

// How much of a write reached the file, and errno where it stopped short (0: all of it).
struct Written {
    size_t bytes = 0;
    int error = 0;
};

Written write_at(int fd, const std::string &text, off_t offset)
{
    Written w;
    while (w.bytes < text.size()) {
        ssize_t n = ::pwrite(fd, text.data() + w.bytes, text.size() - w.bytes,
                             offset + static_cast<off_t>(w.bytes));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) { // a short write's retry tells why: ENOSPC, EFBIG
            w.error = n < 0 ? errno : ENOSPC;
            break;
        }
        w.bytes += static_cast<size_t>(n);
    }
    return w;
}

} // namespace

std::string json_escape(const std::string &s)
{
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        const auto u = static_cast<unsigned char>(c);
        char buf[8];
        switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\t': out += "\\t"; break;
        default:
            if (u < 0x20) {
                std::snprintf(buf, sizeof buf, "\\u%04x", u);
                out += buf;
            } else if (u < 0x80) {
                out += c;
            } else if (size_t len = utf8_sequence(s, i)) {
                out.append(s, i, len);
                i += len - 1;
            } else {
                // Not UTF-8 (a name is the caller's bytes): the text \xNN keeps the file
                // valid JSON and still shows the byte.
                std::snprintf(buf, sizeof buf, "\\\\x%02x", u);
                out += buf;
            }
        }
    }
    return out;
}

std::unique_ptr<Timeline> Timeline::open_from_env(int rank, bool joiner, int64_t launch_id)
{
    auto path = env::get("DISTTRAIN_TIMELINE");
    if (!path)
        return nullptr;
    auto placeholder = path->find("{rank}");
    if (placeholder == std::string::npos) // one file: the process that starts as rank 0's
        return rank == 0 && !joiner ? open(*path, 0, "rank 0") : nullptr;
    if (!joiner) {
        path->replace(placeholder, 6, std::to_string(rank));
        return open(*path, rank, cat("rank ", rank));
    }
    // A joiner's starting rank is a placeholder, often the number of the rank it replaces,
    // whose file holds that rank's history: its launch id is a number no other process of
    // the job has.
    if (launch_id < 0) {
        DT_LOG(warn, "timeline", "DISTTRAIN_TIMELINE: this process joins a running elastic "
               "job and has no DISTTRAIN_LAUNCH_ID to name its file by ({rank} would be a "
               "number another process of the job writes): it writes no timeline; start "
               "the job with disttrainrun --elastic, which gives every process one");
        return nullptr;
    }
    path->replace(placeholder, 6, std::to_string(launch_id));
    return open(*path, launch_id, cat("joined, launch id ", launch_id));
}

std::unique_ptr<Timeline> Timeline::open(const std::string &path, int64_t pid,
                                         const std::string &label)
{
    const auto cannot_write = [&](int error) {
        throw_error(DT_ERR_INVALID_CONFIG, "DISTTRAIN_TIMELINE='", path,
                    "' cannot be written: ", std::strerror(error),
                    "; give a path in a writable folder");
    };
    // Not truncated yet: the file may be another live writer's, as its lock tells.
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        cannot_write(errno);
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
        ::close(fd);
        DT_LOG(warn, "timeline", "DISTTRAIN_TIMELINE='", path, "' is being written by "
               "another process or context, which keeps it: this one writes no timeline; "
               "give each its own file (\"{rank}\" in the path gives one per rank)");
        return nullptr;
    }
    // Any other lock failure (a file system without locks): written unlocked.
    static const std::string empty = "[\n]";
    int error = ::ftruncate(fd, 0) != 0 ? errno : write_at(fd, empty, 0).error;
    if (error != 0) {
        ::close(fd);
        cannot_write(error);
    }
    return std::unique_ptr<Timeline>(new Timeline(fd, path, pid, label));
}

Timeline::Timeline(int fd, const std::string &path, int64_t pid, const std::string &label)
    : fd_(fd), path_(path), pid_(pid), end_(2)
{
    // One moment on both clocks: the system clock read between two monotonic reads, the
    // closest pair of a few tries (a process preempted between the reads would shift its
    // whole trace against the other processes' by as long as it waited).
    auto best = Clock::duration::max();
    for (int attempt = 0; attempt < 5 && best > std::chrono::microseconds(20); ++attempt) {
        const auto before = Clock::now();
        const auto wall = std::chrono::system_clock::now();
        const auto after = Clock::now();
        if (after - before < best) {
            best = after - before;
            origin_ = before + (after - before) / 2;
            origin_epoch_us_ = std::chrono::duration_cast<std::chrono::microseconds>(
                                   wall.time_since_epoch())
                                   .count();
        }
    }
    std::lock_guard lock(mutex_);
    append(cat(R"({"name":"process_name","ph":"M","pid":)", pid_, R"(,"args":{"name":")",
               json_escape(label), R"("}})"));
    // Ranks in order when the files of a job are viewed as one trace.
    append(cat(R"({"name":"process_sort_index","ph":"M","pid":)", pid_,
               R"(,"args":{"sort_index":)", pid_, "}}"));
    append(cat(R"({"name":"thread_name","ph":"M","pid":)", pid_,
               R"(,"tid":0,"args":{"name":"engine"}})"));
}

Timeline::~Timeline()
{
    ::close(fd_);
}

int64_t Timeline::micros(Clock::time_point t) const
{
    return origin_epoch_us_ +
           std::chrono::duration_cast<std::chrono::microseconds>(t - origin_).count();
}

int Timeline::row(const std::string &name)
{
    auto it = rows_.find(name);
    if (it != rows_.end())
        return it->second;
    int tid = static_cast<int>(rows_.size()) + 1;
    rows_.emplace(name, tid);
    append(cat(R"({"name":"thread_name","ph":"M","pid":)", pid_, R"(,"tid":)", tid,
               R"(,"args":{"name":")", json_escape(name), R"("}})"));
    return tid;
}

void Timeline::append(const std::string &event)
{
    if (stopped_)
        return;
    // One write replaces the closing bracket with the event and a new bracket.
    std::string text = (first_ ? "" : ",\n") + event + "\n]";
    Written w = write_at(fd_, text, end_);
    if (w.error != 0)
        return stop(w.error, w.bytes);
    first_ = false;
    end_ += static_cast<off_t>(text.size()) - 1;
    ++events_;
}

void Timeline::stop(int error, size_t written)
{
    stopped_ = true;
    // Part of the event may be in the file: the closing bracket goes back in its place
    // (inside what the file held before, so it takes no new space) and the rest is cut.
    bool valid = written == 0 ||
                 (write_at(fd_, "]", end_).error == 0 && ::ftruncate(fd_, end_ + 1) == 0);
    DT_LOG(warn, "timeline", "DISTTRAIN_TIMELINE='", path_, "': the timeline stopped after ",
           events_, " events, since writing the next failed: ", std::strerror(error),
           valid ? "; the file holds those events as valid JSON"
                 : "; the file could not be restored to valid JSON either",
           " (free space, or give a path on a file system with room)");
}

void Timeline::phase(const std::string &name, const char *phase, Clock::time_point start,
                     Clock::time_point end, const std::string &args)
{
    std::lock_guard lock(mutex_);
    int tid = row(name);
    append(cat(R"({"name":")", phase, R"(","ph":"X","pid":)", pid_, R"(,"tid":)", tid,
               R"(,"ts":)", micros(start), R"(,"dur":)", std::max<int64_t>(micros(end) - micros(start), 0),
               R"(,"args":{)", args, "}}"));
}

void Timeline::marker(const char *what, Clock::time_point at, const std::string &args)
{
    std::lock_guard lock(mutex_);
    append(cat(R"({"name":")", what, R"(","ph":"i","s":"t","pid":)", pid_,
               R"(,"tid":0,"ts":)", micros(at), R"(,"args":{)", args, "}}"));
}

} // namespace dt
