// SPDX-License-Identifier: Apache-2.0
// Which path the router picks for each collective kind, over fake jobs: which ranks share
// a host, whether the transport has native collectives and which memory it accepts,
// shared memory on or off, a forced algorithm, a group or the whole job, and sizes on
// both sides of the thresholds. Only the choice: what each path computes is tested in
// tests/core/algorithms and tests/core/shm, and the whole chain in tests/integration and
// tests/plugins.
#include "routing/table.h"
#include "routing/topology.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dt::routing {
namespace {

constexpr uint32_t kAllNative =
    kind_bit(OpKind::allreduce) | kind_bit(OpKind::broadcast) | kind_bit(OpKind::allgather) |
    kind_bit(OpKind::reduce_scatter) | kind_bit(OpKind::alltoall) | kind_bit(OpKind::barrier);

constexpr OpKind kKinds[] = {OpKind::allreduce, OpKind::broadcast, OpKind::allgather,
                             OpKind::reduce_scatter, OpKind::alltoall, OpKind::barrier};

// A call's members: hosts[i] is member i's host; this rank is member `me`.
struct Job {
    std::vector<int> hosts;
    int me = 0;
    bool shm = true;
    uint32_t native = 0;
    bool whole_job = true;
    // What the transport accepts (its capability answer): host, as every transport today.
    uint8_t p2p_memory = memory_bit(Memory::host);
    uint8_t native_memory = memory_bit(Memory::host);
    bool staging = false; // a memory provider stages device memory through the host
    uint32_t device_native = 0; // the device transport's native kinds

    Topology topology() const
    {
        Topology t;
        t.size = static_cast<int>(hosts.size());
        t.whole_job = whole_job;
        t.native = native;
        t.p2p_memory = p2p_memory;
        t.native_memory = native_memory;
        t.shm = shm;
        t.staging = staging;
        t.device_native = device_native;
        std::vector<int> scratch;
        t.spread = spread_of(t.size, hosts[me], [&](int i) { return hosts[i]; }, scratch);
        return t;
    }
};

std::string chosen(const Job &job, OpKind kind, size_t bytes, const Policy &policy = {})
{
    const Path *p = choose({kind, bytes, Memory::host}, job.topology(), policy);
    return p != nullptr ? p->name : "(none)";
}

Policy forced(algo::AllreduceChoice choice)
{
    Policy p;
    p.algorithm = choice;
    return p;
}

const char *point_to_point(OpKind kind, size_t bytes, int size)
{
    switch (kind) {
    case OpKind::allreduce:
        return bytes <= (size == 2 ? 2u << 20 : 32u << 10) ? "recursive_doubling"
               : bytes < (64u << 10)                       ? "halving_doubling"
                                                           : "ring";
    case OpKind::broadcast: return "tree_chain";
    case OpKind::allgather: return "ring";
    case OpKind::reduce_scatter: return "ring";
    case OpKind::alltoall: return "pairwise";
    default: return "dissemination";
    }
}

TEST(Spread, FromHosts)
{
    std::vector<int> scratch;
    auto spread = [&](std::vector<int> hosts, int me) {
        return spread_of(static_cast<int>(hosts.size()), hosts[me],
                         [&](int i) { return hosts[i]; }, scratch);
    };
    EXPECT_EQ(spread({0, 0, 0}, 1), Spread::all_local);
    EXPECT_EQ(spread({0}, 0), Spread::all_local);
    EXPECT_EQ(spread({0, 0, 4, 4}, 0), Spread::shared_hosts);
    EXPECT_EQ(spread({4, 0, 0}, 0), Spread::shared_hosts); // this host alone, others shared
    EXPECT_EQ(spread({0, 2, 4, 6}, 2), Spread::one_per_host);
}

TEST(Router, OneHostWithSharedMemoryRunsEveryKindThere)
{
    Job job{{0, 0, 0, 0}};
    for (OpKind kind : kKinds)
        for (size_t bytes : {size_t{0}, size_t{4}, size_t{1} << 20, size_t{256} << 20})
            EXPECT_EQ(chosen(job, kind, bytes), "shm_local") << op_kind_name(kind) << bytes;
}

TEST(Router, WithoutSharedMemoryTheAlgorithmsRunBySize)
{
    for (bool shm_off_by_setting : {true, false}) {
        // Off: DISTTRAIN_SHM=0 or no domain; or on with one rank per host.
        Job job = shm_off_by_setting ? Job{{0, 0, 0}, 0, false} : Job{{0, 1, 2}, 0, true};
        for (OpKind kind : kKinds)
            for (size_t bytes : {size_t{4}, size_t{32} << 10, (size_t{32} << 10) + 1,
                                 (size_t{64} << 10) - 1, size_t{64} << 10})
                EXPECT_EQ(chosen(job, kind, bytes), point_to_point(kind, bytes, 3))
                    << op_kind_name(kind) << " " << bytes;
    }
}

TEST(Router, AllreduceThresholdsOnTwoRanks)
{
    Job job{{0, 1}};
    EXPECT_EQ(chosen(job, OpKind::allreduce, 4), "recursive_doubling");
    EXPECT_EQ(chosen(job, OpKind::allreduce, size_t{2} << 20), "recursive_doubling");
    EXPECT_EQ(chosen(job, OpKind::allreduce, (size_t{2} << 20) + 1), "ring");
}

TEST(Router, AllreduceThresholdsOnThreeRanks)
{
    Job job{{0, 1, 2}};
    EXPECT_EQ(chosen(job, OpKind::allreduce, size_t{32} << 10), "recursive_doubling");
    EXPECT_EQ(chosen(job, OpKind::allreduce, (size_t{32} << 10) + 1), "halving_doubling");
    EXPECT_EQ(chosen(job, OpKind::allreduce, (size_t{64} << 10) - 1), "halving_doubling");
    EXPECT_EQ(chosen(job, OpKind::allreduce, size_t{64} << 10), "ring");
}

TEST(Router, NativeCollectivesComeFirstForTheWholeJob)
{
    Job job{{0, 0, 1, 1}, 0, false, kAllNative};
    for (OpKind kind : kKinds)
        EXPECT_EQ(chosen(job, kind, 4), "native") << op_kind_name(kind);
    // Even where shared memory would serve the call (shm never attaches beside native
    // collectives today, but the order says who wins).
    job.shm = true;
    EXPECT_EQ(chosen(job, OpKind::allreduce, 4), "native");
}

TEST(Router, NativeCollectivesServeOnlyTheKindsTheTransportHas)
{
    Job job{{0, 1, 2}, 0, false, kind_bit(OpKind::allreduce)};
    EXPECT_EQ(chosen(job, OpKind::allreduce, 4), "native");
    EXPECT_EQ(chosen(job, OpKind::broadcast, 4), "tree_chain");
    EXPECT_EQ(chosen(job, OpKind::barrier, 0), "dissemination");
}

TEST(Router, NativeCollectivesServeOnlyMemoryTheTransportAccepts)
{
    // A transport whose native collectives take no host memory: host calls go past them.
    Job job{{0, 1, 2}, 0, false, kAllNative};
    job.native_memory = 0;
    for (OpKind kind : kKinds)
        EXPECT_EQ(chosen(job, kind, 4), point_to_point(kind, 4, 3)) << op_kind_name(kind);
}

TEST(Router, PointToPointPathsNeedTheTransportToAcceptTheMemory)
{
    // Nothing runs a host call over a transport whose isend/irecv refuse host memory
    // (the core refuses such a transport as the only one); shared memory still does.
    Job job{{0, 0}, 0, false};
    job.p2p_memory = 0;
    EXPECT_EQ(chosen(job, OpKind::broadcast, 4), "(none)");
    job.shm = true;
    EXPECT_EQ(chosen(job, OpKind::broadcast, 4), "shm_local");
}

TEST(Router, AGroupNeverRunsNatively)
{
    Job group{{0, 1}, 0, false, kAllNative, false};
    EXPECT_EQ(chosen(group, OpKind::allreduce, 4), "recursive_doubling");
    EXPECT_EQ(chosen(group, OpKind::alltoall, 4), "pairwise");
    // A group whose members share this host runs in shared memory.
    Job local_group{{0, 0}, 0, true, 0, false};
    EXPECT_EQ(chosen(local_group, OpKind::allreduce, 4), "shm_local");
    EXPECT_EQ(chosen(local_group, OpKind::broadcast, 4), "shm_local");
}

TEST(Router, AllreduceAcrossHostsSharingRanksIsHierarchical)
{
    Job job{{0, 0, 2, 2}, 3};
    EXPECT_EQ(chosen(job, OpKind::allreduce, 4), "shm_hierarchical");
    EXPECT_EQ(chosen(job, OpKind::allreduce, size_t{64} << 20), "shm_hierarchical");
    // The other kinds have no hierarchical form: the transport's algorithms run them.
    EXPECT_EQ(chosen(job, OpKind::broadcast, 4), "tree_chain");
    EXPECT_EQ(chosen(job, OpKind::allgather, 4), "ring");
    EXPECT_EQ(chosen(job, OpKind::barrier, 0), "dissemination");
    // Only this rank alone on its host: still some host holds two.
    EXPECT_EQ(chosen(Job{{0, 1, 1}}, OpKind::allreduce, 4), "shm_hierarchical");
}

TEST(Router, AForcedAlgorithmKeepsAllreduceOffSharedMemory)
{
    Job local{{0, 0, 0}};
    Job hosts{{0, 0, 2, 2}};
    using C = algo::AllreduceChoice;
    for (auto [choice, name] : {std::pair{C::ring, "ring"},
                                std::pair{C::halving_doubling, "halving_doubling"},
                                std::pair{C::recursive_doubling, "recursive_doubling"}}) {
        for (size_t bytes : {size_t{4}, size_t{1} << 20}) {
            EXPECT_EQ(chosen(local, OpKind::allreduce, bytes, forced(choice)), name);
            EXPECT_EQ(chosen(hosts, OpKind::allreduce, bytes, forced(choice)), name);
        }
        // Only allreduce: the other kinds stay on shared memory.
        EXPECT_EQ(chosen(local, OpKind::broadcast, 4, forced(choice)), "shm_local");
        EXPECT_EQ(chosen(local, OpKind::reduce_scatter, 4, forced(choice)), "shm_local");
    }
    EXPECT_EQ(chosen(local, OpKind::allreduce, 4, forced(C::shm)), "shm_local");
    EXPECT_EQ(chosen(hosts, OpKind::allreduce, 4, forced(C::shm)), "shm_hierarchical");
    // Where shared memory cannot serve, "shm" is "auto".
    Job apart{{0, 1, 2}};
    EXPECT_EQ(chosen(apart, OpKind::allreduce, 4, forced(C::shm)), "recursive_doubling");
    EXPECT_EQ(chosen(apart, OpKind::allreduce, size_t{1} << 20, forced(C::shm)), "ring");
}

TEST(Router, AForcedAlgorithmTakesAllreduceOffNativeCollectives)
{
    using C = algo::AllreduceChoice;
    Job job{{0, 1, 2}, 0, false, kAllNative};
    for (auto [choice, name] : {std::pair{C::ring, "ring"},
                                std::pair{C::halving_doubling, "halving_doubling"},
                                std::pair{C::recursive_doubling, "recursive_doubling"}}) {
        for (size_t bytes : {size_t{4}, size_t{1} << 20})
            EXPECT_EQ(chosen(job, OpKind::allreduce, bytes, forced(choice)), name);
        // Only allreduce: the other kinds stay native.
        EXPECT_EQ(chosen(job, OpKind::reduce_scatter, 4, forced(choice)), "native");
        EXPECT_EQ(chosen(job, OpKind::barrier, 0, forced(choice)), "native");
    }
    EXPECT_EQ(chosen(job, OpKind::allreduce, 4), "native");
    // "shm" where shared memory cannot serve is "auto", which is native here ...
    EXPECT_EQ(chosen(job, OpKind::allreduce, 4, forced(C::shm)), "native");
    // ... and shared memory where it can (it never attaches beside native collectives
    // today, but the policy says who wins).
    Job local{{0, 0, 0}, 0, true, kAllNative};
    EXPECT_EQ(chosen(local, OpKind::allreduce, 4, forced(C::shm)), "shm_local");
    EXPECT_EQ(chosen(local, OpKind::broadcast, 4, forced(C::shm)), "native");
}

TEST(Router, OneRankRunsTheAlgorithms)
{
    // Nothing to share with: the algorithms return at once.
    Job alone{{0}};
    EXPECT_EQ(chosen(alone, OpKind::allreduce, 4), "recursive_doubling");
    EXPECT_EQ(chosen(alone, OpKind::barrier, 0), "dissemination");
}

TEST(Router, JoinHasNoPath)
{
    EXPECT_EQ(chosen(Job{{0, 0}}, OpKind::join, 0), "(none)");
}

TEST(Router, EveryTableEndsWithAPathThatAlwaysApplies)
{
    // Whatever the job, every kind finds a path: no call is left without one.
    for (const Job &job : {Job{{0}}, Job{{0, 0}}, Job{{0, 1}, 0, false, kAllNative, false},
                           Job{{0, 0, 1}, 2, true, kAllNative}})
        for (OpKind kind : kKinds)
            for (auto choice : {algo::AllreduceChoice::automatic, algo::AllreduceChoice::ring,
                                algo::AllreduceChoice::shm})
                EXPECT_NE(chosen(job, kind, 4, forced(choice)), "(none)");
}

TEST(Router, APathThatCannotTouchTheCallsMemoryDoesNotApply)
{
    // Carried by shared memory: no transport's accepted memory gates it.
    const Path device_only = {"device_only", memory_bit(Memory::device),
                              Carrier::shared_memory, false,
                              [](const Call &, const Topology &, const Policy &) { return true; },
                              nullptr};
    const Path host_only = {"host_only", memory_bit(Memory::host), Carrier::shared_memory,
                            false,
                            [](const Call &, const Topology &, const Policy &) { return true; },
                            nullptr};
    const Topology topo = Job{{0, 1}}.topology();
    const Call host{OpKind::allreduce, 4, Memory::host};
    const Call device{OpKind::allreduce, 4, Memory::device};
    EXPECT_TRUE(applies_to(device_only, device, topo, {}));
    EXPECT_FALSE(applies_to(device_only, host, topo, {}));
    EXPECT_TRUE(applies_to(host_only, host, topo, {}));
    EXPECT_FALSE(applies_to(host_only, device, topo, {}));
}

TEST(Router, TheCallsMemoryTypeComesFromTheOperation)
{
    EXPECT_EQ(memory_of(DT_MEMORY_HOST), Memory::host);
    EXPECT_EQ(memory_of(DT_MEMORY_DEVICE), Memory::device);
}

std::string chosen_device(const Job &job, OpKind kind)
{
    const Path *p = choose({kind, 4, Memory::device}, job.topology(), {});
    return p != nullptr ? p->name : "(none)";
}

TEST(Router, DeviceMemoryIsStagedWhereAProviderCanAndTheTransportCannotTakeIt)
{
    for (Job job : {Job{{0}}, Job{{0, 0}}, Job{{0, 1}, 0, false}, Job{{0, 0, 1, 1}}}) {
        job.staging = true;
        for (OpKind kind : kKinds) {
            if (kind == OpKind::barrier)
                continue; // moves no buffer, so never device memory
            EXPECT_EQ(chosen_device(job, kind), "staging") << op_kind_name(kind);
            EXPECT_TRUE(accepts_memory(kind, Memory::device)) << op_kind_name(kind);
        }
    }
}

TEST(Router, WithoutAProviderNoPathTakesDeviceMemory)
{
    // The router then fails the call with DT_ERR_UNSUPPORTED rather than run a host path
    // on it (the C API refuses it earlier, while no memory provider is loaded).
    for (const Job &job : {Job{{0}}, Job{{0, 0}}, Job{{0, 1}, 0, false, kAllNative, true}})
        for (OpKind kind : kKinds)
            EXPECT_EQ(chosen_device(job, kind), "(none)") << op_kind_name(kind);
}

TEST(Router, ADeviceTransportRunsDeviceCallsOverTheWholeJobAheadOfStaging)
{
    Job job{{0, 0}};
    job.staging = true;
    job.device_native = kAllNative;
    for (OpKind kind : kKinds) {
        if (kind == OpKind::barrier)
            continue;
        EXPECT_EQ(chosen_device(job, kind), "device_native") << op_kind_name(kind);
        EXPECT_EQ(chosen(job, kind, 4), "shm_local") << op_kind_name(kind); // host calls
    }
    // A group with a device communicator of its own (Router::split_device) runs there;
    // for a group without one the router leaves device_native empty, and it is staged.
    job.whole_job = false;
    EXPECT_EQ(chosen_device(job, OpKind::allreduce), "device_native");
    job.device_native = 0;
    EXPECT_EQ(chosen_device(job, OpKind::allreduce), "staging");
    job.whole_job = true;
    job.device_native = kind_bit(OpKind::allreduce);
    EXPECT_EQ(chosen_device(job, OpKind::allreduce), "device_native");
    EXPECT_EQ(chosen_device(job, OpKind::alltoall), "staging");
}

TEST(Router, UnevenKindsRunOnTheAlgorithmsAndStageDeviceMemory)
{
    // No transport has them natively and shared memory does not carry them, whatever
    // the job looks like; device memory is staged when a provider can stage it.
    for (Job job : {Job{{0, 0}}, Job{{0, 1}, 0, false, kAllNative, true},
                    Job{{0, 0, 2, 2}, 3, true, kAllNative, true}}) {
        job.device_native = kAllNative;
        EXPECT_EQ(chosen(job, OpKind::allgatherv, 4), "ring");
        EXPECT_EQ(chosen(job, OpKind::alltoallv, 4), "pairwise");
        EXPECT_EQ(chosen_device(job, OpKind::allgatherv), "(none)");
        job.staging = true;
        EXPECT_EQ(chosen_device(job, OpKind::allgatherv), "staging");
        EXPECT_EQ(chosen_device(job, OpKind::alltoallv), "staging");
    }
}

TEST(Router, HostCallsNeverStage)
{
    Job job{{0, 0}};
    job.staging = true;
    for (OpKind kind : kKinds)
        EXPECT_EQ(chosen(job, kind, 4), "shm_local") << op_kind_name(kind);
}

} // namespace
} // namespace dt::routing
