// SPDX-License-Identifier: Apache-2.0
#include "telemetry/log.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <strings.h>
#include <unistd.h>

namespace dt::log {

namespace {
std::atomic<int> g_level{static_cast<int>(Level::warn)};
std::atomic<int> g_rank{-1};

const char *const kNames[] = {"error", "warn", "info", "debug", "trace"};
} // namespace

bool enabled(Level level) noexcept
{
    return static_cast<int>(level) <= g_level.load(std::memory_order_relaxed);
}

void init_from_env()
{
    const char *value = std::getenv("DISTTRAIN_LOG_LEVEL");
    if (value == nullptr || *value == '\0')
        return;
    for (int i = 0; i < 5; ++i) {
        if (strcasecmp(value, kNames[i]) == 0) {
            g_level.store(i, std::memory_order_relaxed);
            return;
        }
    }
    throw_error(DT_ERR_INVALID_CONFIG, "DISTTRAIN_LOG_LEVEL='", value,
                "' is not a log level; use one of error, warn, info, debug, trace");
}

void set_rank(int rank) noexcept { g_rank.store(rank, std::memory_order_relaxed); }

const char *level_name(Level level) noexcept
{
    int i = static_cast<int>(level);
    return i >= 0 && i < 5 ? kNames[i] : "?";
}

void write(Level level, const std::string &component, const std::string &message)
{
    std::string line = "disttrain";
    int rank = g_rank.load(std::memory_order_relaxed);
    if (rank >= 0)
        line += "[rank " + std::to_string(rank) + "]";
    line += ' ';
    line += level_name(level);
    line += ' ';
    line += component;
    line += ": ";
    line += message;
    line += '\n';
    // One write() per line so lines of concurrent threads never interleave.
    ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
    (void)ignored;
}

} // namespace dt::log
