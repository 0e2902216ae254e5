/* SPDX-License-Identifier: Apache-2.0 */
// An integer variable as every plugin reads it, alike, and as the core reads its own
// (core/runtime/env.cc): decimal digits and nothing else. strtoull would also take
// leading blanks and a sign (" 3", "+3", and "-1" wrapped to 2^64 - 1) while refusing
// "3x", which made one typo pass and the next fail. Header-only: plugins never link the
// core or each other.
#pragma once

#include <cstdint>

namespace dtp {

// Writes the value to *out and returns true when text is one or more decimal digits whose
// value is at most max; false for anything else (NULL, empty, blanks, a sign, a suffix,
// a base prefix such as "0x1", a value above max), leaving *out alone.
inline bool parse_decimal(const char *text, uint64_t max, uint64_t *out) {
    if (text == nullptr || *text == '\0') return false;
    uint64_t parsed = 0;
    for (const char *c = text; *c != '\0'; ++c) {
        if (*c < '0' || *c > '9') return false;
        const uint64_t digit = static_cast<uint64_t>(*c - '0');
        if (digit > max || parsed > (max - digit) / 10) return false;
        parsed = parsed * 10 + digit;
    }
    *out = parsed;
    return true;
}

} // namespace dtp
