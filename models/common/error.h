/* SPDX-License-Identifier: Apache-2.0 */
// Errors of the model zoo and the trainer. models/ is a user of the public API and does
// not include core headers, so it has its own two exception types: InputError for bad
// input from the user (flags, data files, checkpoints), which the programs report and
// exit with status 2, and std::runtime_error for everything else (exit status 1).
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace dt::models {

class InputError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Bad input this process has already printed (rank 0 says why before the other ranks
// stop, so that the launcher cannot stop it before its message is out): exit status 2
// without printing it again.
class ReportedInputError : public InputError {
public:
    using InputError::InputError;
};

// A run-time failure this process has already printed, for the same reason: exit status 1
// without printing it again.
class ReportedError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Concatenates stream pieces into a string: cat("read ", n, " bytes").
template <typename... Parts>
std::string cat(Parts &&...parts)
{
    std::ostringstream out;
    (out << ... << std::forward<Parts>(parts));
    return out.str();
}

template <typename... Parts>
[[noreturn]] void throw_input_error(Parts &&...parts)
{
    throw InputError(cat(std::forward<Parts>(parts)...));
}

} // namespace dt::models
