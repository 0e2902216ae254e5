// SPDX-License-Identifier: Apache-2.0
#include "compute/services.h"

#include "compute/compute_context.h"
#include "telemetry/log.h"

#include <algorithm>

namespace dt::compute {

namespace {

void host_log(void *, int level, const char *plugin, const char *message)
{
    auto lvl = static_cast<log::Level>(std::clamp(level, DT_LOG_ERROR, DT_LOG_TRACE));
    if (log::enabled(lvl))
        log::write(lvl, plugin != nullptr ? plugin : "compute",
                   message != nullptr ? message : "");
}

void host_set_error(void *host, const char *message)
{
    if (host != nullptr)
        static_cast<ComputeContext *>(host)->error_ = message != nullptr ? message : "";
}

int32_t no_store_set(void *, const char *, const void *, size_t)
{
    return DTP_ERR_UNSUPPORTED;
}

int32_t no_store_get(void *, const char *, void *, size_t, size_t *, int32_t)
{
    return DTP_ERR_UNSUPPORTED;
}

int32_t no_sign(void *, const void *, size_t, uint8_t[32]) { return DTP_ERR_UNSUPPORTED; }

int32_t no_verify(void *, const void *, size_t, const uint8_t[32])
{
    return DTP_ERR_UNSUPPORTED;
}

int32_t no_random(void *, void *, size_t) { return DTP_ERR_UNSUPPORTED; }

int32_t no_store_address(void *, char *, size_t, size_t *) { return DTP_ERR_UNSUPPORTED; }

const dt_host_services_t kServices = {
    sizeof(dt_host_services_t), DT_HOST_SERVICES_VERSION, host_log, host_set_error,
    no_store_set, no_store_get, no_sign, no_verify, no_random, no_store_address,
};

} // namespace

const dt_host_services_t *services() { return &kServices; }

} // namespace dt::compute
