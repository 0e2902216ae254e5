// SPDX-License-Identifier: Apache-2.0
#include "shm/attach.h"

#include "runtime/error.h"
#include "telemetry/log.h"

namespace dt::shm {

std::unique_ptr<Domain> attach(bootstrap::StoreClient &store, const Transport &transport,
                               const AttachOptions &opts, const Settings &settings)
{
    DomainOptions d;
    d.rank = opts.rank;
    d.size = opts.size;
    d.local_rank = opts.local_rank;
    d.local_size = opts.local_size;
    const int64_t split = settings.local_size;
    if (split > 0) {
        if (opts.size % split != 0 || split > opts.local_size)
            throw_error(DT_ERR_INVALID_CONFIG, "DISTTRAIN_SHM_LOCAL_SIZE=", split,
                        " must divide the job's ", opts.size, " ranks and not exceed the ",
                        opts.local_size, " ranks of this host");
        d.local_size = static_cast<int>(split);
        d.local_rank = opts.rank % static_cast<int>(split);
    }
    if (!settings.enabled) {
        DT_LOG(debug, "shm", "shared memory off (DISTTRAIN_SHM=0)");
        return nullptr;
    }
    // A host with one rank gets a domain of its own too when the job spans hosts: where
    // another host holds several ranks, allreduce is hierarchical, and this rank must
    // run it (as its host's leader) with the same map of hosts as the others.
    if (opts.size <= 1 || !opts.local_known)
        return nullptr;
    if (transport.ops().allreduce != nullptr) {
        DT_LOG(debug, "shm", "transport '", transport.name(), "' has native collectives; "
               "shared memory stays off");
        return nullptr;
    }
    d.data_bytes = static_cast<size_t>(settings.data_bytes);
    d.key_prefix = opts.key_prefix;
    d.timeout = opts.timeout;
    d.abandon_key = opts.abandon_key;
    d.tuning = settings.tuning;
    d.cma.enabled = settings.cma;
    auto domain = std::make_unique<Domain>(store, d);
    DT_LOG(info, "shm", "shared memory between the ", d.local_size, " ranks of this host (",
           domain->data_bytes() >> 10, " KiB staging per rank)");
    return domain;
}

} // namespace dt::shm
