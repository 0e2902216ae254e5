/* SPDX-License-Identifier: Apache-2.0 */
// Logging: one line per event on stderr, prefixed with the rank, e.g.
//   disttrain[rank 1] WARN tcp: refused connection from 127.0.0.1:4242: bad token
// The level comes from DISTTRAIN_LOG_LEVEL (error, warn, info, debug, trace; default warn).
#pragma once

#include "runtime/error.h"

#include <string>

namespace dt::log {

enum class Level { error = 0, warn = 1, info = 2, debug = 3, trace = 4 };

// True when lines at level are written. Cheap: a relaxed atomic load.
bool enabled(Level level) noexcept;

// Parses DISTTRAIN_LOG_LEVEL once; an unknown value throws DT_ERR_INVALID_CONFIG.
void init_from_env();

// Sets the rank shown in the prefix of this process's lines (-1: none yet).
void set_rank(int rank) noexcept;

// Writes one line (thread safe; the line is written with a single write()).
void write(Level level, const std::string &component, const std::string &message);

const char *level_name(Level level) noexcept;

} // namespace dt::log

// DT_LOG(warn, "tcp", "refused ", addr) builds the message only when the level is on.
#define DT_LOG(level, component, ...)                                                    \
    do {                                                                                 \
        if (::dt::log::enabled(::dt::log::Level::level))                                 \
            ::dt::log::write(::dt::log::Level::level, component, ::dt::cat(__VA_ARGS__)); \
    } while (0)
