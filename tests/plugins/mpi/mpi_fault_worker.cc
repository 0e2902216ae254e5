// SPDX-License-Identifier: Apache-2.0
// A rank program for test_mpi_faults.py: an allreduce loop through the public C API in
// which one rank, the victim, is hit by a signal or gives up, so the test can see what
// the others report and that every process ends.
//   mpi_fault_worker stop VICTIM K    the victim raises SIGSTOP at iteration K
//   mpi_fault_worker kill VICTIM K    the victim raises SIGKILL at iteration K
//   mpi_fault_worker abort VICTIM K   the victim calls dt_context_abort at iteration K
//                                     instead of the allreduce the others wait in
//   mpi_fault_worker exit VICTIM K    the victim calls exit(5) at iteration K without
//                                     destroying its context, its engine driving MPI
// The victim prints "rank V signalled at T" first (T: seconds since the epoch, as the
// test's clock reads them). A rank prints "rank R failed after N iterations at T:
// STATUS: message" when a call fails and exits 3 for DT_ERR_TIMEOUT, 4 for any other
// error: exit codes of the program's own, which the transport must not change.
#include <disttrain/disttrain.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

double now_s()
{
    using namespace std::chrono;
    return duration<double>(system_clock::now().time_since_epoch()).count();
}

} // namespace

int main(int argc, char **argv)
{
    const char *mode = argc == 4 ? argv[1] : "";
    const bool aborts = std::strcmp(mode, "abort") == 0;
    const bool exits = std::strcmp(mode, "exit") == 0;
    if (!aborts && !exits && std::strcmp(mode, "stop") != 0 && std::strcmp(mode, "kill") != 0) {
        std::fprintf(stderr, "usage: mpi_fault_worker stop|kill|abort|exit VICTIM K\n");
        return 2;
    }
    const int sig = std::strcmp(mode, "stop") == 0 ? SIGSTOP : SIGKILL;
    const int victim = std::atoi(argv[2]), signal_at = std::atoi(argv[3]);
    dt_context_h ctx = nullptr;
    dt_status_t s = dt_context_create(nullptr, &ctx);
    if (s != DT_OK) {
        std::fprintf(stderr, "error: dt_context_create: %s: %s\n", dt_status_string(s),
                     dt_last_error());
        return 1;
    }
    int rank = 0;
    dt_context_rank(ctx, &rank);
    std::vector<float> buf(1 << 14, 1.0f);
    for (int it = 0;; ++it) {
        if (rank == victim && it == signal_at) {
            std::printf("rank %d signalled at %.3f\n", rank, now_s());
            std::fflush(stdout);
            if (aborts)
                dt_context_abort(ctx); // the allreduce below then fails at once
            else if (exits)
                std::exit(5);
            else
                raise(sig);
        }
        s = dt_allreduce(ctx, "loop", buf.data(), buf.data(), buf.size(), DT_FLOAT32, DT_SUM);
        if (s != DT_OK) {
            std::printf("rank %d failed after %d iterations at %.3f: %s: %s\n", rank, it,
                        now_s(), dt_status_string(s), dt_last_error());
            std::fflush(stdout);
            break;
        }
        std::fill(buf.begin(), buf.end(), 1.0f);
    }
    dt_context_destroy(ctx);
    return s == DT_ERR_TIMEOUT ? 3 : 4;
}
