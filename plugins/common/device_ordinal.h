/* SPDX-License-Identifier: Apache-2.0 */
// DISTTRAIN_DEVICE as the plugins that read it (the nccl transport, the cuda memory
// provider) parse it, alike: a GPU ordinal written in decimal digits and nothing else.
// strtol would also take leading spaces and a sign (" 1", "+1") while refusing "1x",
// which made one typo pass and the next fail; the core's compute settings follow the
// same rule. Header-only: plugins never link the core or each other.
#pragma once

#include <climits>

namespace dtp {

// Writes the ordinal to *ordinal and returns true when value is one or more decimal
// digits that fit an int; false for anything else (empty, spaces, a sign, a suffix, a
// base prefix such as "0x1", a number too large), leaving *ordinal alone.
inline bool parse_device_ordinal(const char *value, int *ordinal) {
    if (value == nullptr || *value == '\0') return false;
    int parsed = 0;
    for (const char *c = value; *c != '\0'; ++c) {
        if (*c < '0' || *c > '9') return false;
        const int digit = *c - '0';
        if (parsed > (INT_MAX - digit) / 10) return false;
        parsed = parsed * 10 + digit;
    }
    *ordinal = parsed;
    return true;
}

} // namespace dtp
