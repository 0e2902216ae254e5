// SPDX-License-Identifier: Apache-2.0
// Shared memory between real processes: the segments leave /dev/shm as soon as every
// rank has mapped them, and a rank killed while its peer waits on a flag is detected at
// once and named. Single-copy reads (process_vm_readv between the processes): the same
// bits as the staging path on 2, 3 and 4 ranks, every dtype and op, in place or not; a
// refused probe on one rank keeps every rank on the staging path; by default the first
// member's timings of both paths choose the path for every member; a peer that is gone or
// whose buffer cannot be read makes the call fail naming it. The ranks are forked before
// this process starts any thread (the store server comes up after the fork; the
// children's clients retry until it answers).
#include "shm_harness.h"

#include "runtime/error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <optional>
#include <sstream>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace dt::shm::testing {
namespace {

using namespace std::chrono_literals;

// A free loopback port, found without starting a thread.
int free_port()
{
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    ::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a);
    ::getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len);
    ::close(fd);
    return ntohs(a.sin_port);
}

struct Child {
    std::unique_ptr<bootstrap::StoreClient> store;
    std::unique_ptr<Domain> domain;
    uint64_t tag = 1;
    std::vector<int> all;
    int rank;
    DomainOptions options; // those of `domain`

    // Another domain over the same ranks (every rank makes one with the same prefix).
    std::unique_ptr<Domain> domain_with(const CmaOptions &cma, const std::string &prefix)
    {
        DomainOptions o = options;
        o.cma = cma;
        o.key_prefix = prefix;
        return std::make_unique<Domain>(*store, o);
    }

    // The next call's team on d among members (all when empty). Every rank calls this
    // for every call, member or not, so the tags stay in step.
    std::optional<Team> team(Domain &d, const std::vector<int> &members = {})
    {
        current = members.empty() ? all : members;
        const uint64_t t = tag++;
        auto me = std::find(current.begin(), current.end(), rank);
        if (me == current.end())
            return std::nullopt;
        TeamArgs a;
        a.locals = current.data();
        a.size = static_cast<int>(current.size());
        a.rank = static_cast<int>(me - current.begin());
        a.tag = t;
        a.deadline = Clock::now() + 30s;
        a.what = "allreduce";
        return std::optional<Team>(std::in_place, d, a);
    }
    std::vector<int> current;

    void allreduce_once(size_t count)
    {
        std::vector<float> buf(count);
        fill(buf.data(), count, DT_FLOAT32, rank, 0, DT_SUM);
        auto t = team(*domain);
        shm::allreduce(*t, buf.data(), buf.data(), count, DT_FLOAT32, DT_SUM);
        for (size_t i = 0; i < count; ++i)
            if (buf[i] != expected(all, i, DT_SUM))
                throw Error(DT_ERR_INTERNAL, "wrong allreduce result");
    }
};

// Single-copy options of each rank's domain.
using CmaFor = std::function<CmaOptions(int rank)>;

// Forks n ranks running body (exit status: its return value; 99 after an exception),
// then serves the store; returns the exit statuses (-signal when killed). Every child is
// killed after `limit`.
std::vector<int> run_processes(int n, const std::function<int(Child &)> &body,
                               const std::function<void(bootstrap::StoreClient &)> &parent,
                               std::chrono::seconds limit = 30s, const CmaFor &cma = {})
{
    const std::string addr = "127.0.0.1:" + std::to_string(free_port());
    std::vector<pid_t> pids;
    for (int r = 0; r < n; ++r) {
        pid_t pid = ::fork();
        if (pid == 0) {
            int code = 99;
            try {
                Child c;
                c.rank = r;
                for (int i = 0; i < n; ++i)
                    c.all.push_back(i);
                c.store = std::make_unique<bootstrap::StoreClient>(
                    addr, bootstrap::Auth(kToken), std::chrono::seconds(20));
                DomainOptions o;
                o.rank = r;
                o.size = n;
                o.local_rank = r;
                o.local_size = n;
                o.data_bytes = 64 * 1024;
                o.key_prefix = "p/";
                o.timeout = 20s;
                if (cma)
                    o.cma = cma(r);
                c.options = o;
                c.domain = std::make_unique<Domain>(*c.store, o);
                c.store->set("names/" + std::to_string(r), c.domain->segment_name(r));
                code = body(c);
            } catch (const std::exception &e) {
                std::fprintf(stderr, "rank %d: %s\n", r, e.what());
            }
            std::fflush(stderr);
            ::_exit(code);
        }
        pids.push_back(pid);
    }
    bootstrap::StoreServer server(addr, bootstrap::Auth(kToken));
    bootstrap::StoreClient client(addr, bootstrap::Auth(kToken), 20s);
    try {
        parent(client);
    } catch (const std::exception &e) {
        ADD_FAILURE() << "parent: " << e.what();
    }
    std::vector<int> status(n, -1000);
    auto end = Clock::now() + limit;
    int left = n;
    while (left > 0) {
        for (int r = 0; r < n; ++r) {
            int st = 0;
            if (status[r] != -1000 || ::waitpid(pids[r], &st, WNOHANG) != pids[r])
                continue;
            status[r] = WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
            --left;
        }
        if (left > 0 && Clock::now() > end) {
            for (int r = 0; r < n; ++r)
                if (status[r] == -1000)
                    ::kill(pids[r], SIGKILL);
            ADD_FAILURE() << "ranks still running after the limit: killed";
            end = Clock::time_point::max();
        }
        std::this_thread::sleep_for(2ms);
    }
    return status;
}

bool in_dev_shm(const std::string &name)
{
    return ::access(("/dev/shm" + name).c_str(), F_OK) == 0;
}

TEST(ShmProcess, SegmentsLeaveDevShmOnceEveryRankMappedThem)
{
    std::vector<std::string> names;
    auto status = run_processes(
        3,
        [](Child &c) {
            c.store->get("checked", 20s); // stay alive while the parent looks
            c.allreduce_once(20000);     // the segments still work, unlinked
            return 0;
        },
        [&](bootstrap::StoreClient &store) {
            for (int r = 0; r < 3; ++r)
                names.push_back(store.get("names/" + std::to_string(r), 20s));
            // Each rank unlinks its own once all have mapped it; give the last one a moment.
            auto until = Clock::now() + 5s;
            while (Clock::now() < until && (in_dev_shm(names[0]) || in_dev_shm(names[1]) ||
                                            in_dev_shm(names[2])))
                std::this_thread::sleep_for(5ms);
            store.set("checked", "1");
        });
    for (int r = 0; r < 3; ++r) {
        EXPECT_EQ(status[r], 0) << "rank " << r;
        EXPECT_FALSE(in_dev_shm(names[r])) << names[r] << " is still in /dev/shm";
    }
}

// Single-copy reads from just above the inline limit (on every call the tests make).
CmaOptions forced(size_t piece_bytes = 0)
{
    CmaOptions o;
    o.min_bytes = kInlineBytes + 1;
    o.piece_bytes = piece_bytes;
    return o;
}

class ShmProcessCma : public ::testing::TestWithParam<bool> {};

TEST_P(ShmProcessCma, RankKilledWhilePeerWaitsIsNamedPromptly)
{
    std::vector<std::string> names;
    CmaOptions cma = forced();
    cma.enabled = GetParam();
    auto status = run_processes(
        2,
        [](Child &c) {
            c.allreduce_once(1000);
            if (c.rank == 1) {
                std::this_thread::sleep_for(300ms); // rank 0 is waiting by now
                ::raise(SIGKILL);
            }
            auto start = Clock::now();
            try {
                c.allreduce_once(100000); // pipelined: waits on rank 1's counters
            } catch (const Error &e) {
                auto waited = Clock::now() - start;
                std::string m = e.what();
                std::fprintf(stderr, "rank 0 saw: %s\n", m.c_str());
                if (e.status() != DT_ERR_PEER_LOST)
                    return 2;
                if (m.find("rank 1 (pid") == std::string::npos ||
                    m.find("exited") == std::string::npos)
                    return 3;
                return waited < 3s ? 0 : 4;
            }
            return 1; // it cannot have succeeded without rank 1
        },
        [&](bootstrap::StoreClient &store) {
            for (int r = 0; r < 2; ++r)
                names.push_back(store.get("names/" + std::to_string(r), 20s));
        },
        30s, [&](int) { return cma; });
    EXPECT_EQ(status[0], 0) << "rank 0 did not report the killed rank 1 as expected";
    EXPECT_EQ(status[1], -SIGKILL);
    for (const auto &name : names)
        EXPECT_FALSE(in_dev_shm(name)) << name << " left behind in /dev/shm";
}

INSTANTIATE_TEST_SUITE_P(SingleCopy, ShmProcessCma, ::testing::Bool());

// Exit status of a child whose checks failed; what failed is on its stderr.
constexpr int kWrong = 10;

int report(const std::ostringstream &problems, int rank)
{
    if (problems.str().empty())
        return 0;
    std::fprintf(stderr, "rank %d:\n%s", rank, problems.str().c_str());
    return kWrong;
}

// One rank's side of SingleCopyMatchesStagingBitForBit. The buffers are reused and
// overwritten as soon as a call returns, and one rank arrives late now and then: a rank
// that left while a peer still read its buffers would spoil that peer's result.
struct PathComparison {
    Child &c;
    std::unique_ptr<Domain> staging; // single-copy reads off
    std::ostringstream problems;
    static constexpr size_t kMost = (size_t(1) << 20) + 64;
    std::vector<std::byte> send = std::vector<std::byte>(kMost), recv = send, result = send,
                           staged = send;
    int calls = 0;

    explicit PathComparison(Child &child) : c(child)
    {
        CmaOptions off;
        off.enabled = false;
        staging = c.domain_with(off, "staging/");
        if (!c.domain->cma(c.rank) || staging->cma(c.rank))
            problems << "probe verdicts: single-copy " << c.domain->cma(c.rank)
                     << ", staging " << staging->cma(c.rank) << "\n";
    }

    void run(Domain &d, size_t count, dt_dtype_t dtype, dt_reduce_op_t op, void *out,
             std::vector<std::byte> &into)
    {
        if (++calls % 5 == 0 && calls / 5 % c.all.size() == size_t(c.rank))
            std::this_thread::sleep_for(2ms);
        const size_t bytes = count * dt_dtype_size(dtype);
        auto t = c.team(d);
        shm::allreduce(*t, send.data(), out, count, dtype, op);
        std::memcpy(into.data(), out, bytes);
        std::memset(send.data(), 0xa5, bytes);
        std::memset(recv.data(), 0x5a, bytes);
    }

    void check(size_t count, dt_dtype_t dtype, dt_reduce_op_t op, bool in_place)
    {
        void *out = in_place ? send.data() : recv.data();
        auto what = [&] {
            std::ostringstream s;
            s << "dtype " << dtype << " op " << op << " count " << count
              << (in_place ? " in place" : "");
            return s.str();
        };
        // Exact values, against the expected reductions.
        fill(send.data(), count, dtype, c.rank, 0, op);
        run(*c.domain, count, dtype, op, out, result);
        for (size_t i = 0; i < count; ++i) {
            double got = read(result.data(), i, dtype), want = expected(c.all, i, op);
            if (got != want) {
                problems << what() << " [" << i << "] got " << got << " want " << want << "\n";
                break;
            }
        }
        // Values that round, through both paths.
        const uint64_t seed = c.rank * 1000003 + count * 31 + dtype * 7 + op;
        fill_random(send.data(), count, dtype, op, seed);
        run(*staging, count, dtype, op, out, staged);
        fill_random(send.data(), count, dtype, op, seed);
        run(*c.domain, count, dtype, op, out, result);
        if (std::memcmp(result.data(), staged.data(), count * dt_dtype_size(dtype)) != 0)
            problems << what() << ": single-copy and staging results differ\n";
    }
};

class ShmProcessRanks : public ::testing::TestWithParam<int> {};

// Every dtype x op, in place and not, odd counts, slices of several pieces: the same bits
// as the staging path (DISTTRAIN_SHM_CMA=0) on every rank.
TEST_P(ShmProcessRanks, SingleCopyMatchesStagingBitForBit)
{
    const int n = GetParam();
    auto status = run_processes(
        n,
        [](Child &c) {
            PathComparison p(c);
            for (dt_dtype_t dtype : kAllDtypes) {
                const size_t es = dt_dtype_size(dtype);
                for (dt_reduce_op_t op : kAllOps)
                    for (size_t count : {kInlineBytes / es + 1, size_t(1001), 70000 / es + 13,
                                         (size_t(1) << 20) / es + 7})
                        for (bool in_place : {false, true})
                            p.check(count, dtype, op, in_place);
            }
            if (c.domain->cma_calls() == 0 || p.staging->cma_calls() != 0)
                p.problems << "single-copy calls: " << c.domain->cma_calls() << " on, "
                           << p.staging->cma_calls() << " off\n";
            return report(p.problems, c.rank);
        },
        [](bootstrap::StoreClient &) {}, 120s, [](int) { return forced(64 * 1024); });
    for (int r = 0; r < n; ++r)
        EXPECT_EQ(status[r], 0) << "rank " << r << " (its stderr says what went wrong)";
}

INSTANTIATE_TEST_SUITE_P(Ranks, ShmProcessRanks, ::testing::Values(2, 3, 4));

// Rank 1's probe fails (as where ptrace is refused): it publishes "cannot read", and
// every rank then keeps every call that includes rank 1 on the staging path, with the
// right results; a call among ranks that can all read each other still reads directly.
TEST(ShmProcess, RefusedProbeOnOneRankKeepsEveryRankOnStaging)
{
    auto status = run_processes(
        3,
        [](Child &c) {
            std::ostringstream problems;
            for (int i = 0; i < 3; ++i)
                if (c.domain->cma(i) != (i != 1))
                    problems << "rank " << i << "'s verdict reads " << c.domain->cma(i) << "\n";
            const size_t count = 100000;
            for (int round = 0; round < 4; ++round) {
                std::vector<float> send(count), recv(count);
                fill(send.data(), count, DT_FLOAT32, c.rank, 0, DT_SUM);
                float *out = round % 2 == 0 ? recv.data() : send.data();
                auto t = c.team(*c.domain);
                shm::allreduce(*t, send.data(), out, count, DT_FLOAT32, DT_SUM);
                for (size_t i = 0; i < count; ++i)
                    if (out[i] != expected(c.all, i, DT_SUM)) {
                        problems << "round " << round << " [" << i << "] wrong\n";
                        break;
                    }
            }
            if (c.domain->cma_calls() != 0)
                problems << c.domain->cma_calls() << " calls read the peers directly\n";
            // Ranks 0 and 2 alone: both verdicts hold.
            std::vector<float> send(count);
            fill(send.data(), count, DT_FLOAT32, c.rank, 0, DT_SUM);
            if (auto t = c.team(*c.domain, {0, 2})) {
                shm::allreduce(*t, send.data(), send.data(), count, DT_FLOAT32, DT_SUM);
                for (size_t i = 0; i < count; ++i)
                    if (send[i] != expected({0, 2}, i, DT_SUM)) {
                        problems << "ranks 0 and 2: [" << i << "] wrong\n";
                        break;
                    }
                if (c.domain->cma_calls() != 1)
                    problems << "ranks 0 and 2 did not read each other directly\n";
            }
            return report(problems, c.rank);
        },
        [](bootstrap::StoreClient &) {}, 30s,
        [](int rank) {
            CmaOptions o = forced();
            o.fail_probe = rank == 1;
            return o;
        });
    for (int r = 0; r < 3; ++r)
        EXPECT_EQ(status[r], 0) << "rank " << r;
}

// Large allreduces of `count` floats, alternately sums and averages, each checked; how
// many of them read the peers' buffers directly.
std::string chosen_calls(Child &c, size_t count, int calls)
{
    std::ostringstream problems;
    for (int call = 0; call < calls; ++call) {
        std::vector<float> buf(count);
        fill(buf.data(), count, DT_FLOAT32, c.rank, 0, DT_SUM);
        const int divisor = call % 2 == 0 ? 0 : 2;
        auto t = c.team(*c.domain);
        shm::allreduce(*t, buf.data(), buf.data(), count, DT_FLOAT32, DT_SUM, divisor);
        for (size_t i = 0; i < count; ++i) {
            const double want = expected(c.all, i, DT_SUM) / (divisor > 0 ? divisor : 1);
            if (buf[i] != want) {
                problems << "call " << call << " [" << i << "] got " << buf[i] << " want "
                         << want << "\n";
                break;
            }
        }
    }
    return problems.str();
}

// By default the first member times the paths (shm/path_choice.h): a size class tries
// staging, single copy and, where each rank has a CPU of its own, staging through memory,
// in turn, twice, then runs whichever was fastest. Every member follows the first
// member's choice, so both count the same single-copy calls.
int timed_path_run(Child &c)
{
    std::ostringstream problems;
    const size_t count = 100000; // 400,000 bytes: chosen by the measured times
    const int paths = ::sysconf(_SC_NPROCESSORS_ONLN) >= 2 ? 3 : 2;
    problems << chosen_calls(c, count, 2 * paths);
    if (c.domain->cma_calls() != 2)
        problems << c.domain->cma_calls() << " of the first " << 2 * paths << " calls read "
                 << "the peers directly, not 2 (each path is tried twice)\n";
    problems << chosen_calls(c, count, 4);
    const uint64_t direct = c.domain->cma_calls();
    // Tell the other rank what this one did; each checks they agree.
    c.store->set("direct/" + std::to_string(c.rank), std::to_string(direct));
    const std::string other = c.store->get("direct/" + std::to_string(1 - c.rank), 20s);
    if (other != std::to_string(direct))
        problems << "rank " << c.rank << " read directly in " << direct << " calls, its "
                 << "peer in " << other << ": they took different paths\n";
    return report(problems, c.rank);
}

TEST(ShmProcess, TheFirstMemberTimesBothPathsAndEveryMemberFollows)
{
    auto status = run_processes(2, timed_path_run, [](bootstrap::StoreClient &) {});
    for (int r = 0; r < 2; ++r)
        EXPECT_EQ(status[r], 0) << "rank " << r << " (its stderr says what went wrong)";
}

// Only the first member's choice counts: rank 1 is made to choose the opposite path, and
// every rank must still take rank 0's, with the right sums and averages.
int forced_path_run(Child &c, bool rank0_reads_directly)
{
    std::ostringstream problems;
    const int calls = 4;
    problems << chosen_calls(c, 100000, calls);
    const uint64_t direct = rank0_reads_directly ? calls : 0;
    if (c.domain->cma_calls() != direct)
        problems << c.domain->cma_calls() << " calls read the peers directly, not " << direct
                 << "\n";
    // Below the size where measured times choose, no path is forced.
    c.allreduce_once(1000);
    if (c.domain->cma_calls() != direct)
        problems << "a 4,000-byte allreduce read the peers directly\n";
    return report(problems, c.rank);
}

class ShmProcessChosenPath : public ::testing::TestWithParam<bool> {};

TEST_P(ShmProcessChosenPath, TheFirstMemberChoosesForEveryMember)
{
    const bool direct = GetParam();
    auto status = run_processes(
        2, [&](Child &c) { return forced_path_run(c, direct); },
        [](bootstrap::StoreClient &) {}, 30s,
        [&](int rank) {
            CmaOptions o;
            o.force_path = (rank == 0) == direct ? 1 : 0;
            return o;
        });
    for (int r = 0; r < 2; ++r)
        EXPECT_EQ(status[r], 0) << "rank " << r << " (its stderr says what went wrong)";
}

INSTANTIATE_TEST_SUITE_P(ReadsDirectly, ShmProcessChosenPath, ::testing::Bool());

// Rank 1 publishes a call's buffers as the single-copy path does, then misbehaves: how
// rank 0's allreduce must end. what: "exit" (rank 1 is gone before rank 0 reads),
// "unmapped" (its buffer is not mapped), "mismatch" (it says it has half the bytes).
std::pair<dt_status_t, std::string> peer_misbehaves(const std::string &what)
{
    std::pair<dt_status_t, std::string> seen{DT_OK, ""};
    const size_t count = 100000, bytes = count * sizeof(float);
    auto status = run_processes(
        2,
        [&](Child &c) {
            std::vector<float> buf(count, 1.0f);
            if (c.rank == 1) {
                auto t = c.team(*c.domain);
                t->begin(true);
                CallBuffers b{reinterpret_cast<uint64_t>(buf.data()),
                              reinterpret_cast<uint64_t>(buf.data()), bytes, DT_FLOAT32, DT_SUM, 0};
                if (what == "unmapped") {
                    void *gone = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                    ::munmap(gone, bytes);
                    b.send = b.recv = reinterpret_cast<uint64_t>(gone);
                }
                if (what == "mismatch")
                    b.bytes = bytes / 2;
                t->publish_inline(&b, sizeof b);
                c.store->set("published", "1");
                if (what == "exit")
                    ::raise(SIGKILL);
                c.store->get("reported", 20s); // stay alive while rank 0 reads
                return 0;
            }
            c.store->get("published", 20s);
            if (what == "exit")
                std::this_thread::sleep_for(200ms); // rank 1 is gone by now
            try {
                auto t = c.team(*c.domain);
                shm::allreduce(*t, buf.data(), buf.data(), count, DT_FLOAT32, DT_SUM);
            } catch (const Error &e) {
                c.store->set("status", std::to_string(e.status()));
                c.store->set("message", e.what());
            }
            c.store->set("reported", "1");
            return 0;
        },
        [&](bootstrap::StoreClient &store) {
            seen.first = static_cast<dt_status_t>(std::stoi(store.get("status", 20s)));
            seen.second = store.get("message", 20s);
            std::fprintf(stderr, "rank 0 saw: %s\n", seen.second.c_str());
        },
        30s, [](int) { return forced(); });
    EXPECT_EQ(status[0], 0);
    return seen;
}

TEST(ShmProcess, PeerGoneBeforeTheReadIsNamed)
{
    auto [status, message] = peer_misbehaves("exit");
    EXPECT_EQ(status, DT_ERR_PEER_LOST) << message;
    EXPECT_NE(message.find("rank 1 (pid"), std::string::npos) << message;
    EXPECT_NE(message.find("exited"), std::string::npos) << message;
}

TEST(ShmProcess, UnreadablePeerBufferIsAnErrorNamingThePeer)
{
    auto [status, message] = peer_misbehaves("unmapped");
    EXPECT_EQ(status, DT_ERR_TRANSPORT) << message;
    EXPECT_NE(message.find("of rank 1 (pid"), std::string::npos) << message;
    EXPECT_NE(message.find("EFAULT"), std::string::npos) << message;
}

TEST(ShmProcess, PeerWithOtherArgumentsIsRefusedBeforeAnyRead)
{
    auto [status, message] = peer_misbehaves("mismatch");
    EXPECT_EQ(status, DT_ERR_MISMATCH) << message;
    EXPECT_NE(message.find("rank 1 passed 200000 bytes"), std::string::npos) << message;
}

} // namespace
} // namespace dt::shm::testing
