/* SPDX-License-Identifier: Apache-2.0 */
// Checks of command-line values shared by disttrain-train and disttrain-bench (the CLI11
// validators built on them: cli_validators.h).
//
// CLI11 reads an unsigned option with strtoull, which wraps "-1" to 2^64 - 1 (and reads
// "010" as octal), and its PositiveNumber / NonNegativeNumber validators quote a range
// of 0 to DBL_MAX whatever they refuse. These check the text itself before CLI11
// converts it, and say what --help says: "--batch-size: must be at least 1, got 0".
#pragma once

#include <cstdint>
#include <limits>
#include <string>

namespace dt::models {

// "at least 1" or "from 0 to 255": [min, max] as --help says it (a max that is a type's
// largest value is left out).
std::string describe_whole(uint64_t min, uint64_t max);

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

// For --checkpoint-dir: the error when text is neither a folder nor a path whose first
// existing ancestor is one (so the folder can be created), naming a regular file on the
// way; else "".
std::string check_creatable_folder(const std::string &text);

} // namespace dt::models
