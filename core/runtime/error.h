/* SPDX-License-Identifier: Apache-2.0 */
// Errors inside the core: one exception type carrying a dt_status_t and a message that
// names what was wrong and what to do. The C shims in core/capi catch it and turn it into
// a status plus the thread-local dt_last_error() message.
#pragma once

#include <disttrain/disttrain.h>

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace dt {

class Error : public std::runtime_error {
public:
    Error(dt_status_t status, std::string message)
        : std::runtime_error(std::move(message)), status_(status) {}
    dt_status_t status() const noexcept { return status_; }

private:
    dt_status_t status_;
};

// A peer's notice said it left the job: what this rank runs with that peer fails, but
// this rank's transport is fine (the engine's exit stays graceful, see Engine::loop).
class PeerLeft : public Error {
public:
    using Error::Error;
};

// A failure that every rank of the call found alike, before any of the call's data
// moved (ranks that disagree on an allgatherv's counts): the call fails with it on every
// rank, but the transport is in step and the context goes on.
class AgreedFailure : public Error {
public:
    using Error::Error;
};

// Builds a message from stream pieces: throw_error(DT_ERR_TIMEOUT, "waited ", ms, " ms").
template <typename... Parts>
[[noreturn]] void throw_error(dt_status_t status, Parts &&...parts)
{
    std::ostringstream out;
    (out << ... << std::forward<Parts>(parts));
    throw Error(status, out.str());
}

// Concatenates stream pieces into a string (for log lines and messages).
template <typename... Parts>
std::string cat(Parts &&...parts)
{
    std::ostringstream out;
    (out << ... << std::forward<Parts>(parts));
    return out.str();
}

// The thread-local message behind dt_last_error().
void set_last_error(std::string message);
const char *last_error() noexcept;

} // namespace dt
