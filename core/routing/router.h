// The router: the one place that decides how a collective runs. Owned by the context,
// which hands it the policy parsed at create and its shared-memory domain. For each
// call it describes the members (topology.h), runs the first path of the kind's table
// (table.cc) that applies, and reports that path's name (debug log, timeline).
//
// DT_AVG is handled here and nowhere else on the way: paths see DT_SUM, and the router
// divides the result once by the divisor the engine passes (the ranks that contributed),
// unless the path divides itself where it is cheaper (Path::divides_average).
//
// Per call it allocates nothing, looks nothing up by name and builds no string unless
// debug logging is on: the transport's native kinds, the memory it accepts (its
// capability answer) and the whole job's spread over hosts are found once, here.
#pragma once

#include "plugin/transport.h"
#include "routing/path.h"
#include "routing/policy.h"
#include "runtime/operation.h"

#include <vector>

namespace dt::shm {
class Domain;
}

namespace dt::routing {

class Router {
public:
    // domain: the context's shared-memory domain, or null; it must outlive the router.
    // job_size: the world size.
    Router(const Policy &policy, const Transport &transport, shm::Domain *domain,
           int job_size);
    Router(const Router &) = delete;
    Router &operator=(const Router &) = delete;

    const Policy &policy() const { return policy_; }

    // Runs op among comm's members and returns the name of the path that ran it.
    // avg_divisor: what DT_AVG divides the sum by. Not thread safe: one engine drives
    // the transport at a time. Throws dt::Error on failure.
    const char *run(algo::Comm &comm, const OpDesc &op, int avg_divisor);

    // The members of a call on comm as the paths' applies() see them.
    Topology topology(const algo::Comm &comm, bool whole_job);

private:
    Policy policy_;
    Services services_;
    uint32_t native_ = 0;    // kind_bit() per native collective of the transport
    uint8_t p2p_memory_ = 0;    // memory_bit() per memory type its isend/irecv accept
    uint8_t native_memory_ = 0; // ... and its native collectives accept
    Spread job_spread_ = Spread::one_per_host;
    int my_host_ = -1;
    std::vector<int> scratch_; // spread_of() of a group's members
};

} // namespace dt::routing
