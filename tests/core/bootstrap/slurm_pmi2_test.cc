// SPDX-License-Identifier: Apache-2.0
// The Slurm PMI2 rendezvous (bootstrap/slurm_pmi2.h) against a fake libpmi2
// (fake_pmi2.c, path in DISTTRAIN_TEST_FAKE_PMI2): what rank 0 publishes, what the others
// fetch, and every way PMI2 can be missing or fail. The real srun is in
// tests/integration/slurm.
#include "bootstrap/slurm_pmi2.h"

#include "bootstrap/net_address.h"
#include "bootstrap_test_util.h"

#include <dlfcn.h>

namespace dt::bootstrap {
namespace {

using namespace std::chrono_literals;
using test::error_of;

struct FakePmi2 {
    std::string path;
    void (*reset)() = nullptr;
    int (*set)(const char *, const char *) = nullptr;
    const char *(*lookup)(const char *) = nullptr;
    int (*fences)() = nullptr;
};

// The fake's own functions, from the same loaded copy the code under test uses (dlopen of
// one path gives one handle).
const FakePmi2 &fake()
{
    static FakePmi2 f = [] {
        FakePmi2 r;
        const char *path = std::getenv("DISTTRAIN_TEST_FAKE_PMI2");
        if (path == nullptr)
            return r;
        r.path = path;
        void *h = ::dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (h == nullptr)
            return r;
        r.reset = reinterpret_cast<void (*)()>(::dlsym(h, "fake_pmi2_reset"));
        r.set = reinterpret_cast<int (*)(const char *, const char *)>(
            ::dlsym(h, "fake_pmi2_set"));
        r.lookup = reinterpret_cast<const char *(*)(const char *)>(
            ::dlsym(h, "fake_pmi2_lookup"));
        r.fences = reinterpret_cast<int (*)()>(::dlsym(h, "fake_pmi2_fences"));
        return r;
    }();
    return f;
}

struct SlurmPmi2 : ::testing::Test {
    test::EnvGuard env{"PMI_FD",          "PMI_RANK",         "PMI_SIZE",
                       "SLURM_PROCID",    "SLURM_NTASKS",     "SLURM_STEP_ID",
                       "SLURM_STEP_NUM_NODES", "DISTTRAIN_PMI2_LIBRARY", "FAKE_PMI2_FAIL"};

    void SetUp() override
    {
        ASSERT_TRUE(fake().reset && fake().set && fake().lookup && fake().fences)
            << "DISTTRAIN_TEST_FAKE_PMI2 does not name the fake libpmi2 (run through "
               "meson test)";
        fake().reset();
    }

    // A session for rank of size, as srun --mpi=pmi2 would start it.
    std::unique_ptr<Pmi2Session> session(int rank, int size)
    {
        env.set("PMI_RANK", std::to_string(rank));
        env.set("PMI_SIZE", std::to_string(size));
        return std::make_unique<Pmi2Session>(std::make_shared<Pmi2Library>(fake().path), rank,
                                             size, 5s);
    }

    // The variables srun sets for a task of a one-node job step with PMI2.
    void srun_task(int rank, int size)
    {
        env.set("SLURM_PROCID", std::to_string(rank));
        env.set("SLURM_NTASKS", std::to_string(size));
        env.set("SLURM_STEP_ID", "0");
        env.set("SLURM_STEP_NUM_NODES", "1");
        env.set("PMI_FD", "99");
        env.set("PMI_RANK", std::to_string(rank));
        env.set("PMI_SIZE", std::to_string(size));
    }
};

RankInfo ranks(int rank, int size, const std::string &source)
{
    RankInfo r;
    r.rank = rank;
    r.size = size;
    r.source = source;
    return r;
}

TEST_F(SlurmPmi2, Rank0PublishesAListeningStoreAndAFreshToken)
{
    auto s = session(0, 2);
    SlurmRendezvous first = s->rendezvous("127.0.0.1:0", 5s);
    ASSERT_NE(first.server, nullptr);
    EXPECT_EQ(first.store_addr, first.server->address());
    EXPECT_EQ(first.store_addr.rfind("127.0.0.1:", 0), 0u) << first.store_addr;
    EXPECT_EQ(first.token.size(), 64u);
    ASSERT_NE(fake().lookup("disttrain-store-0"), nullptr);
    EXPECT_EQ(fake().lookup("disttrain-store-0"), first.store_addr);
    EXPECT_EQ(fake().lookup("disttrain-token-0"), first.token);
    EXPECT_EQ(fake().fences(), 1);

    // The published address serves a store that takes the published token.
    StoreClient client(fake().lookup("disttrain-store-0"),
                       Auth(fake().lookup("disttrain-token-0")), 5s);
    client.set("k", "v");
    EXPECT_EQ(client.get("k", 1s), "v");

    // A second context of the process gets its own keys, store and token.
    SlurmRendezvous second = s->rendezvous("127.0.0.1:0", 5s);
    EXPECT_NE(second.store_addr, first.store_addr);
    EXPECT_NE(second.token, first.token);
    EXPECT_EQ(fake().lookup("disttrain-store-1"), second.store_addr);
    EXPECT_EQ(fake().lookup("disttrain-token-1"), second.token);
    EXPECT_EQ(fake().fences(), 2);
}

TEST_F(SlurmPmi2, OtherRanksFetchWhatRank0Published)
{
    fake().set("disttrain-store-0", "10.1.2.3:4567");
    fake().set("disttrain-token-0", "0123abcd");
    auto s = session(1, 3);
    SlurmRendezvous r = s->rendezvous("127.0.0.1:0", 5s);
    EXPECT_EQ(r.store_addr, "10.1.2.3:4567");
    EXPECT_EQ(r.token, "0123abcd");
    EXPECT_EQ(r.server, nullptr);
    EXPECT_EQ(fake().fences(), 1);
}

TEST_F(SlurmPmi2, NothingPublishedIsAStoreError)
{
    auto s = session(1, 2);
    std::string msg = error_of([&] { s->rendezvous("127.0.0.1:0", 5s); }, DT_ERR_STORE);
    EXPECT_NE(msg.find("disttrain-store-0"), std::string::npos) << msg;
    EXPECT_NE(msg.find("PMI2_KVS_Get"), std::string::npos) << msg;
}

TEST_F(SlurmPmi2, FailedFenceIsAStoreError)
{
    auto s = session(0, 2);
    env.set("FAKE_PMI2_FAIL", "fence");
    std::string msg = error_of([&] { s->rendezvous("127.0.0.1:0", 5s); }, DT_ERR_STORE);
    EXPECT_NE(msg.find("PMI2_KVS_Fence"), std::string::npos) << msg;
}

TEST_F(SlurmPmi2, FenceThatNeverReturnsTimesOutAndTheSessionIsNotReused)
{
    auto s = session(1, 2);
    env.set("FAKE_PMI2_FAIL", "hang");
    auto start = std::chrono::steady_clock::now();
    std::string msg = error_of([&] { s->rendezvous("127.0.0.1:0", 300ms); }, DT_ERR_TIMEOUT);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
    EXPECT_NE(msg.find("300 ms"), std::string::npos) << msg;
    EXPECT_NE(msg.find("PMI2_KVS_Fence"), std::string::npos) << msg;
    msg = error_of([&] { s->rendezvous("127.0.0.1:0", 300ms); }, DT_ERR_INVALID_STATE);
    EXPECT_NE(msg.find("timed out"), std::string::npos) << msg;
}

TEST_F(SlurmPmi2, InitFailureSaysHowToStartTheJob)
{
    env.set("FAKE_PMI2_FAIL", "init");
    std::string msg = error_of([&] { session(0, 2); }, DT_ERR_CONNECT);
    EXPECT_NE(msg.find("PMI2_Init"), std::string::npos) << msg;
    EXPECT_NE(msg.find("srun --mpi=pmi2"), std::string::npos) << msg;
    EXPECT_NE(msg.find("DISTTRAIN_STORE_ADDR"), std::string::npos) << msg;
    EXPECT_NE(msg.find("disttrainrun"), std::string::npos) << msg;
}

TEST_F(SlurmPmi2, InitThatNeverReturnsTimesOut)
{
    env.set("FAKE_PMI2_FAIL", "init-hang");
    env.set("PMI_RANK", "0");
    env.set("PMI_SIZE", "2");
    auto start = std::chrono::steady_clock::now();
    std::string msg = error_of(
        [] { Pmi2Session(std::make_shared<Pmi2Library>(fake().path), 0, 2, 200ms); },
        DT_ERR_TIMEOUT);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
    EXPECT_NE(msg.find("PMI2_Init did not complete within 200 ms"), std::string::npos) << msg;
}

TEST_F(SlurmPmi2, PmiOfAnotherSizeIsRefused)
{
    env.set("FAKE_PMI2_FAIL", "size");
    std::string msg = error_of([&] { session(0, 2); }, DT_ERR_INVALID_CONFIG);
    EXPECT_NE(msg.find("rank 0 of 3"), std::string::npos) << msg;
    EXPECT_NE(msg.find("rank 0 of 2"), std::string::npos) << msg;
}

TEST_F(SlurmPmi2, LibraryThatIsMissingOrNotPmi2IsRefused)
{
    std::string msg = error_of([] { Pmi2Library("/nonexistent/libpmi2.so.0"); },
                               DT_ERR_INVALID_CONFIG);
    EXPECT_NE(msg.find("/nonexistent/libpmi2.so.0"), std::string::npos) << msg;
    EXPECT_NE(msg.find("libpmi2-0"), std::string::npos) << msg;
    msg = error_of([] { Pmi2Library("libz.so.1"); }, DT_ERR_INVALID_CONFIG);
    EXPECT_NE(msg.find("has no PMI2_Init"), std::string::npos) << msg;
}

TEST_F(SlurmPmi2, DefaultLibraryIsSlurmsUnlessTheVariableSaysOtherwise)
{
    EXPECT_EQ(Pmi2Library::default_path(), "libpmi2.so.0");
    env.set("DISTTRAIN_PMI2_LIBRARY", "/opt/slurm/lib/libpmi2.so");
    EXPECT_EQ(Pmi2Library::default_path(), "/opt/slurm/lib/libpmi2.so");
}

TEST_F(SlurmPmi2, RanksFromSlurmOnlyWhenSrunsVariablesSayTheSame)
{
    env.set("SLURM_PROCID", "1");
    env.set("SLURM_NTASKS", "2");
    EXPECT_TRUE(ranks_from_slurm(ranks(1, 2, "Slurm")));
    EXPECT_FALSE(ranks_from_slurm(ranks(1, 2, "PMI"))); // no job step: mpiexec in a script
    env.set("SLURM_STEP_ID", "0");
    EXPECT_TRUE(ranks_from_slurm(ranks(1, 2, "PMI"))); // srun --mpi=pmi2 sets PMI_RANK too
    EXPECT_FALSE(ranks_from_slurm(ranks(0, 2, "PMI")));   // mpiexec inside an allocation
    EXPECT_FALSE(ranks_from_slurm(ranks(1, 4, "PMI")));
    EXPECT_FALSE(ranks_from_slurm(ranks(1, 2, "params + Slurm")));
    EXPECT_FALSE(ranks_from_slurm(ranks(1, 2, "torchrun (env://)")));
    env.unset("SLURM_PROCID");
    EXPECT_FALSE(ranks_from_slurm(ranks(1, 2, "PMI")));
}

// The process-wide entry point. The tests that fail come first: the one that succeeds
// keeps its session for the rest of the process, as a real job does.
TEST_F(SlurmPmi2, OutsideAnSrunStepSaysToUseSrun)
{
    srun_task(0, 2);
    env.unset("SLURM_STEP_ID");
    std::string msg = error_of([] { rendezvous_through_slurm_pmi2(ranks(0, 2, "Slurm"), 5s); },
                               DT_ERR_INVALID_CONFIG);
    EXPECT_NE(msg.find("batch script"), std::string::npos) << msg;
    EXPECT_NE(msg.find("srun --mpi=pmi2"), std::string::npos) << msg;
}

TEST_F(SlurmPmi2, SrunWithoutPmi2SaysWhatToDo)
{
    srun_task(1, 2);
    env.unset("PMI_FD");
    std::string msg = error_of([] { rendezvous_through_slurm_pmi2(ranks(1, 2, "Slurm"), 5s); },
                               DT_ERR_INVALID_CONFIG);
    EXPECT_NE(msg.find("rank 1 of 2"), std::string::npos) << msg;
    EXPECT_NE(msg.find("PMI_FD is not set"), std::string::npos) << msg;
    EXPECT_NE(msg.find("srun --mpi=pmi2"), std::string::npos) << msg;
    EXPECT_NE(msg.find("DISTTRAIN_JOB_TOKEN"), std::string::npos) << msg;
    EXPECT_NE(msg.find("disttrainrun"), std::string::npos) << msg;
}

TEST_F(SlurmPmi2, MissingLibrarySaysWhatToDo)
{
    srun_task(0, 2);
    env.set("DISTTRAIN_PMI2_LIBRARY", "/nonexistent/libpmi2.so.0");
    std::string msg = error_of([] { rendezvous_through_slurm_pmi2(ranks(0, 2, "PMI"), 5s); },
                               DT_ERR_INVALID_CONFIG);
    EXPECT_NE(msg.find("/nonexistent/libpmi2.so.0"), std::string::npos) << msg;
    EXPECT_NE(msg.find("srun --mpi=pmi2"), std::string::npos) << msg;
}

TEST_F(SlurmPmi2, OneNodeStepKeepsTheStoreOnLoopback)
{
    srun_task(0, 2);
    env.set("DISTTRAIN_PMI2_LIBRARY", fake().path);
    SlurmRendezvous r = rendezvous_through_slurm_pmi2(ranks(0, 2, "PMI"), 5s);
    ASSERT_NE(r.server, nullptr);
    EXPECT_EQ(r.store_addr.rfind("127.0.0.1:", 0), 0u) << r.store_addr;
    EXPECT_EQ(fake().lookup("disttrain-store-0"), r.store_addr);
}

TEST_F(SlurmPmi2, StepOnSeveralNodesPublishesAnAddressTheOtherNodesReach)
{
    srun_task(0, 2);
    env.set("SLURM_STEP_NUM_NODES", "2");
    env.set("DISTTRAIN_PMI2_LIBRARY", fake().path);
    // The session made by the test above (one per process) serves this second round.
    SlurmRendezvous r = rendezvous_through_slurm_pmi2(ranks(0, 2, "PMI"), 5s);
    ASSERT_NE(r.server, nullptr);
    const uint16_t port = test::port_of(r.store_addr);
    EXPECT_EQ(r.store_addr, (HostPort{reachable_host(), port}.str()));
    EXPECT_EQ(fake().lookup("disttrain-store-1"), r.store_addr);
    // Bound to every interface: loopback reaches it too.
    StoreClient client(cat("127.0.0.1:", port), Auth(r.token), 5s);
    client.set("k", "v");
    EXPECT_EQ(client.get("k", 1s), "v");
}

} // namespace
} // namespace dt::bootstrap
