/* SPDX-License-Identifier: Apache-2.0 */
// CLI11 validators on the checks of cli_checks.h, for the two programs' option parsers.
// Inline, so that CLI11 (header-only, some 20 s of compiling per file that includes it)
// is compiled only where the options are declared, not once more for the checks.
#pragma once

#include "train/cli_checks.h"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <limits>
#include <string>

namespace dt::models {

// For whole-number options with values in [min, max]: add with ->transform(...) (it
// rewrites the text as plain decimal digits, which CLI11 would read "010" as octal).
inline CLI::Validator whole_number_at_least(uint64_t min, uint64_t max)
{
    return CLI::Validator(
        [min, max](std::string &text) {
            std::string canonical;
            std::string err = check_whole_number(text, min, max, &canonical);
            if (err.empty())
                text = canonical;
            return err;
        },
        describe_whole(min, max));
}

// The same for an option of type T (an unsigned or int), up to T's largest value.
template <typename T>
CLI::Validator whole_number_at_least(uint64_t min)
{
    return whole_number_at_least(min, uint64_t(std::numeric_limits<T>::max()));
}

// For floating-point options: finite and in r (add with ->check(...)).
inline CLI::Validator real_number_in(const RealRange &r)
{
    return CLI::Validator([r](std::string &text) { return check_real_number(text, r); },
                          describe(r));
}

// For --checkpoint-dir (check_creatable_folder).
inline CLI::Validator creatable_folder()
{
    return CLI::Validator([](std::string &text) { return check_creatable_folder(text); },
                          "");
}

} // namespace dt::models
