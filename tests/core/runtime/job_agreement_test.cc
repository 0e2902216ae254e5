// SPDX-License-Identifier: Apache-2.0
// The job-settings check of dt_context_create: its encoding, its messages, and the store
// protocol with ranks as threads over a loopback store.
#include "runtime/job_agreement.h"

#include "runtime/error.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

namespace dt {
namespace {

using namespace std::chrono_literals;

JobSettings settings(int size, std::vector<std::string> transports = {"tcp"},
                     bool ordered = false)
{
    JobSettings s;
    s.size = size;
    s.transports = std::move(transports);
    s.ordered = ordered;
    s.api_major = 1;
    s.api_minor = 1;
    return s;
}

TEST(JobAgreement, EncodeDecodeRoundTrip)
{
    JobSettings s = settings(4, {"ucx", "tcp"}, true);
    JobSettings d = decode("rank 1", encode(s));
    EXPECT_EQ(disagreement(0, s, 1, d), "");
    EXPECT_EQ(d.size, 4);
    EXPECT_EQ(d.transports, (std::vector<std::string>{"ucx", "tcp"}));
    EXPECT_TRUE(d.ordered);
    try {
        decode("rank 3", "size=2\nordered=0");
        ADD_FAILURE() << "decode accepted a missing field";
    } catch (const Error &e) {
        EXPECT_EQ(e.status(), DT_ERR_PROTOCOL);
        EXPECT_NE(std::string(e.what()).find("rank 3"), std::string::npos) << e.what();
    }
}

TEST(JobAgreement, MessagesNameRanksAndValues)
{
    EXPECT_EQ(disagreement(0, settings(2), 1, settings(3)),
              "ranks disagree on the job size: rank 0 says 2, rank 1 says 3");
    EXPECT_EQ(disagreement(0, settings(2, {"tcp"}, false), 1, settings(2, {"auto"}, true)),
              "ranks disagree on the transport list (DISTTRAIN_TRANSPORT): rank 0 says "
              "'tcp', rank 1 says 'auto'; ranks disagree on ordered mode "
              "(DISTTRAIN_ORDERED): rank 0 says 0, rank 1 says 1");
    JobSettings old = settings(2);
    old.api_minor = 0;
    EXPECT_EQ(disagreement(0, settings(2), 1, old),
              "ranks disagree on the library's API version: rank 0 says 1.1, rank 1 says 1.0");
}

struct Job : ::testing::Test {
    bootstrap::Auth auth{std::string(64, 'a')};
    bootstrap::StoreServer server{"127.0.0.1:0", auth};

    // Runs check_job_agreement for each rank on its own thread and client; returns each
    // rank's status (DT_OK or the error's) and message.
    std::vector<std::pair<dt_status_t, std::string>> run(const std::vector<JobSettings> &ranks,
                                                         std::chrono::milliseconds timeout,
                                                         const std::string &prefix = "ctx0/")
    {
        std::vector<std::future<std::pair<dt_status_t, std::string>>> results;
        for (size_t r = 0; r < ranks.size(); ++r)
            results.push_back(std::async(std::launch::async, [&, r] {
                try {
                    bootstrap::StoreClient store(server.address(), auth, 5000ms);
                    check_job_agreement(store, prefix, static_cast<int>(r), ranks[r], timeout);
                    return std::make_pair(DT_OK, std::string());
                } catch (const Error &e) {
                    return std::make_pair(e.status(), std::string(e.what()));
                }
            }));
        std::vector<std::pair<dt_status_t, std::string>> out;
        for (auto &f : results)
            out.push_back(f.get());
        return out;
    }
};

TEST_F(Job, AgreeingRanksPass)
{
    for (auto &[status, message] : run({settings(3), settings(3), settings(3)}, 10s))
        EXPECT_EQ(status, DT_OK) << message;
}

TEST_F(Job, DisagreeingSizesFailEveryRankFast)
{
    // Rank 0 believes in 3 ranks, so it would wait for a rank 2 that never comes: the
    // disagreement of rank 1 must end it well before the timeout.
    auto start = std::chrono::steady_clock::now();
    auto out = run({settings(3), settings(2)}, 30s);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
    for (auto &[status, message] : out) {
        EXPECT_EQ(status, DT_ERR_INVALID_CONFIG);
        EXPECT_EQ(message, "ranks disagree on the job size: rank 0 says 3, rank 1 says 2");
    }
}

TEST_F(Job, ARankBeyondRankZerosSizeFailsItself)
{
    auto out = run({settings(2), settings(2), settings(3)}, 10s);
    EXPECT_EQ(out[0].first, DT_OK);
    EXPECT_EQ(out[1].first, DT_OK);
    EXPECT_EQ(out[2].first, DT_ERR_INVALID_CONFIG);
    EXPECT_EQ(out[2].second, "ranks disagree on the job size: rank 0 says 2, rank 2 says 3 "
                             "(if this store served an earlier job, that job's rank 0 said "
                             "so: give each job its own store, or a DISTTRAIN_JOB_ID of its "
                             "own)");
}

TEST_F(Job, ASecondJobInTheSameNamespaceIsToldTheStoreServedOne)
{
    for (auto &[status, message] : run({settings(2), settings(2)}, 10s))
        ASSERT_EQ(status, DT_OK) << message;
    // Without its claims each rank would read the first job's entries as its own peers'.
    for (auto &[status, message] : run({settings(2), settings(2)}, 10s)) {
        EXPECT_EQ(status, DT_ERR_INVALID_CONFIG);
        EXPECT_NE(message.find("this store already served a job"), std::string::npos)
            << message;
        EXPECT_NE(message.find("a DISTTRAIN_JOB_ID of its own"), std::string::npos) << message;
    }
}

TEST_F(Job, ALargerSecondJobIsNotBlamedForTheFirstJobsSize)
{
    for (auto &[status, message] : run({settings(2), settings(2)}, 10s))
        ASSERT_EQ(status, DT_OK) << message;
    auto out = run({settings(3), settings(3), settings(3)}, 10s);
    for (int r = 0; r < 2; ++r) {
        EXPECT_EQ(out[r].first, DT_ERR_INVALID_CONFIG);
        EXPECT_NE(out[r].second.find(cat("a rank ", r, " met in the rendezvous store at ")),
                  std::string::npos) << out[r].second;
    }
    // Rank 2 is new to the namespace: it reads the first job's verdict, and is told so
    // however it ran against this job's rank 0.
    EXPECT_EQ(out[2].first, DT_ERR_INVALID_CONFIG);
    EXPECT_NE(out[2].second.find("a DISTTRAIN_JOB_ID of its own"), std::string::npos)
        << out[2].second;
}

TEST_F(Job, JobsInNamespacesOfTheirOwnShareAStore)
{
    for (const char *prefix : {"job/a/ctx0/", "job/b/ctx0/"})
        for (auto &[status, message] : run({settings(3), settings(3), settings(3)}, 10s,
                                           prefix))
            EXPECT_EQ(status, DT_OK) << prefix << ": " << message;
}

// Rank 0 only sees that rank 2 wrote nothing to the store: it may be running and unable
// to reach the store, so the message says no more than that, and what to check.
TEST_F(Job, AMissingRankTimesOutOnEveryRankNamingIt)
{
    auto out = run({settings(3), settings(3)}, 500ms);
    for (auto &[status, message] : out) {
        EXPECT_EQ(status, DT_ERR_TIMEOUT);
        EXPECT_NE(message.find("rank 2 of 3 did not reach the rendezvous store within"),
                  std::string::npos) << message;
        EXPECT_NE(message.find("that the store's address is reachable from its host"),
                  std::string::npos) << message;
        EXPECT_EQ(message.find("dt_context_create"), std::string::npos) << message;
    }
}

} // namespace
} // namespace dt
