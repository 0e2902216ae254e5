// SPDX-License-Identifier: Apache-2.0
#include "runtime/env.h"

#include "runtime/error.h"

#include <charconv>
#include <cstdlib>

namespace dt::env {

std::optional<std::string> get(const char *name)
{
    const char *value = std::getenv(name);
    if (value == nullptr || *value == '\0')
        return std::nullopt;
    return std::string(value);
}

int64_t parse_int(const std::string &what, const std::string &value, int64_t min,
                  int64_t max)
{
    // Decimal digits, after a '-' where negative values mean something: strtoll's leading
    // blanks and '+' would let " 3" pass here while other readers (the plugins'
    // DISTTRAIN_DEVICE) refuse it.
    const bool negative = !value.empty() && value[0] == '-';
    const size_t first = negative ? 1 : 0;
    bool malformed = value.size() == first ||
                     value.find_first_not_of("0123456789", first) != std::string::npos;
    int64_t parsed = 0;
    bool in_range = !negative || min < 0;
    if (!malformed && in_range) {
        auto read = std::from_chars(value.data(), value.data() + value.size(), parsed);
        in_range = read.ec == std::errc() && parsed >= min && parsed <= max;
    }
    if (malformed || !in_range)
        throw_error(DT_ERR_INVALID_CONFIG, what, "='", value, "' is ",
                    malformed ? "not an integer" : "out of range",
                    "; expected an integer in [", min, ", ", max, "], in decimal digits",
                    min < 0 ? " after an optional '-'" : "", " (no spaces, '+' or suffix)");
    return parsed;
}

int64_t get_int(const char *name, int64_t fallback, int64_t min, int64_t max)
{
    auto value = get(name);
    if (!value)
        return fallback;
    return parse_int(name, *value, min, max);
}

std::vector<std::string> split_list(const std::string &value, char sep)
{
    std::vector<std::string> out;
    size_t start = 0;
    while (start <= value.size()) {
        size_t end = value.find(sep, start);
        if (end == std::string::npos)
            end = value.size();
        std::string piece = value.substr(start, end - start);
        size_t b = piece.find_first_not_of(" \t");
        size_t e = piece.find_last_not_of(" \t");
        if (b != std::string::npos)
            out.push_back(piece.substr(b, e - b + 1));
        start = end + 1;
    }
    return out;
}

} // namespace dt::env
