// Who is in the job after a re-form (dt_context_reform). The ranks that call it meet in
// the store under a new epoch: each takes a ticket, says which rank it was and on which
// host it runs, and reports the peers it saw lost. Membership closes as soon as every
// rank the survivors still believe alive has arrived, or, when nobody can say who is
// missing, once arrivals have settled; the first rank to see that closes it for all. The
// new ranks follow the old ranks' order (so rank 0 stays rank 0 when it lives), then
// ranks that were not in the job, in arrival order.
#pragma once

#include "bootstrap/store.h"

#include <chrono>
#include <string>
#include <vector>

namespace dt {

struct ElasticMember {
    int old_rank = -1; // -1: not in the job before
    std::string host;
};

struct ElasticMembership {
    int rank = 0;
    int size = 1;
    int local_rank = 0;
    int local_size = 1;
    std::vector<ElasticMember> members; // in new rank order
};

struct ElasticRendezvous {
    std::string prefix;   // the epoch's store namespace
    ElasticMember me;
    int old_size = 1;     // members before; all of them back closes at once
    std::vector<int> lost; // old ranks this rank saw lost
    int min_size = 1;
    std::chrono::milliseconds settle{1000};
    std::chrono::steady_clock::time_point deadline;
};

// Throws DT_ERR_TIMEOUT when fewer than min_size ranks arrived by the deadline (naming
// how many did), DT_ERR_INVALID_STATE when this rank arrived after membership closed
// without it.
ElasticMembership elastic_rendezvous(bootstrap::StoreClient &store, const ElasticRendezvous &r);

// The pure part, for tests: new ranks and local ranks from the arrivals that made it.
ElasticMembership number_members(const std::vector<ElasticMember> &arrivals, int my_ticket);

} // namespace dt
