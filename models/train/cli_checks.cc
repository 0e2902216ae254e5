// SPDX-License-Identifier: Apache-2.0
#include "train/cli_checks.h"

#include "common/error.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <sys/stat.h>

namespace dt::models {
namespace {

bool all_digits(const std::string &s)
{
    return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

std::string real(double v)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

} // namespace

std::string describe_whole(uint64_t min, uint64_t max)
{
    const bool open_top = max == std::numeric_limits<uint64_t>::max() ||
                          max == uint64_t(std::numeric_limits<int>::max()) ||
                          max == uint64_t(std::numeric_limits<int64_t>::max());
    return open_top ? cat("at least ", min) : cat("from ", min, " to ", max);
}

std::string check_whole_number(const std::string &text, uint64_t min, uint64_t max,
                               std::string *canonical)
{
    const std::string range = describe_whole(min, max);
    std::string digits = text;
    bool negative = false;
    if (!digits.empty() && (digits[0] == '+' || digits[0] == '-')) {
        negative = digits[0] == '-';
        digits.erase(0, 1);
    }
    if (!all_digits(digits))
        return cat("must be a whole number ", range, ", got '", text, "'");
    digits.erase(0, std::min(digits.find_first_not_of('0'), digits.size() - 1));
    if (negative && digits != "0")
        return cat("must be ", range, ", got ", text);
    errno = 0;
    const unsigned long long v = std::strtoull(digits.c_str(), nullptr, 10);
    if (errno == ERANGE || v > max)
        return cat("must be ", range == cat("at least ", min) ? cat("at most ", max) : range,
                   ", got ", text);
    if (v < min)
        return cat("must be ", range, ", got ", text);
    if (canonical)
        *canonical = digits;
    return "";
}

std::string describe(const RealRange &r)
{
    const bool has_lo = std::isfinite(r.lo), has_hi = std::isfinite(r.hi);
    const std::string lo = cat(r.lo_open ? "greater than " : "at least ", real(r.lo));
    const std::string hi = cat(r.hi_open ? "below " : "at most ", real(r.hi));
    if (has_lo && has_hi)
        return cat(lo, " and ", hi);
    if (has_lo)
        return lo;
    if (has_hi)
        return hi;
    return "a finite number";
}

std::string check_real_number(const std::string &text, const RealRange &r)
{
    const std::string range = describe(r);
    const char *begin = text.c_str();
    char *end = nullptr;
    const double v = std::strtod(begin, &end);
    if (text.empty() || end != begin + text.size() || std::isspace(uint8_t(text[0])))
        return cat("must be a number ", range, ", got '", text, "'");
    if (!std::isfinite(v))
        return cat("must be a finite number ", range, ", got ", text);
    const bool low = r.lo_open ? !(v > r.lo) : !(v >= r.lo);
    const bool high = r.hi_open ? !(v < r.hi) : !(v <= r.hi);
    if (low || high)
        return cat("must be ", range, ", got ", text);
    return "";
}

std::string check_creatable_folder(const std::string &text)
{
    if (text.empty())
        return "must name a folder, got ''";
    // The path itself, else its nearest existing ancestor: a folder either way.
    for (std::filesystem::path p(text); !p.empty(); p = p.parent_path()) {
        struct stat st {};
        if (::stat(p.c_str(), &st) == 0) {
            if (S_ISDIR(st.st_mode))
                return "";
            if (p == std::filesystem::path(text))
                return cat(text, " is not a folder");
            return cat(text, " cannot be created: ", p.string(), " is not a folder");
        }
        if (errno != ENOENT && errno != ENOTDIR)
            return cat("cannot use ", text, ": ", p.string(), ": ",
                       std::strerror(errno));
        if (p == p.parent_path())
            break;
    }
    return "";
}

} // namespace dt::models
