// SPDX-License-Identifier: Apache-2.0
#include "runtime/error.h"

namespace dt {

namespace {
thread_local std::string tls_last_error;
}

void set_last_error(std::string message) { tls_last_error = std::move(message); }

const char *last_error() noexcept { return tls_last_error.c_str(); }

} // namespace dt
