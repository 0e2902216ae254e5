/* SPDX-License-Identifier: Apache-2.0 */
// Helpers shared by the algorithm files (internal to core/algorithms).
#pragma once

#include "runtime/error.h"

#include <disttrain/disttrain.h>

#include <algorithm>
#include <cstddef>

namespace dt::algo::detail {

// Element offset of part i when n elements are split into `parts` parts as evenly as
// possible (the first n % parts parts get one more). part_offset(n, parts, parts) == n.
inline size_t part_offset(size_t n, size_t parts, size_t i)
{
    return i * (n / parts) + std::min(i, n % parts);
}

inline size_t part_length(size_t n, size_t parts, size_t i)
{
    return part_offset(n, parts, i + 1) - part_offset(n, parts, i);
}

// (a mod m) for a possibly negative a: rank arithmetic around a ring.
inline int wrap(int a, int m) { return ((a % m) + m) % m; }

// The largest power of two <= p (p >= 1): the ranks that take part in the butterfly of
// recursive halving/doubling; the p - pof2 others fold in and out around it.
inline int largest_power_of_two(int p)
{
    int pof2 = 1;
    while (pof2 * 2 <= p)
        pof2 *= 2;
    return pof2;
}

// Size of one element of dtype; throws for an unknown dtype.
inline size_t element_size(dt_dtype_t dtype, const char *collective)
{
    size_t size = dt_dtype_size(dtype);
    if (size == 0)
        throw_error(DT_ERR_INVALID_ARGUMENT, collective, ": unknown dtype ",
                    static_cast<int>(dtype), "; expected a dt_dtype_t value");
    return size;
}

} // namespace dt::algo::detail
