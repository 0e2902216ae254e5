// SPDX-License-Identifier: Apache-2.0
// The mpi transport plugin on its own, one process per rank under mpirun: negotiation,
// point-to-point with the core's tag classes, messages split into chunks
// (DISTTRAIN_MPI_CHUNK_BYTES), order per tag, every native collective with MPI's and the
// plugin's own (float16/bfloat16) operators, the calls it declines; with --errors, MPI's
// errors as statuses and abort.
// Prints "mpi_plugin_test: PASS rank=R checks=N" or the failed checks, exit 1.
//   mpi_plugin_test             under mpirun
//   mpi_plugin_test --errors    under mpirun, 2 ranks or more: a truncated receive and a
//                               broadcast whose ranks disagree on the count fail their
//                               requests (never abort the job), the instance still works,
//                               then abort. MPI is not finalised at exit after an error.
//   mpi_plugin_test --abort-sending  under mpirun, 2 ranks or more: rank 0 aborts right
//                               after sending rank 1 a message too large to go eagerly,
//                               which Open MPI cannot cancel; it must still reach rank 1
//                               whole, and MPI end cleanly on both (mpirun exits 0)
//   mpi_plugin_test --decline   not under mpirun: negotiation must decline, saying why
#include <disttrain/plugin/common.h>
#include <disttrain/plugin/transport.h>

#include <dlfcn.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#ifndef MPI_PLUGIN_PATH
#error "meson passes MPI_PLUGIN_PATH, the built libdt-transport-mpi.so"
#endif

namespace {

int g_checks = 0, g_failed = 0, g_rank = 0;
std::string g_error;

#define CHECK(cond)                                                                        \
    do {                                                                                   \
        ++g_checks;                                                                        \
        if (!(cond)) {                                                                     \
            ++g_failed;                                                                    \
            std::fprintf(stderr, "rank %d: %s:%d: check failed: %s (last error: %s)\n",   \
                         g_rank, __FILE__, __LINE__, #cond, g_error.c_str());              \
        }                                                                                  \
    } while (0)

void log_fn(void *, int, const char *, const char *) {}
void set_error_fn(void *, const char *message) { g_error = message; }

const dt_host_services_t kServices = {
    sizeof(dt_host_services_t), DT_HOST_SERVICES_VERSION, log_fn, set_error_fn,
    nullptr, nullptr, nullptr, nullptr, nullptr, nullptr};

const dt_transport_v3_t *g_ops = nullptr;
void *g_t = nullptr;

int32_t wait(dt_transport_request_t &r) {
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (r.status == DTP_INPROGRESS && std::chrono::steady_clock::now() < until) {
        if (g_ops->progress(g_t, 5) < 0) return -9998;
    }
    return r.status;
}

uint8_t pattern(int seed, size_t i) { return static_cast<uint8_t>(seed * 131 + i * 7 + (i >> 8)); }

void point_to_point(int rank, int size) {
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    // Sizes around the 1000-byte chunk the test sets: one message, an exact multiple
    // (with its empty terminator), several chunks and a rest.
    const size_t sizes[] = {0, 1, 999, 1000, 2000, 4321};
    const uint64_t tags[] = {(uint64_t(1) << 40) + 5, (uint64_t(2) << 40) + 5,
                             uint64_t(3) << 40, 5, (uint64_t(9) << 40) + 5,
                             (uint64_t(1) << 40) + 5 + 32768 * 4};
    for (size_t len : sizes) {
        for (uint64_t tag : tags) {
            std::vector<uint8_t> out(len), in(len + 3000, 0xee);
            for (size_t i = 0; i < len; ++i) out[i] = pattern(rank, i);
            dt_transport_request_t s{}, r{};
            CHECK(g_ops->irecv(g_t, left, tag, in.data(), in.size(), &r) >= 0);
            CHECK(g_ops->isend(g_t, right, tag, out.data(), len, &s) >= 0);
            CHECK(wait(s) == DTP_OK);
            CHECK(wait(r) == DTP_OK);
            CHECK(r.bytes == len);
            CHECK(r.peer == left);
            bool same = true;
            for (size_t i = 0; i < len; ++i) same &= in[i] == pattern(left, i);
            CHECK(same);
        }
    }
    // Same tag, mixed sizes (chunked and not), receives posted before and after: order.
    constexpr int kMessages = 40;
    auto size_of = [](int i) { return static_cast<size_t>(i % 4 == 0 ? 2500 + i : i * 13); };
    std::vector<std::vector<uint8_t>> out(kMessages), in(kMessages);
    std::vector<dt_transport_request_t> sr(kMessages), rr(kMessages);
    for (int i = 0; i < kMessages / 2; ++i) {
        in[i].assign(3000, 0);
        CHECK(g_ops->irecv(g_t, left, 77, in[i].data(), in[i].size(), &rr[i]) >= 0);
    }
    for (int i = 0; i < kMessages; ++i) {
        out[i].resize(size_of(i));
        for (size_t k = 0; k < out[i].size(); ++k) out[i][k] = pattern(rank + i, k);
        CHECK(g_ops->isend(g_t, right, 77, out[i].data(), out[i].size(), &sr[i]) >= 0);
    }
    for (int i = kMessages / 2; i < kMessages; ++i) {
        in[i].assign(3000, 0);
        CHECK(g_ops->irecv(g_t, left, 77, in[i].data(), in[i].size(), &rr[i]) >= 0);
    }
    for (int i = 0; i < kMessages; ++i) {
        CHECK(wait(sr[i]) == DTP_OK);
        CHECK(wait(rr[i]) == DTP_OK);
        CHECK(rr[i].bytes == size_of(i));
        bool same = true;
        for (size_t k = 0; k < size_of(i); ++k) same &= in[i][k] == pattern(left + i, k);
        CHECK(same);
    }
}

// Errors MPI reports: statuses of the requests with MPI's text, never an abort of the job
// (MPI_ERRORS_ARE_FATAL on any communicator would end every rank here).
void errors(int rank, int size) {
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    {   // A message larger than the receive: DTP_ERR_PROTOCOL on the receive.
        std::vector<uint8_t> big(100, 1), small(10);
        dt_transport_request_t s{}, r{};
        CHECK(g_ops->irecv(g_t, left, 99, small.data(), small.size(), &r) >= 0);
        CHECK(g_ops->isend(g_t, right, 99, big.data(), big.size(), &s) >= 0);
        g_error.clear();
        CHECK(wait(r) == DTP_ERR_PROTOCOL);
        CHECK(g_error.find("MPI_ERR_TRUNCATE") != std::string::npos);
        wait(s);
    }
    {   // A native broadcast whose ranks disagree on the count: the receivers' requests
        // fail inside Open MPI's schedule, which reports it on MPI_COMM_WORLD.
        std::vector<uint8_t> v(1000, 7);
        dt_transport_request_t r{};
        CHECK(g_ops->broadcast(g_t, v.data(), rank == 0 ? 1000 : 10, DTP_UINT8, 0, &r) >= 0);
        g_error.clear();
        int32_t st = wait(r);
        if (rank == 0) {
            CHECK(st == DTP_OK);
        } else {
            CHECK(st == DTP_ERR_PROTOCOL);
            CHECK(g_error.find("MPI_Ibcast") != std::string::npos &&
                  g_error.find("MPI_ERR_TRUNCATE") != std::string::npos);
        }
    }
    {   // The instance still works after the failed requests.
        dt_transport_request_t r{};
        CHECK(g_ops->barrier(g_t, &r) >= 0);
        CHECK(wait(r) == DTP_OK);
        uint8_t out = static_cast<uint8_t>(rank), in = 0xff;
        dt_transport_request_t s{}, q{};
        CHECK(g_ops->irecv(g_t, left, 100, &in, 1, &q) >= 0);
        CHECK(g_ops->isend(g_t, right, 100, &out, 1, &s) >= 0);
        CHECK(wait(s) == DTP_OK && wait(q) == DTP_OK && in == left);
    }
    // Abort fails what is pending and every later call.
    uint8_t byte = 0;
    dt_transport_request_t pending{}, later{};
    CHECK(g_ops->irecv(g_t, right, 1234, &byte, 1, &pending) == DTP_INPROGRESS);
    CHECK(g_ops->abort(g_t) == DTP_OK);
    CHECK(pending.status == DTP_ERR_ABORTED);
    CHECK(g_ops->isend(g_t, rank, 1, &byte, 1, &later) == DTP_ERR_ABORTED);
}

// Abort with a send in flight that Open MPI cannot cancel (it cancels no send): the abort
// lets it complete, so nothing is left to MPI and both ranks finalise it. Rank 1 posts its
// receive before the barrier, so the send completes as soon as both progress.
void abort_while_sending(int rank) {
    constexpr size_t kBytes = size_t(4) << 20; // far above the shared-memory eager limit
    static std::vector<uint8_t> message(kBytes); // MPI may read it after the abort
    for (size_t i = 0; i < kBytes; ++i) message[i] = pattern(3, i);
    dt_transport_request_t r{}, b{};
    if (rank == 1) CHECK(g_ops->irecv(g_t, 0, 77, message.data(), kBytes, &r) >= 0);
    CHECK(g_ops->barrier(g_t, &b) >= 0);
    CHECK(wait(b) == DTP_OK);
    if (rank == 0) {
        CHECK(g_ops->isend(g_t, 1, 77, message.data(), kBytes, &r) == DTP_INPROGRESS);
        CHECK(g_ops->abort(g_t) == DTP_OK);
        CHECK(r.status == DTP_ERR_ABORTED);
    } else if (rank == 1) {
        CHECK(wait(r) == DTP_OK && r.bytes == kBytes);
        bool whole = true;
        for (size_t i = 0; i < kBytes; ++i) whole = whole && message[i] == pattern(3, i);
        CHECK(whole);
    }
}

uint16_t bf16(float f) {
    uint32_t b;
    std::memcpy(&b, &f, 4);
    return static_cast<uint16_t>((b + 0x7fff + ((b >> 16) & 1)) >> 16);
}
float from_bf16(uint16_t h) {
    uint32_t b = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &b, 4);
    return f;
}
uint16_t f16(float f) {
    _Float16 h = static_cast<_Float16>(f);
    uint16_t b;
    std::memcpy(&b, &h, 2);
    return b;
}
float from_f16(uint16_t b) {
    _Float16 h;
    std::memcpy(&h, &b, 2);
    return static_cast<float>(h);
}

void collectives(int rank, int size) {
    const size_t n = 1000;
    dt_transport_request_t r{};
    {   // float32 sum, out of place; then int32 max in place.
        std::vector<float> a(n), b(n);
        for (size_t i = 0; i < n; ++i) a[i] = static_cast<float>(rank + i);
        CHECK(g_ops->allreduce(g_t, a.data(), b.data(), n, DTP_FLOAT32, DTP_SUM, &r) >= 0);
        CHECK(wait(r) == DTP_OK);
        float want0 = size * (size - 1) / 2.0f;
        CHECK(b[0] == want0 && b[n - 1] == want0 + size * float(n - 1));
        std::vector<int32_t> c(n, rank * 3);
        CHECK(g_ops->allreduce(g_t, c.data(), c.data(), n, DTP_INT32, DTP_MAX, &r) >= 0);
        CHECK(wait(r) == DTP_OK);
        CHECK(c[0] == (size - 1) * 3 && c[n - 1] == (size - 1) * 3);
    }
    {   // float16 sum and bfloat16 min: the plugin's user operators.
        std::vector<uint16_t> h(n, f16(0.5f + rank)), g(n, bf16(2.0f - rank));
        CHECK(g_ops->allreduce(g_t, h.data(), h.data(), n, DTP_FLOAT16, DTP_SUM, &r) >= 0);
        CHECK(wait(r) == DTP_OK);
        CHECK(from_f16(h[7]) == 0.5f * size + size * (size - 1) / 2.0f);
        CHECK(g_ops->allreduce(g_t, g.data(), g.data(), n, DTP_BFLOAT16, DTP_MIN, &r) >= 0);
        CHECK(wait(r) == DTP_OK);
        CHECK(from_bf16(g[3]) == 2.0f - (size - 1));
    }
    {   // avg is the core's (sum, then divide by the ranks that took part): declined.
        std::vector<float> a(n, 1.0f);
        r.status = 12345;
        CHECK(g_ops->allreduce(g_t, a.data(), a.data(), n, DTP_FLOAT32, DTP_AVG, &r) ==
              DTP_ERR_UNSUPPORTED);
    }
    {   // broadcast from the last rank; allgather in place; reduce_scatter; alltoall.
        std::vector<int64_t> v(n, rank == size - 1 ? 42 : -1);
        CHECK(g_ops->broadcast(g_t, v.data(), n, DTP_INT64, size - 1, &r) >= 0);
        CHECK(wait(r) == DTP_OK);
        CHECK(v[0] == 42 && v[n - 1] == 42);
        std::vector<int32_t> all(n * size, -1);
        for (size_t i = 0; i < n; ++i) all[rank * n + i] = rank;
        CHECK(g_ops->allgather(g_t, all.data() + rank * n, all.data(), n, DTP_INT32, &r) >= 0);
        CHECK(wait(r) == DTP_OK);
        for (int k = 0; k < size; ++k) CHECK(all[k * n] == k && all[k * n + n - 1] == k);
        std::vector<double> rs_in(n * size, 1.0), rs_out(n);
        CHECK(g_ops->reduce_scatter(g_t, rs_in.data(), rs_out.data(), n, DTP_FLOAT64, DTP_SUM,
                                    &r) >= 0);
        CHECK(wait(r) == DTP_OK);
        CHECK(rs_out[0] == size && rs_out[n - 1] == size);
        std::vector<uint8_t> a2a_in(n * size), a2a_out(n * size);
        for (int k = 0; k < size; ++k)
            std::memset(a2a_in.data() + k * n, rank * 10 + k, n);
        CHECK(g_ops->alltoall(g_t, a2a_in.data(), a2a_out.data(), n, DTP_UINT8, &r) >= 0);
        CHECK(wait(r) == DTP_OK);
        for (int k = 0; k < size; ++k) CHECK(a2a_out[k * n] == k * 10 + rank);
        CHECK(g_ops->barrier(g_t, &r) >= 0);
        CHECK(wait(r) == DTP_OK);
    }
}

} // namespace

int main(int argc, char **argv) {
    bool decline = argc > 1 && std::strcmp(argv[1], "--decline") == 0;
    bool with_errors = argc > 1 && std::strcmp(argv[1], "--errors") == 0;
    bool abort_sending = argc > 1 && std::strcmp(argv[1], "--abort-sending") == 0;
    void *h = dlopen(MPI_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
        std::fprintf(stderr, "dlopen %s: %s\n", MPI_PLUGIN_PATH, dlerror());
        return 1;
    }
    auto negotiate = reinterpret_cast<dt_plugin_negotiate_fn>(dlsym(h, DT_PLUGIN_ENTRY_NAME));
    dt_plugin_offer_t offer{sizeof(offer), DT_PLUGIN_NEGOTIATION_VERSION, 3, 1, &kServices};
    dt_plugin_answer_t answer{};
    answer.struct_size = sizeof(answer);
    answer.abi_version = DT_PLUGIN_NEGOTIATION_VERSION;
    int32_t rc = negotiate(&offer, &answer);
    if (decline) {
        CHECK(rc == DTP_ERR_UNSUPPORTED);
        CHECK(answer.decline_reason != nullptr &&
              std::strstr(answer.decline_reason, "not started by mpirun/mpiexec") != nullptr &&
              std::strstr(answer.decline_reason, "choose tcp") != nullptr);
        std::printf("mpi_plugin_test: %s decline checks=%d failed=%d\n",
                    g_failed ? "FAIL" : "PASS", g_checks, g_failed);
        return g_failed ? 1 : 0;
    }
    CHECK(rc == DTP_OK);
    if (rc != DTP_OK) return 1;
    g_ops = static_cast<const dt_transport_v3_t *>(answer.ops);
    CHECK(answer.ops_version == DT_TRANSPORT_VERSION_3);
    CHECK(g_ops->allreduce != nullptr && g_ops->barrier != nullptr && g_ops->abort != nullptr);
    CHECK(g_ops->query != nullptr);

    const char *r = std::getenv("OMPI_COMM_WORLD_RANK");
    const char *s = std::getenv("OMPI_COMM_WORLD_SIZE");
    int rank = r ? std::atoi(r) : 0, size = s ? std::atoi(s) : 1;
    g_rank = rank;
    // The core's rank must be MPI's: a wrong one is refused before anything is set up.
    dt_transport_init_args_t args{};
    args.struct_size = sizeof(args);
    args.abi_version = DT_TRANSPORT_VERSION;
    args.rank = (rank + 1) % size;
    args.size = size;
    args.local_size = size;
    args.timeout_ms = 30000;
    args.services = &kServices;
    if (size > 1) {
        CHECK(g_ops->init(&args, &g_t) == DTP_ERR_INVALID_CONFIG);
        CHECK(g_error.find("MPI says rank") != std::string::npos);
    }
    args.rank = rank;
    rc = g_ops->init(&args, &g_t);
    CHECK(rc == DTP_OK);
    if (rc != DTP_OK) return 1;

    // What it accepts: host memory everywhere, and it carries control traffic.
    dt_transport_caps_t caps{};
    caps.struct_size = sizeof(caps);
    caps.abi_version = DT_TRANSPORT_VERSION;
    CHECK(g_ops->query(g_t, &caps) == DTP_OK);
    CHECK(caps.p2p_memory == DT_TRANSPORT_MEMORY_HOST);
    CHECK(caps.native_memory == DT_TRANSPORT_MEMORY_HOST);
    CHECK(caps.flags == DT_TRANSPORT_CAP_CONTROL);

    if (with_errors || abort_sending) {
        CHECK(size > 1);
        if (size > 1 && with_errors) errors(rank, size);
        if (size > 1 && abort_sending) abort_while_sending(rank);
    } else {
        point_to_point(rank, size);
        collectives(rank, size);
    }
    CHECK(g_ops->finalize(g_t) == DTP_OK);

    std::printf("mpi_plugin_test: %s rank=%d size=%d checks=%d failed=%d\n",
                g_failed ? "FAIL" : "PASS", rank, size, g_checks, g_failed);
    return g_failed ? 1 : 0;
}
