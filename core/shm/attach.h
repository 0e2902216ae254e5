/* SPDX-License-Identifier: Apache-2.0 */
// Attaching a context to shared memory: whether to (DISTTRAIN_SHM, the host's rank
// count, the transport's own collectives) and the domain itself, which the context owns
// and hands to its router (core/routing).
#pragma once

#include "bootstrap/store.h"
#include "plugin/transport.h"
#include "shm/domain.h"
#include "shm/settings.h"

#include <memory>

namespace dt::shm {

struct AttachOptions {
    int rank = 0, size = 1, local_rank = 0, local_size = 1;
    bool local_known = true; // false: the launcher did not say which ranks share a host
    std::string key_prefix;  // the context's store namespace
    std::chrono::milliseconds timeout{0};
    std::string abandon_key; // DomainOptions::abandon_key
};

// The context's domain, or null when shared memory is off (settings.enabled false),
// pointless (a job of one rank; a rank alone on its host still gets one, to take part in
// the hierarchical allreduce) or not ours to do (the transport has native collectives). settings.local_size (tests) treats each run of that many consecutive
// ranks as a host. Throws DT_ERR_INVALID_CONFIG when that split does not fit the job.
std::unique_ptr<Domain> attach(bootstrap::StoreClient &store, const Transport &transport,
                               const AttachOptions &opts, const Settings &settings);

} // namespace dt::shm
