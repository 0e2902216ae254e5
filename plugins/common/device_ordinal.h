/* SPDX-License-Identifier: Apache-2.0 */
// DISTTRAIN_DEVICE as the plugins that read it (the nccl transport, the cuda memory
// provider) parse it, alike: a GPU ordinal written in decimal digits and nothing else
// (decimal.h); the core's compute settings follow the same rule. Header-only: plugins
// never link the core or each other.
#pragma once

#include "decimal.h"

#include <climits>

namespace dtp {

// Writes the ordinal to *ordinal and returns true when value is one or more decimal
// digits that fit an int; false for anything else (empty, spaces, a sign, a suffix, a
// base prefix such as "0x1", a number too large), leaving *ordinal alone.
inline bool parse_device_ordinal(const char *value, int *ordinal) {
    uint64_t parsed = 0;
    if (!parse_decimal(value, INT_MAX, &parsed)) return false;
    *ordinal = static_cast<int>(parsed);
    return true;
}

} // namespace dtp
