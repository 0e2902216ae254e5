// Attaching a context to shared memory: whether to (DISTTRAIN_SHM, the host's rank
// count, the transport's own collectives), the domain itself, and the index that lets
// run_collective find the domain of the transport it was handed.
#pragma once

#include "bootstrap/store.h"
#include "plugin/transport.h"
#include "shm/domain.h"

#include <memory>

namespace dt::shm {

struct AttachOptions {
    int rank = 0, size = 1, local_rank = 0, local_size = 1;
    bool local_known = true; // false: the launcher did not say which ranks share a host
    std::string key_prefix;  // the context's store namespace
    std::chrono::milliseconds timeout{0};
};

// Owns a domain and keeps it findable through its transport while alive.
class Attachment {
public:
    // Null when shared memory is off (DISTTRAIN_SHM=0), pointless (one rank on this
    // host) or not ours to do (the transport has native collectives). Reads DISTTRAIN_SHM
    // (0 or 1), DISTTRAIN_SHM_BYTES (staging bytes per rank), DISTTRAIN_SHM_CMA (0 or 1:
    // single-copy reads of the peers' buffers where the kernel allows) and, for tests,
    // DISTTRAIN_SHM_LOCAL_SIZE (treat each run of that many consecutive ranks as a host).
    // Throws DT_ERR_INVALID_CONFIG for malformed values.
    static std::unique_ptr<Attachment> open(bootstrap::StoreClient &store,
                                            const Transport &transport,
                                            const AttachOptions &opts);
    ~Attachment();
    Attachment(const Attachment &) = delete;
    Attachment &operator=(const Attachment &) = delete;

    Domain &domain() { return *domain_; }

private:
    Attachment(const Transport &transport, std::unique_ptr<Domain> domain);
    const Transport &transport_;
    std::unique_ptr<Domain> domain_;
};

// The domain attached to transport, or null. Cheap: called for every collective.
Domain *domain_of(const Transport &transport);

} // namespace dt::shm
