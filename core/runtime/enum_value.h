/* SPDX-License-Identifier: Apache-2.0 */
// The integer inside a public enum that a C caller filled in. C lets any int through an
// enum type; in C++ loading an enum object whose value lies outside the enumerators'
// range is undefined (UBSan: "not a valid value for type"), so validation reads the
// bits as the underlying integer first.
#pragma once

#include <cstring>
#include <type_traits>

namespace dt {

template <typename E>
int enum_value(const E &e) noexcept
{
    static_assert(std::is_enum_v<E>);
    std::underlying_type_t<E> v;
    std::memcpy(&v, &e, sizeof v);
    return static_cast<int>(v);
}

} // namespace dt
