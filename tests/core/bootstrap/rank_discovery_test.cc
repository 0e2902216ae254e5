// SPDX-License-Identifier: Apache-2.0
// discover_ranks() from params and from each launcher's variables, and its errors.
#include "bootstrap/rank_discovery.h"

#include "bootstrap_test_util.h"

namespace dt::bootstrap {
namespace {

using test::error_of;

struct RankDiscovery : ::testing::Test {
    // Every variable discover_ranks reads is cleared for each test and restored after.
    test::EnvGuard env{"DISTTRAIN_RANK",
                       "DISTTRAIN_SIZE",
                       "DISTTRAIN_LOCAL_RANK",
                       "DISTTRAIN_LOCAL_SIZE",
                       "OMPI_COMM_WORLD_RANK",
                       "OMPI_COMM_WORLD_SIZE",
                       "OMPI_COMM_WORLD_LOCAL_RANK",
                       "OMPI_COMM_WORLD_LOCAL_SIZE",
                       "PMI_RANK",
                       "PMI_SIZE",
                       "MPI_LOCALRANKID",
                       "MPI_LOCALNRANKS",
                       "SLURM_PROCID",
                       "SLURM_NTASKS",
                       "SLURM_LOCALID",
                       "SLURM_NTASKS_PER_NODE",
                       "SLURM_TASKS_PER_NODE",
                       "RANK",
                       "WORLD_SIZE",
                       "LOCAL_RANK",
                       "LOCAL_WORLD_SIZE",
                       "MASTER_ADDR",
                       "MASTER_PORT",
                       "TF_CONFIG"};

    std::string config_error(const dt_context_params_t *params = nullptr)
    {
        return error_of([&] { discover_ranks(params); }, DT_ERR_INVALID_CONFIG);
    }
};

void expect_info(const RankInfo &info, int rank, int size, int local_rank, int local_size,
                 const std::string &source)
{
    EXPECT_EQ(info.rank, rank);
    EXPECT_EQ(info.size, size);
    EXPECT_EQ(info.local_rank, local_rank);
    EXPECT_EQ(info.local_size, local_size);
    EXPECT_EQ(info.source, source);
}

TEST_F(RankDiscovery, NothingSetIsASingleProcess)
{
    RankInfo info = discover_ranks(nullptr);
    expect_info(info, 0, 1, 0, 1, "default");
    EXPECT_TRUE(info.local_known);
    dt_context_params_t params = {};
    expect_info(discover_ranks(&params), 0, 1, 0, 1, "default");
}

TEST_F(RankDiscovery, Disttrain)
{
    env.set("DISTTRAIN_RANK", "3");
    env.set("DISTTRAIN_SIZE", "8");
    env.set("DISTTRAIN_LOCAL_RANK", "1");
    env.set("DISTTRAIN_LOCAL_SIZE", "2");
    RankInfo info = discover_ranks(nullptr);
    expect_info(info, 3, 8, 1, 2, "DISTTRAIN_*");
    EXPECT_TRUE(info.local_known);
}

TEST_F(RankDiscovery, DisttrainWithoutLocalDefaultsToOneHost)
{
    env.set("DISTTRAIN_RANK", "2");
    env.set("DISTTRAIN_SIZE", "4");
    RankInfo info = discover_ranks(nullptr);
    expect_info(info, 2, 4, 2, 4, "DISTTRAIN_*");
    EXPECT_FALSE(info.local_known);
}

TEST_F(RankDiscovery, OpenMpi)
{
    env.set("OMPI_COMM_WORLD_RANK", "5");
    env.set("OMPI_COMM_WORLD_SIZE", "6");
    env.set("OMPI_COMM_WORLD_LOCAL_RANK", "2");
    env.set("OMPI_COMM_WORLD_LOCAL_SIZE", "3");
    expect_info(discover_ranks(nullptr), 5, 6, 2, 3, "Open MPI");
}

TEST_F(RankDiscovery, Pmi)
{
    env.set("PMI_RANK", "1");
    env.set("PMI_SIZE", "4");
    RankInfo info = discover_ranks(nullptr);
    expect_info(info, 1, 4, 1, 4, "PMI");
    EXPECT_FALSE(info.local_known);
    env.set("MPI_LOCALRANKID", "0");
    env.set("MPI_LOCALNRANKS", "2");
    info = discover_ranks(nullptr);
    expect_info(info, 1, 4, 0, 2, "PMI");
    EXPECT_TRUE(info.local_known);
}

TEST_F(RankDiscovery, Slurm)
{
    env.set("SLURM_PROCID", "7");
    env.set("SLURM_NTASKS", "8");
    env.set("SLURM_LOCALID", "3");
    env.set("SLURM_TASKS_PER_NODE", "4(x2)");
    expect_info(discover_ranks(nullptr), 7, 8, 3, 4, "Slurm");
    env.set("SLURM_TASKS_PER_NODE", "4,2");
    expect_info(discover_ranks(nullptr), 7, 8, 3, 4, "Slurm");
    env.set("SLURM_NTASKS_PER_NODE", "5"); // exact, wins over SLURM_TASKS_PER_NODE
    expect_info(discover_ranks(nullptr), 7, 8, 3, 5, "Slurm");
}

TEST_F(RankDiscovery, SlurmNtasksAloneIsNotAJobStep)
{
    env.set("SLURM_NTASKS", "16"); // an salloc/sbatch shell
    expect_info(discover_ranks(nullptr), 0, 1, 0, 1, "default");
}

TEST_F(RankDiscovery, SourcesAreTakenInOrder)
{
    env.set("SLURM_PROCID", "1");
    env.set("SLURM_NTASKS", "2");
    env.set("PMI_RANK", "2");
    env.set("PMI_SIZE", "3");
    EXPECT_EQ(discover_ranks(nullptr).source, "PMI");
    env.set("OMPI_COMM_WORLD_RANK", "3");
    env.set("OMPI_COMM_WORLD_SIZE", "4");
    EXPECT_EQ(discover_ranks(nullptr).source, "Open MPI");
    env.set("DISTTRAIN_RANK", "4");
    env.set("DISTTRAIN_SIZE", "5");
    expect_info(discover_ranks(nullptr), 4, 5, 4, 5, "DISTTRAIN_*");
}

TEST_F(RankDiscovery, Torchrun)
{
    env.set("RANK", "3");
    env.set("WORLD_SIZE", "4");
    env.set("LOCAL_RANK", "1");
    env.set("LOCAL_WORLD_SIZE", "2");
    env.set("MASTER_ADDR", "10.0.0.1");
    env.set("MASTER_PORT", "29500");
    RankInfo info = discover_ranks(nullptr);
    expect_info(info, 3, 4, 1, 2, "torchrun (env://)");
    EXPECT_TRUE(info.local_known);
    // MASTER_PORT is torch's own store; disttrain's is the port above it.
    EXPECT_EQ(info.store_addr, "10.0.0.1:29501");
    env.set("MASTER_ADDR", "fe80::1");
    EXPECT_EQ(discover_ranks(nullptr).store_addr, "[fe80::1]:29501");

    // The env:// subset (no LOCAL_*) as Kubernetes operators set it.
    env.unset("LOCAL_RANK");
    env.unset("LOCAL_WORLD_SIZE");
    info = discover_ranks(nullptr);
    expect_info(info, 3, 4, 3, 4, "torchrun (env://)");
    EXPECT_FALSE(info.local_known);

    // A lone process needs no store.
    env.set("RANK", "0");
    env.set("WORLD_SIZE", "1");
    EXPECT_EQ(discover_ranks(nullptr).store_addr, "");
}

TEST_F(RankDiscovery, TorchrunErrorsNameTheVariable)
{
    env.set("RANK", "1");
    EXPECT_NE(config_error().find("RANK is set but WORLD_SIZE is not"), std::string::npos);
    env.set("WORLD_SIZE", "2");
    env.set("LOCAL_RANK", "0");
    EXPECT_NE(config_error().find("LOCAL_RANK is set but LOCAL_WORLD_SIZE is not"),
              std::string::npos);
    env.unset("LOCAL_RANK");
    env.set("MASTER_ADDR", "127.0.0.1");
    EXPECT_NE(config_error().find("MASTER_ADDR is set but MASTER_PORT is not"),
              std::string::npos);
    env.set("MASTER_PORT", "65535");
    EXPECT_NE(config_error().find("MASTER_PORT='65535' is out of range"), std::string::npos);
    env.set("MASTER_PORT", "http");
    EXPECT_NE(config_error().find("MASTER_PORT='http' is not an integer"), std::string::npos);
    env.set("MASTER_PORT", "29500");
    env.set("WORLD_SIZE", "1");
    EXPECT_NE(config_error().find("RANK=1 is not below WORLD_SIZE=1"), std::string::npos);
}

TEST_F(RankDiscovery, TfConfig)
{
    env.set("TF_CONFIG", R"({"cluster": {"worker": ["h0:2222", "h1:2222", "h1:2223"]},
                             "task": {"type": "worker", "index": 2}})");
    RankInfo info = discover_ranks(nullptr);
    expect_info(info, 2, 3, 1, 2, "TF_CONFIG");
    EXPECT_TRUE(info.local_known);
    EXPECT_EQ(info.store_addr, "h0:2222");
    env.set("TF_CONFIG", R"({"cluster": {"worker": ["h0:2222"]}, "task": {"type": "worker",
                             "index": 0}})");
    info = discover_ranks(nullptr);
    expect_info(info, 0, 1, 0, 1, "TF_CONFIG");
    EXPECT_EQ(info.store_addr, "");
}

TEST_F(RankDiscovery, TfConfigErrorsNameTheVariable)
{
    env.set("TF_CONFIG", "{cluster: 1}");
    EXPECT_NE(config_error().find("TF_CONFIG is not valid JSON"), std::string::npos);
    env.set("TF_CONFIG", R"({"task": {"type": "worker", "index": 5},
                             "cluster": {"worker": ["a:1", "b:1"]}})");
    EXPECT_NE(config_error().find("TF_CONFIG: task.index is 5 but cluster.worker lists 2"),
              std::string::npos);
}

TEST_F(RankDiscovery, ConflictingLaunchersAreAnError)
{
    env.set("RANK", "1");
    env.set("WORLD_SIZE", "2");
    env.set("OMPI_COMM_WORLD_RANK", "0");
    env.set("OMPI_COMM_WORLD_SIZE", "2");
    std::string e = config_error();
    EXPECT_NE(e.find("conflicting launchers: torchrun (env://) says rank 1 of 2 (RANK=1, "
                     "WORLD_SIZE=2) but Open MPI says rank 0 of 2 (OMPI_COMM_WORLD_RANK=0, "
                     "OMPI_COMM_WORLD_SIZE=2)"),
              std::string::npos)
        << e;
    // Agreeing launchers are fine; the first in precedence is named.
    env.set("OMPI_COMM_WORLD_RANK", "1");
    EXPECT_EQ(discover_ranks(nullptr).source, "torchrun (env://)");
    // torchrun started per host by mpirun (more ranks than mpirun's tasks): nested.
    env.set("RANK", "5");
    env.set("WORLD_SIZE", "8");
    EXPECT_EQ(discover_ranks(nullptr).rank, 5);
    // Fewer ranks than the outer launcher cannot be nesting.
    env.set("OMPI_COMM_WORLD_SIZE", "16");
    EXPECT_NE(config_error().find("conflicting launchers"), std::string::npos);
    // TF_CONFIG against torchrun.
    env.unset("OMPI_COMM_WORLD_RANK");
    env.unset("OMPI_COMM_WORLD_SIZE");
    env.set("TF_CONFIG", R"({"cluster": {"worker": ["a:1","b:1","c:1","d:1","e:1","f:1",
                             "g:1","h:1"]}, "task": {"type": "worker", "index": 4}})");
    e = config_error();
    EXPECT_NE(e.find("torchrun (env://) says rank 5 of 8"), std::string::npos) << e;
    EXPECT_NE(e.find("TF_CONFIG says rank 4 of 8"), std::string::npos) << e;
    // DISTTRAIN_* wins over all of them without a word.
    env.set("DISTTRAIN_RANK", "2");
    env.set("DISTTRAIN_SIZE", "3");
    EXPECT_EQ(discover_ranks(nullptr).source, "DISTTRAIN_*");
    // Slurm's variables leak into everything in an allocation: never a conflict.
    env.unset("DISTTRAIN_RANK");
    env.unset("DISTTRAIN_SIZE");
    env.unset("TF_CONFIG");
    env.set("SLURM_PROCID", "0");
    env.set("SLURM_NTASKS", "8");
    EXPECT_EQ(discover_ranks(nullptr).source, "torchrun (env://)");
}

TEST_F(RankDiscovery, ParamsWinOverTheEnvironment)
{
    env.set("DISTTRAIN_RANK", "0");
    env.set("DISTTRAIN_SIZE", "2");
    env.set("DISTTRAIN_LOCAL_RANK", "0");
    env.set("DISTTRAIN_LOCAL_SIZE", "1");
    dt_context_params_t params = {};
    params.field_mask = DT_CONTEXT_PARAM_FIELD_RANK | DT_CONTEXT_PARAM_FIELD_SIZE |
                        DT_CONTEXT_PARAM_FIELD_LOCAL_RANK | DT_CONTEXT_PARAM_FIELD_LOCAL_SIZE;
    params.rank = 2;
    params.size = 3;
    params.local_rank = 1;
    params.local_size = 2;
    expect_info(discover_ranks(&params), 2, 3, 1, 2, "params");

    // Only rank and size from params; local from the launcher.
    params.field_mask = DT_CONTEXT_PARAM_FIELD_RANK | DT_CONTEXT_PARAM_FIELD_SIZE;
    expect_info(discover_ranks(&params), 2, 3, 0, 1, "params + DISTTRAIN_*");

    // Fields without their bit are ignored.
    params.field_mask = 0;
    expect_info(discover_ranks(&params), 0, 2, 0, 1, "DISTTRAIN_*");
}

TEST_F(RankDiscovery, ParamsAloneWithoutLocalDefaultToOneHost)
{
    dt_context_params_t params = {};
    params.field_mask = DT_CONTEXT_PARAM_FIELD_RANK | DT_CONTEXT_PARAM_FIELD_SIZE;
    params.rank = 1;
    params.size = 2;
    RankInfo info = discover_ranks(&params);
    expect_info(info, 1, 2, 1, 2, "params");
    EXPECT_FALSE(info.local_known);
}

TEST_F(RankDiscovery, MalformedNumbersNameTheVariable)
{
    env.set("DISTTRAIN_RANK", "x");
    env.set("DISTTRAIN_SIZE", "2");
    EXPECT_EQ(config_error(),
              "DISTTRAIN_RANK='x' is not an integer; expected an integer in [0, 1048575], in "
              "decimal digits (no spaces, '+' or suffix)");
    for (const char *blank_or_sign : {" 1", "+1"}) {
        env.set("DISTTRAIN_RANK", blank_or_sign);
        EXPECT_NE(config_error().find(cat("DISTTRAIN_RANK='", blank_or_sign,
                                          "' is not an integer")),
                  std::string::npos);
    }
    env.set("DISTTRAIN_RANK", "-1");
    EXPECT_NE(config_error().find("DISTTRAIN_RANK='-1' is out of range"), std::string::npos);
    env.set("DISTTRAIN_RANK", "1");
    env.set("DISTTRAIN_SIZE", "0");
    EXPECT_NE(config_error().find("DISTTRAIN_SIZE='0' is out of range"), std::string::npos);
    env.set("DISTTRAIN_SIZE", "2 ");
    EXPECT_NE(config_error().find("DISTTRAIN_SIZE='2 ' is not an integer"), std::string::npos);
    env.set("DISTTRAIN_SIZE", "99999999999999999999");
    EXPECT_NE(config_error().find("DISTTRAIN_SIZE"), std::string::npos);
}

TEST_F(RankDiscovery, MalformedLauncherVariablesNameTheVariable)
{
    const std::pair<const char *, const char *> cases[] = {
        {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
        {"PMI_RANK", "PMI_SIZE"},
        {"SLURM_PROCID", "SLURM_NTASKS"},
    };
    for (auto [rank_var, size_var] : cases) {
        test::EnvGuard inner{rank_var, size_var};
        inner.set(rank_var, "0");
        inner.set(size_var, "four");
        EXPECT_NE(config_error().find(std::string(size_var) + "='four' is not an integer"),
                  std::string::npos)
            << size_var;
    }
    env.set("OMPI_COMM_WORLD_RANK", "0");
    env.set("OMPI_COMM_WORLD_SIZE", "2");
    env.set("OMPI_COMM_WORLD_LOCAL_RANK", "0");
    env.set("OMPI_COMM_WORLD_LOCAL_SIZE", "1.5");
    EXPECT_NE(config_error().find("OMPI_COMM_WORLD_LOCAL_SIZE='1.5'"), std::string::npos);
}

TEST_F(RankDiscovery, PartialSetsNameTheMissingVariable)
{
    env.set("DISTTRAIN_RANK", "0");
    std::string msg = config_error();
    EXPECT_NE(msg.find("DISTTRAIN_RANK is set but DISTTRAIN_SIZE is not"), std::string::npos)
        << msg;
    env.set("DISTTRAIN_SIZE", "2");
    env.set("DISTTRAIN_LOCAL_SIZE", "2");
    msg = config_error();
    EXPECT_NE(msg.find("DISTTRAIN_LOCAL_SIZE is set but DISTTRAIN_LOCAL_RANK is not"),
              std::string::npos)
        << msg;
}

TEST_F(RankDiscovery, PartialLauncherSetsNameTheMissingVariable)
{
    {
        test::EnvGuard g{"OMPI_COMM_WORLD_SIZE"};
        g.set("OMPI_COMM_WORLD_SIZE", "2");
        EXPECT_NE(config_error().find("OMPI_COMM_WORLD_RANK is not"), std::string::npos);
    }
    {
        test::EnvGuard g{"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"};
        g.set("PMI_RANK", "0");
        g.set("PMI_SIZE", "2");
        g.set("MPI_LOCALRANKID", "0");
        EXPECT_NE(config_error().find("MPI_LOCALNRANKS is not"), std::string::npos);
    }
    {
        test::EnvGuard g{"SLURM_PROCID", "SLURM_LOCALID"};
        g.set("SLURM_PROCID", "0");
        EXPECT_NE(config_error().find("SLURM_NTASKS is not"), std::string::npos);
    }
    env.set("SLURM_PROCID", "0");
    env.set("SLURM_NTASKS", "2");
    env.set("SLURM_LOCALID", "0");
    EXPECT_NE(config_error().find("SLURM_TASKS_PER_NODE"), std::string::npos);
    env.set("SLURM_TASKS_PER_NODE", "(x2)");
    EXPECT_NE(config_error().find("SLURM_TASKS_PER_NODE='(x2)'"), std::string::npos);
}

TEST_F(RankDiscovery, InconsistentValuesAreExplained)
{
    env.set("DISTTRAIN_RANK", "4");
    env.set("DISTTRAIN_SIZE", "4");
    EXPECT_EQ(config_error(),
              "DISTTRAIN_RANK=4 is not below DISTTRAIN_SIZE=4; ranks are numbered 0..3");
    env.set("DISTTRAIN_RANK", "1");
    env.set("DISTTRAIN_LOCAL_RANK", "2");
    env.set("DISTTRAIN_LOCAL_SIZE", "2");
    EXPECT_NE(config_error().find("DISTTRAIN_LOCAL_RANK=2 is not below DISTTRAIN_LOCAL_SIZE=2"),
              std::string::npos);
    env.set("DISTTRAIN_LOCAL_RANK", "0");
    env.set("DISTTRAIN_LOCAL_SIZE", "5");
    EXPECT_NE(config_error().find("DISTTRAIN_LOCAL_SIZE=5 is larger than DISTTRAIN_SIZE=4"),
              std::string::npos);
}

TEST_F(RankDiscovery, BadParamsAreExplained)
{
    dt_context_params_t params = {};
    params.field_mask = DT_CONTEXT_PARAM_FIELD_RANK;
    params.rank = 1;
    std::string msg = config_error(&params);
    EXPECT_NE(msg.find("dt_context_params_t.rank is given but no size is"), std::string::npos)
        << msg;

    params.field_mask = DT_CONTEXT_PARAM_FIELD_RANK | DT_CONTEXT_PARAM_FIELD_SIZE;
    params.size = 0;
    msg = config_error(&params);
    EXPECT_NE(msg.find("dt_context_params_t.size=0 is out of range"), std::string::npos) << msg;

    params.size = 2;
    params.rank = 2;
    msg = config_error(&params);
    EXPECT_NE(msg.find("dt_context_params_t.rank=2 is not below dt_context_params_t.size=2"),
              std::string::npos)
        << msg;

    params.rank = 0;
    params.field_mask |= DT_CONTEXT_PARAM_FIELD_LOCAL_RANK;
    msg = config_error(&params);
    EXPECT_NE(msg.find("dt_context_params_t.local_rank is given but no local size"),
              std::string::npos)
        << msg;

    // A rank from params and a size from the environment combine.
    params.field_mask = DT_CONTEXT_PARAM_FIELD_RANK;
    params.rank = 1;
    env.set("DISTTRAIN_RANK", "0");
    env.set("DISTTRAIN_SIZE", "3");
    expect_info(discover_ranks(&params), 1, 3, 1, 3, "params + DISTTRAIN_*");
}

} // namespace
} // namespace dt::bootstrap
