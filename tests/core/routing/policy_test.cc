// SPDX-License-Identifier: Apache-2.0
// The routing policy's parsing: every variable it reads, good values, and malformed ones
// with the message that names the variable, the value and what is allowed.
#include "routing/policy.h"
#include "runtime/error.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace dt::routing {
namespace {

using Env = std::map<std::string, std::string>;

Policy parse(const Env &env)
{
    return parse_policy([&](const char *name) -> std::optional<std::string> {
        auto it = env.find(name);
        if (it == env.end() || it->second.empty())
            return std::nullopt;
        return it->second;
    });
}

// The message of the DT_ERR_INVALID_CONFIG that parsing env throws ("" if none).
std::string config_error(const Env &env)
{
    try {
        parse(env);
    } catch (const Error &e) {
        EXPECT_EQ(e.status(), DT_ERR_INVALID_CONFIG) << e.what();
        return e.what();
    }
    return "";
}

TEST(Policy, DefaultsWithNothingSet)
{
    Policy p = parse({});
    EXPECT_EQ(p.algorithm, algo::AllreduceChoice::automatic);
    EXPECT_TRUE(p.shm.enabled);
    EXPECT_EQ(p.shm.data_bytes, 4 << 20);
    EXPECT_TRUE(p.shm.cma);
    EXPECT_EQ(p.shm.local_size, 0);
    EXPECT_EQ(p.shm.tuning.slice_bytes, 0);
    EXPECT_EQ(p.shm.tuning.oneshot_bytes, -1);
    EXPECT_EQ(p.shm.tuning.cma_bytes, -1);
    EXPECT_EQ(p.shm.tuning.cma_piece_bytes, 0);
    EXPECT_EQ(p.shm.tuning.spin.count(), 50);
    EXPECT_EQ(p.shm.tuning.yield.count(), 200);
    // An empty value is unset.
    EXPECT_EQ(parse({{"DISTTRAIN_ALGORITHM", ""}}).algorithm, algo::AllreduceChoice::automatic);
}

TEST(Policy, EveryAlgorithm)
{
    using C = algo::AllreduceChoice;
    for (auto [name, choice] :
         {std::pair{"auto", C::automatic}, std::pair{"ring", C::ring},
          std::pair{"halving_doubling", C::halving_doubling},
          std::pair{"recursive_doubling", C::recursive_doubling}, std::pair{"shm", C::shm}}) {
        EXPECT_EQ(parse({{"DISTTRAIN_ALGORITHM", name}}).algorithm, choice) << name;
        EXPECT_STREQ(algorithm_name(choice), name);
    }
}

TEST(Policy, EverySharedMemoryVariable)
{
    Policy p = parse({{"DISTTRAIN_SHM", "0"},
                      {"DISTTRAIN_SHM_BYTES", "65536"},
                      {"DISTTRAIN_SHM_CMA", "0"},
                      {"DISTTRAIN_SHM_LOCAL_SIZE", "2"},
                      {"DISTTRAIN_SHM_SLICE", "262144"},
                      {"DISTTRAIN_SHM_ONESHOT", "0"},
                      {"DISTTRAIN_SHM_CMA_BYTES", "0"},
                      {"DISTTRAIN_SHM_CMA_PIECE", "131072"},
                      {"DISTTRAIN_SHM_STREAM_BYTES", "1048576"},
                      {"DISTTRAIN_SHM_SPIN_US", "0"},
                      {"DISTTRAIN_SHM_YIELD_US", "1000"}});
    EXPECT_FALSE(p.shm.enabled);
    EXPECT_EQ(p.shm.data_bytes, 65536);
    EXPECT_FALSE(p.shm.cma);
    EXPECT_EQ(p.shm.local_size, 2);
    EXPECT_EQ(p.shm.tuning.slice_bytes, 262144);
    EXPECT_EQ(p.shm.tuning.oneshot_bytes, 0);
    EXPECT_EQ(p.shm.tuning.cma_bytes, 0);
    EXPECT_EQ(p.shm.tuning.cma_piece_bytes, 131072);
    EXPECT_EQ(p.shm.tuning.stream_bytes, 1048576);
    EXPECT_EQ(p.shm.tuning.spin.count(), 0);
    EXPECT_EQ(p.shm.tuning.yield.count(), 1000);
}

TEST(Policy, UnknownAlgorithmNamesTheChoices)
{
    std::string m = config_error({{"DISTTRAIN_ALGORITHM", "butterfly"}});
    EXPECT_NE(m.find("DISTTRAIN_ALGORITHM='butterfly' is not an allreduce algorithm; "
                     "expected ring, halving_doubling, recursive_doubling, shm or auto"),
              std::string::npos)
        << m;
}

TEST(Policy, ForcingSharedMemoryWhileItIsOffIsRefused)
{
    EXPECT_NE(config_error({{"DISTTRAIN_SHM", "0"}, {"DISTTRAIN_ALGORITHM", "shm"}})
                  .find("DISTTRAIN_ALGORITHM=shm forces allreduce into shared memory, but "
                        "DISTTRAIN_SHM=0 turns shared memory off; unset one of them"),
              std::string::npos);
    // Shared memory on, or another algorithm: no contradiction.
    EXPECT_EQ(parse({{"DISTTRAIN_SHM", "1"}, {"DISTTRAIN_ALGORITHM", "shm"}}).algorithm,
              algo::AllreduceChoice::shm);
    EXPECT_EQ(parse({{"DISTTRAIN_SHM", "0"}, {"DISTTRAIN_ALGORITHM", "ring"}}).algorithm,
              algo::AllreduceChoice::ring);
}

TEST(Policy, MalformedValuesFailEvenWithSharedMemoryOff)
{
    // DISTTRAIN_SHM=0 leaves the shm path unused, but a bad value is still an error now
    // rather than when a later run turns it on.
    EXPECT_NE(config_error({{"DISTTRAIN_SHM", "0"}, {"DISTTRAIN_ALGORITHM", "bogus"}})
                  .find("DISTTRAIN_ALGORITHM='bogus'"),
              std::string::npos);
    EXPECT_NE(config_error({{"DISTTRAIN_SHM", "0"}, {"DISTTRAIN_SHM_SLICE", "big"}})
                  .find("DISTTRAIN_SHM_SLICE='big' is not an integer"),
              std::string::npos);
}

TEST(Policy, EveryIntegerVariableNamesItselfTheValueAndTheRange)
{
    struct Case {
        const char *var, *value, *expect;
    };
    const Case cases[] = {
        {"DISTTRAIN_SHM", "yes",
         "DISTTRAIN_SHM='yes' is not an integer; expected an integer in [0, 1]"},
        {"DISTTRAIN_SHM", "2", "DISTTRAIN_SHM='2' is out of range; expected an integer in [0, 1]"},
        {"DISTTRAIN_SHM_BYTES", "4M", "DISTTRAIN_SHM_BYTES='4M' is not an integer"},
        {"DISTTRAIN_SHM_BYTES", "1024",
         "DISTTRAIN_SHM_BYTES='1024' is out of range; expected an integer in [65536, 17179869184]"},
        {"DISTTRAIN_SHM_CMA", "-1",
         "DISTTRAIN_SHM_CMA='-1' is out of range; expected an integer in [0, 1]"},
        {"DISTTRAIN_SHM_LOCAL_SIZE", "two", "DISTTRAIN_SHM_LOCAL_SIZE='two' is not an integer"},
        {"DISTTRAIN_SHM_LOCAL_SIZE", "-2",
         "DISTTRAIN_SHM_LOCAL_SIZE='-2' is out of range; expected an integer in [0, 1048576]"},
        {"DISTTRAIN_SHM_SLICE", "128K",
         "DISTTRAIN_SHM_SLICE='128K' is not an integer; expected an integer in [0, 1073741824]"},
        {"DISTTRAIN_SHM_ONESHOT", "-2",
         "DISTTRAIN_SHM_ONESHOT='-2' is out of range; expected an integer in [-1, 1073741824]"},
        {"DISTTRAIN_SHM_CMA_BYTES", "1e6",
         "DISTTRAIN_SHM_CMA_BYTES='1e6' is not an integer; "
         "expected an integer in [-1, 9223372036854775807]"},
        {"DISTTRAIN_SHM_STREAM_BYTES", "-2",
         "DISTTRAIN_SHM_STREAM_BYTES='-2' is out of range; "
         "expected an integer in [-1, 9223372036854775807]"},
        {"DISTTRAIN_SHM_CMA_PIECE", "x",
         "DISTTRAIN_SHM_CMA_PIECE='x' is not an integer; expected an integer in [0, 1073741824]"},
        {"DISTTRAIN_SHM_SPIN_US", "10000001",
         "DISTTRAIN_SHM_SPIN_US='10000001' is out of range; expected an integer in [0, 10000000]"},
        {"DISTTRAIN_SHM_YIELD_US", "1.5",
         "DISTTRAIN_SHM_YIELD_US='1.5' is not an integer; expected an integer in [0, 10000000]"},
    };
    for (const Case &c : cases) {
        std::string m = config_error({{c.var, c.value}});
        EXPECT_NE(m.find(c.expect), std::string::npos) << c.var << ": " << m;
    }
}

} // namespace
} // namespace dt::routing
