// SPDX-License-Identifier: Apache-2.0
#include "routing/host_check.h"

#include "routing/router.h"
#include "runtime/call_check.h"
#include "runtime/error.h"
#include "shm/route.h"

namespace dt::routing {

void check_over_host(const Services &s, algo::Comm &comm, const Args &a)
{
    const uint64_t h = call_check_hash(*comm.check());
    int64_t words[2] = {static_cast<int64_t>(h), static_cast<int64_t>(~h)};
    Args check;
    check.kind = OpKind::allreduce;
    check.sendbuf = check.recvbuf = words;
    check.count = 2;
    check.dtype = DT_INT64;
    check.op = DT_MAX;
    check.name = a.name;
    check.whole_job = a.whole_job;
    s.router->run_host(comm, check);
    if (static_cast<uint64_t>(words[0]) != h || ~static_cast<uint64_t>(words[1]) != h)
        comm.fail_collective(DT_ERR_MISMATCH,
                             cat(op_kind_name(a.kind), " '", a.name, "': the ranks' call "
                                 "checks of ordered mode (DISTTRAIN_ORDERED=1) disagree: "
                                 "some rank runs another collective or passes other "
                                 "arguments in this call"));
}

void check_on_this_host(const Services &s, algo::Comm &comm, const Args &a)
{
    shm::Call barrier;
    barrier.kind = shm::Kind::barrier;
    barrier.name = op_kind_name(a.kind); // the messages name the call, not the barrier
    shm::run_local(*s.domain, comm, barrier);
}

} // namespace dt::routing
