/* SPDX-License-Identifier: Apache-2.0 */
// The timeline: a Chrome trace / Perfetto JSON file (DISTTRAIN_TIMELINE=path) with one
// row per named operation and its phases (negotiation wait, queue, copy into the fusion
// buffer, the collective, copy out), plus cycle and fusion markers. The file is a valid
// JSON array after every event: each write overwrites the closing "]" and appends a new
// one, so a job killed at any moment leaves a readable trace.
//
// Only rank 0 writes unless the path contains "{rank}", which is replaced by the rank.
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

    // Null when DISTTRAIN_TIMELINE is unset or this rank does not write. Throws
    // DT_ERR_INVALID_CONFIG if the file cannot be created.
    static std::unique_ptr<Timeline> open_from_env(int rank);

    Timeline(const std::string &path, int rank);
    ~Timeline();
    Timeline(const Timeline &) = delete;
    Timeline &operator=(const Timeline &) = delete;

    // A phase of operation `name` from start to end; args is a JSON object body or "".
    void phase(const std::string &name, const char *phase, Clock::time_point start,
               Clock::time_point end, const std::string &args = "");
    // A marker on the engine's own row.
    void marker(const char *what, Clock::time_point at, const std::string &args = "");

private:
    int row(const std::string &name); // thread id of the operation's row; caller locks
    void append(const std::string &event); // caller locks
    int64_t micros(Clock::time_point t) const;

    std::mutex mutex_;
    int fd_ = -1;
    int rank_;
    off_t end_ = 0; // offset of the closing "]"
    bool first_ = true;
    Clock::time_point origin_;
    std::unordered_map<std::string, int> rows_;
};

// s as the inside of a JSON string: quotes, backslashes and control characters escaped,
// well-formed UTF-8 kept, and any other byte written as the text \xNN, so that a name of
// arbitrary bytes still gives a valid file.
std::string json_escape(const std::string &s);

} // namespace dt
