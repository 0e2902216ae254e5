/* SPDX-License-Identifier: Apache-2.0 */
// Request start and completion (plugins/common/plugin_request.h).
#pragma once

#include "plugin_request.h"

namespace dt::mpi {

using dtp::complete_request;
using dtp::start_request;

} // namespace dt::mpi
