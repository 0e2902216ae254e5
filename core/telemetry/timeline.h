/* SPDX-License-Identifier: Apache-2.0 */
// The timeline: a Chrome trace / Perfetto JSON file (DISTTRAIN_TIMELINE=path) with one
// row per named operation and its phases (negotiation wait, queue, copy into the fusion
// buffer, the collective, copy out), plus cycle, fusion and re-form markers. The file is
// a valid JSON array after every event: each write overwrites the closing "]" and appends
// a new one, so a job killed at any moment leaves a readable trace. A write that fails (a
// full disk, a file size limit) is undone, the file keeps the events before it, and the
// timeline stops with one warning.
//
// A context opens its process's file once, when it is created, and keeps it across
// elastic re-forms (the rank and size each re-form gives are markers in it). Only rank 0
// writes unless the path contains "{rank}", which is replaced by the rank the process
// starts with, or, for a process that joins a running elastic job (whose starting rank is
// a placeholder, often a dead rank's), by its DISTTRAIN_LAUNCH_ID, which disttrainrun
// numbers after every rank of the job. The file is locked while written: a second writer
// of one path (another job, another context) writes nothing rather than truncate it.
//
// Event times are microseconds since the Unix epoch: the system clock read when the file
// opens, advanced by the monotonic clock (so a clock step mid-job does not bend the
// trace). The files of one job thus share one time axis, exactly on one host and to
// within the hosts' clock synchronisation across hosts, and their process ids differ
// (the starting rank, or a joiner's launch id): concatenated, they are one trace with a
// row per process.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace dt {

class Timeline {
public:
    using Clock = std::chrono::steady_clock;

    // This process's timeline per DISTTRAIN_TIMELINE: rank is its rank at the start,
    // joiner whether it joins a running elastic job, launch_id its DISTTRAIN_LAUNCH_ID
    // (-1: none). Null when the variable is unset, this process does not write, or
    // another writer holds the file (then with a warning). Throws DT_ERR_INVALID_CONFIG
    // if the file cannot be created.
    static std::unique_ptr<Timeline> open_from_env(int rank, bool joiner, int64_t launch_id);
    // A timeline at path whose events carry pid and whose process row is called label;
    // null (with a warning) when another writer holds the file. Throws as above.
    static std::unique_ptr<Timeline> open(const std::string &path, int64_t pid,
                                          const std::string &label);

    ~Timeline();
    Timeline(const Timeline &) = delete;
    Timeline &operator=(const Timeline &) = delete;

    // A phase of operation `name` from start to end; args is a JSON object body or "".
    void phase(const std::string &name, const char *phase, Clock::time_point start,
               Clock::time_point end, const std::string &args = "");
    // A marker on the engine's own row.
    void marker(const char *what, Clock::time_point at, const std::string &args = "");

private:
    Timeline(int fd, const std::string &path, int64_t pid, const std::string &label);
    int row(const std::string &name); // thread id of the operation's row; caller locks
    void append(const std::string &event); // caller locks
    void stop(int error, size_t written); // caller locks
    int64_t micros(Clock::time_point t) const;

    std::mutex mutex_;
    int fd_ = -1;
    std::string path_;
    int64_t pid_;
    off_t end_ = 0; // offset of the closing "]"
    bool first_ = true;
    bool stopped_ = false; // a write failed: nothing more is written
    uint64_t events_ = 0;  // written so far
    Clock::time_point origin_;  // when the file opened, on the monotonic clock
    int64_t origin_epoch_us_ = 0; // the same moment in microseconds since the Unix epoch
    std::unordered_map<std::string, int> rows_;
};

// s as the inside of a JSON string: quotes, backslashes and control characters escaped,
// well-formed UTF-8 kept, and any other byte written as the text \xNN, so that a name of
// arbitrary bytes still gives a valid file.
std::string json_escape(const std::string &s);

} // namespace dt
