/* SPDX-License-Identifier: Apache-2.0 */
// The one exception type inside the plugin. It carries the DTP_ status the C entry points
// return; its message is handed to the core through services->set_error. Nothing thrown
// here ever crosses the C ABI (plugins/common/transport_entry.h catches everything).
#pragma once

#include <disttrain/plugin/common.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace dt::nccl {

class NcclError : public std::runtime_error {
public:
    NcclError(int32_t status, const std::string &message)
        : std::runtime_error(message), status_(status) {}
    int32_t status() const { return status_; }

private:
    int32_t status_;
};

} // namespace dt::nccl
