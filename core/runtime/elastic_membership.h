/* SPDX-License-Identifier: Apache-2.0 */
// Who is in the job after a re-form (dt_context_reform). The ranks that call it meet in
// the store under a new epoch: each takes a ticket, says which rank it was and on which
// host it runs, and reports the peers it saw lost. New processes (a launcher's
// replacements) register as joiners and wait in the next epoch's rendezvous; the job lets
// them in when its ranks re-form, at a step boundary (dt_context_poll_joiners) or after a
// loss. Membership closes as soon as every rank not known dead (the launcher's death
// notices, else the survivors' reports) and every registered joiner has arrived, or,
// when nobody can say who is missing, once arrivals have settled (with notices, a rank
// nobody reported lost is waited for up to the deadline instead); the first member of
// the old job to see that closes it for all (a joiner never does). The new ranks follow
// the old ranks' order (so rank 0 stays rank 0 when it lives), then the joiners, in
// arrival order.
#pragma once

#include "bootstrap/store.h"
#include "runtime/death_notices.h"

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace dt {

struct ElasticMember {
    int old_rank = -1; // -1: not in the job before
    std::string host;
    int64_t launch_id = -1; // DISTTRAIN_LAUNCH_ID (death_notices.h); -1: none
};

struct ElasticMembership {
    int rank = 0;
    int size = 1;
    int local_rank = 0;
    int local_size = 1;
    std::vector<ElasticMember> members; // in new rank order
};

struct ElasticRendezvous {
    std::string root;     // the context's elastic namespace ("ctx0/elastic/")
    uint64_t epoch = 1;   // the membership being formed; its keys are under root + epoch
    ElasticMember me;     // old_rank -1: a joiner
    int old_size = 1;     // members before; all of them back closes at once
    std::vector<int> lost; // old ranks this rank saw lost
    int min_size = 1;
    std::chrono::milliseconds settle{1000};
    std::chrono::steady_clock::time_point deadline;
    // Where a launcher publishes deaths (deaths->vouched()): membership then closes as
    // soon as every old rank has arrived or is known dead, and dead joiners no longer
    // count as waiting; a rank only reported lost is waited for, up to the settle time
    // (it may have left to re-form), and one nobody reported lost (alive, but late: a
    // long step) up to the deadline, after which the others go on without it. Null or
    // not vouched: the survivors' reports of lost ranks count, and arrivals settle where
    // nobody reported one.
    DeathNotices *deaths = nullptr;
    std::vector<int64_t> old_ids; // launch id of each old rank (with deaths)
};

// Throws DT_ERR_TIMEOUT when fewer than min_size ranks arrived by the deadline (naming
// how many did), DT_ERR_INVALID_STATE when this rank arrived after membership closed
// without it (saying why when the others gave up waiting for it at their deadline).
ElasticMembership elastic_rendezvous(bootstrap::StoreClient &store, const ElasticRendezvous &r);

// A new process joining a running job: registers, then takes part in re-forms as a joiner
// until one lets it in (r.epoch is ignored: each try joins the next one). Returns the
// membership and the epoch it joined. Throws DT_ERR_TIMEOUT at r.deadline; a joiner that
// gives up (on any error) withdraws its registration first, so it is no longer counted
// as waiting. One killed while waiting (SIGKILL) no longer counts once the launcher's
// death notice is read (r.deaths vouched, and a launch id); without notices it still
// counts.
std::pair<ElasticMembership, uint64_t> elastic_join(bootstrap::StoreClient &store,
                                                    ElasticRendezvous r);

// Joiners registered and not yet let in (the store's view: call it on one rank and share
// the answer). With deaths, first reads the new death notices and no longer counts the
// joiners among the dead.
int64_t waiting_joiners(bootstrap::StoreClient &store, const std::string &root,
                        DeathNotices *deaths = nullptr);

// The pure part, for tests: new ranks and local ranks from the arrivals that made it.
ElasticMembership number_members(const std::vector<ElasticMember> &arrivals, int my_ticket);

} // namespace dt
