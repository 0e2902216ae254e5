// SPDX-License-Identifier: Apache-2.0
#include "cudnn_bn_choice.h"

#include <disttrain/plugin/compute.h>

#include <cstring>
#include <stdexcept>
#include <string>

namespace dtp::cudnn {

BatchnormKernels batchnorm_kernels_setting(const char *value)
{
    if (value == nullptr || *value == '\0' || std::strcmp(value, "auto") == 0)
        return BatchnormKernels::automatic;
    if (std::strcmp(value, "native") == 0)
        return BatchnormKernels::native;
    if (std::strcmp(value, "cudnn") == 0)
        return BatchnormKernels::cudnn;
    throw std::invalid_argument(
        std::string("DISTTRAIN_CUDNN_BATCHNORM='") + value +
        "' must be auto (the plugin's own kernels, cuDNN's for 4-D float16; the "
        "default), native (the plugin's own kernels always) or cudnn (cuDNN always)");
}

bool native_batchnorm(BatchnormKernels k, int32_t dtype, int32_t ndims)
{
    switch (k) {
    case BatchnormKernels::native: return true;
    case BatchnormKernels::cudnn: return false;
    case BatchnormKernels::automatic: break;
    }
    return ndims == 2 || dtype != DTP_FLOAT16;
}

} // namespace dtp::cudnn
