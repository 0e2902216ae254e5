// SPDX-License-Identifier: Apache-2.0
#include "launch/launch_env.h"

#include <gtest/gtest.h>

namespace dt::launch {
namespace {

TEST(LaunchEnv, DefaultForwardList)
{
    for (const char *name : {"DISTTRAIN_LOG_LEVEL", "OMP_NUM_THREADS", "NCCL_DEBUG",
                             "UCX_TLS"})
        EXPECT_TRUE(forwarded_by_default(name)) << name;
    for (const char *name : {"PYTHONPATH", "LD_LIBRARY_PATH", "HOME", "PATH", "OMP_PROC_BIND",
                             "DISTTRAIN_RANK", "DISTTRAIN_JOB_TOKEN", "XNCCL_DEBUG"})
        EXPECT_FALSE(forwarded_by_default(name)) << name;
}

TEST(LaunchEnv, ExportsTakeOurValueOrTheGivenOne)
{
    std::vector<std::string> env = {"A=1", "B=two=2", "HOME=/h"};
    EnvList out = exported_values({{"A", std::nullopt}, {"B", std::nullopt},
                                   {"UNSET", std::nullopt}, {"C", "x"}, {"A", "3"}},
                                  env);
    EXPECT_EQ(out, (EnvList{{"A", "3"}, {"B", "two=2"}, {"C", "x"}}));
}

TEST(LaunchEnv, RemoteSettings)
{
    std::vector<std::string> env = {"DISTTRAIN_LOG_LEVEL=debug", "DISTTRAIN_RANK=7",
                                    "NCCL_DEBUG=INFO", "PYTHONPATH=/p", "HOME=/h",
                                    "UCX_TLS=tcp", "OMP_NUM_THREADS=2"};
    EnvList out = remote_settings(env, {{"NCCL_DEBUG", "WARN"}, {"PYTHONPATH", "/p"}});
    EXPECT_EQ(out, (EnvList{{"DISTTRAIN_LOG_LEVEL", "debug"}, {"NCCL_DEBUG", "WARN"},
                            {"UCX_TLS", "tcp"}, {"OMP_NUM_THREADS", "2"},
                            {"PYTHONPATH", "/p"}}));
}

TEST(LaunchEnv, SetVariableReplaces)
{
    std::vector<std::string> env = {"A=1", "AB=2"};
    set_variable(env, "A", "9");
    set_variable(env, "C", "");
    EXPECT_EQ(env, (std::vector<std::string>{"A=9", "AB=2", "C="}));
}

} // namespace
} // namespace dt::launch
