/* SPDX-License-Identifier: Apache-2.0 */
// Quoting what a user wrote (a hostfile line, a script's #! line) in the launcher's
// messages.
#pragma once

#include <string>

namespace dt::launch {

// text with a carriage return as \r and other control or non-ASCII bytes as \xNN, so
// that a message shows what a line holds (Windows line endings, a byte-order mark)
// without a terminal acting on it.
std::string visible(const std::string &text);

} // namespace dt::launch
