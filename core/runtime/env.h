/* SPDX-License-Identifier: Apache-2.0 */
// Reading DISTTRAIN_* variables. A malformed value is an error that says what was read,
// what is allowed and which variable to fix; nothing is silently defaulted.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dt::env {

// The variable's value, or nullopt when it is unset or empty.
std::optional<std::string> get(const char *name);

// Parses an integer variable in [min, max]: decimal digits, with a leading '-' only where
// min is negative (no blanks, '+', base prefix or suffix). Unset gives fallback. Malformed
// or out of range throws DT_ERR_INVALID_CONFIG naming the variable, the value, the range
// and the form.
int64_t get_int(const char *name, int64_t fallback, int64_t min, int64_t max);

// Like get_int for a value already read from somewhere named `what`.
int64_t parse_int(const std::string &what, const std::string &value, int64_t min,
                  int64_t max);

// Splits "a,b,,c" into {"a","b","c"} (trimmed, empty pieces dropped).
std::vector<std::string> split_list(const std::string &value, char sep = ',');

} // namespace dt::env
