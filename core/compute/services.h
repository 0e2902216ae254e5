/* SPDX-License-Identifier: Apache-2.0 */
// The host services a compute plugin borrows: logging, and set_error, which keeps the
// message in the calling ComputeContext (its address is the `host` pointer) so the core
// can wrap it with the API function's name. Compute plugins have no store or job token:
// those members return DTP_ERR_UNSUPPORTED.
#pragma once

#include <disttrain/plugin/common.h>

namespace dt::compute {

const dt_host_services_t *services();

} // namespace dt::compute
