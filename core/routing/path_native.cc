// SPDX-License-Identifier: Apache-2.0
// The transport's native collectives (MPI, NCCL) as a router path: it applies to a call
// over the whole job when the plugin's table has the kind's member and DISTTRAIN_ALGORITHM
// does not send an allreduce elsewhere, and the plugin may still decline one call
// (DTP_ERR_UNSUPPORTED), which the router then runs by the next path. Ordered mode's call
// check runs before the data moves (native_check_passes).
#include "routing/native_call.h"
#include "routing/paths.h"
#include "runtime/call_check.h"
#include "runtime/error.h"
#include "telemetry/log.h"

#include <memory>
#include <vector>

namespace dt::routing {

// A two-word MAX allreduce of {h, ~h} gives {max h, ~min h}, equal only when every
// rank's hash is. Only a disagreement costs an allgather of the checks, which names the
// rank and field.
bool native_check_passes(algo::Comm &comm, const Args &a)
{
    const dt_transport_v3_t &ops = comm.transport().ops();
    void *inst = comm.transport().instance();
    if (ops.allreduce == nullptr)
        return false;
    const CallCheck &mine = *comm.check();
    const uint64_t h = call_check_hash(mine);
    // On the heap, and left there when the check fails: a native collective that failed
    // (a peer stopped, say) may still be in the plugin, which cannot always cancel it
    // (MPI cannot), and the peers' progress may still write into its buffers.
    struct Buffers {
        int64_t words[2];
        int64_t agreed[2];
    };
    auto buffers = std::make_unique<Buffers>();
    auto &[words, agreed] = *buffers;
    words[0] = static_cast<int64_t>(h);
    words[1] = static_cast<int64_t>(~h);
    bool ran;
    try {
        ran = run_and_wait(comm, "call check", [&](dt_transport_request_t *req) {
            return ops.allreduce(inst, words, agreed, 2, DT_INT64, DT_MAX, req);
        });
    } catch (...) {
        (void)buffers.release();
        throw;
    }
    if (!ran)
        return false;
    if (agreed[0] == words[0] && ~agreed[1] == words[0])
        return true;

    const std::string what = cat(op_kind_name(a.kind), " '", a.name, "'");
    const int n = comm.size();
    auto all = std::make_unique<CallCheck[]>(static_cast<size_t>(n));
    std::string mismatch;
    try {
        if (ops.allgather != nullptr &&
            run_and_wait(comm, "call check", [&](dt_transport_request_t *req) {
                return ops.allgather(inst, &mine, all.get(), sizeof mine, DT_UINT8, req);
            })) {
            for (int r = 0; r < n && mismatch.empty(); ++r)
                mismatch = call_check_mismatch(what, comm.rank(), mine, r, all[r]);
        }
    } catch (...) {
        (void)all.release(); // as above
        throw;
    }
    if (mismatch.empty())
        mismatch = cat(what, ": the ranks' call checks of ordered mode (DISTTRAIN_ORDERED=1) "
                       "disagree: some rank runs another collective or passes other arguments "
                       "in this call");
    comm.fail_collective(DT_ERR_MISMATCH, std::move(mismatch));
}

namespace {

// DISTTRAIN_ALGORITHM forces how a host allreduce runs on every transport alike: a
// point-to-point algorithm over the transport's isend/irecv, as it keeps the call off
// shared memory, so that the algorithm named is the one measured; "shm" runs it in shared
// memory wherever that serves, and is "auto" elsewhere.
bool forced_off_native(const Call &call, const Topology &t, const Policy &p)
{
    if (call.kind != OpKind::allreduce)
        return false;
    switch (p.algorithm) {
    case algo::AllreduceChoice::automatic: return false;
    case algo::AllreduceChoice::shm:
        return kShmLocalAllreduce.applies(call, t, p) || kShmHierarchical.applies(call, t, p);
    default: return true;
    }
}

// A group's members would need a communicator of their own; the plugin ABI's
// collectives span every rank.
bool applies(const Call &call, const Topology &t, const Policy &p)
{
    return t.whole_job && (t.native & kind_bit(call.kind)) != 0 &&
           !forced_off_native(call, t, p);
}

bool run(const Services &, algo::Comm &comm, const Args &a)
{
    if (comm.check() != nullptr && !native_check_passes(comm, a))
        return false;
    return run_and_wait(comm, op_kind_name(a.kind), [&](dt_transport_request_t *req) {
        return start_native(comm.transport(), a, req);
    });
}

} // namespace

const Path kNative = {"native", memory_bit(Memory::host), Carrier::native, false, applies,
                      run};

} // namespace dt::routing
