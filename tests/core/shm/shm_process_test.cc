// Shared memory between real processes: the segments leave /dev/shm as soon as every
// rank has mapped them, and a rank killed while its peer waits on a flag is detected at
// once and named. The ranks are forked before this process starts any thread (the store
// server comes up after the fork; the children's clients retry until it answers).
#include "shm_harness.h"

#include "runtime/error.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
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

    void allreduce_once(size_t count)
    {
        std::vector<float> buf(count);
        fill(buf.data(), count, DT_FLOAT32, rank, 0, DT_SUM);
        TeamArgs a;
        a.locals = all.data();
        a.size = static_cast<int>(all.size());
        a.rank = rank;
        a.tag = tag++;
        a.deadline = Clock::now() + 30s;
        a.what = "allreduce";
        Team t(*domain, a);
        shm::allreduce(t, buf.data(), buf.data(), count, DT_FLOAT32, DT_SUM);
        for (size_t i = 0; i < count; ++i)
            if (buf[i] != expected(all, i, DT_SUM))
                throw Error(DT_ERR_INTERNAL, "wrong allreduce result");
    }
};

// Forks n ranks running body (exit status: its return value; 99 after an exception),
// then serves the store; returns the exit statuses (-signal when killed). Every child is
// killed after `limit`.
std::vector<int> run_processes(int n, const std::function<int(Child &)> &body,
                               const std::function<void(bootstrap::StoreClient &)> &parent,
                               std::chrono::seconds limit = 30s)
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

TEST(ShmProcess, RankKilledWhilePeerWaitsIsNamedPromptly)
{
    std::vector<std::string> names;
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
        });
    EXPECT_EQ(status[0], 0) << "rank 0 did not report the killed rank 1 as expected";
    EXPECT_EQ(status[1], -SIGKILL);
    for (const auto &name : names)
        EXPECT_FALSE(in_dev_shm(name)) << name << " left behind in /dev/shm";
}

} // namespace
} // namespace dt::shm::testing
