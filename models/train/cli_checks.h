/* SPDX-License-Identifier: Apache-2.0 */
// Checks of numeric command-line values shared by disttrain-train and disttrain-bench.
//
// CLI11 reads an unsigned option with strtoull, which wraps "-1" to 2^64 - 1 (and reads
// "010" as octal), and its PositiveNumber / NonNegativeNumber validators quote a range
// of 0 to DBL_MAX whatever they refuse. These check the text itself before CLI11
// converts it, and say what --help says: "--batch-size: must be at least 1, got 0".
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <limits>
#include <string>

namespace dt::models {

// The error of a whole-number value `text` outside [min, max] (decimal digits, an
// optional leading '+'), or "" when it is fine; then `canonical` holds it as plain
// decimal digits.
std::string check_whole_number(const std::string &text, uint64_t min, uint64_t max,
                               std::string *canonical = nullptr);

// A range of real numbers: [lo, hi], either end open, either end infinite (the value
// itself must always be finite).
struct RealRange {
    double lo = -std::numeric_limits<double>::infinity();
    bool lo_open = false;
    double hi = std::numeric_limits<double>::infinity();
    bool hi_open = false;
};

// "at least 0", "greater than 0", "at least 0 and below 1", ...: what --help shows.
std::string describe(const RealRange &r);
// The error of a real value `text` outside r or not finite, or "".
std::string check_real_number(const std::string &text, const RealRange &r);

// Validators for CLI11 options of type T (an unsigned or int), values in [min, max]:
// add them with ->transform(...) (they rewrite the text as plain decimal digits).
CLI::Validator whole_number_at_least(uint64_t min, uint64_t max);
template <typename T>
CLI::Validator whole_number_at_least(uint64_t min)
{
    return whole_number_at_least(min, uint64_t(std::numeric_limits<T>::max()));
}
// For floating-point options: finite and in r (add with ->check(...)).
CLI::Validator real_number_in(const RealRange &r);

// For --checkpoint-dir: a folder, or a path whose first existing ancestor is one (so the
// folder can be created); refuses a regular file on the way with its name.
CLI::Validator creatable_folder();

} // namespace dt::models
