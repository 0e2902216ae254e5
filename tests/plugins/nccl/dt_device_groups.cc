// SPDX-License-Identifier: Apache-2.0
// Device collectives of a group and a batch of device allreduces, for the device
// transport (DISTTRAIN_DEVICE_TRANSPORT=nccl on the mocks in CI, a GPU elsewhere). Run by
// every rank of a job of 2 or more:
//
//   dt_device_groups group   a group of the first and last rank, listed last rank first
//                            (so group rank order differs from world order; with 3 or
//                            more ranks the others are outside it): allreduce SUM and
//                            AVG, allgather and broadcast on device buffers, checked
//   dt_device_groups batch   16 small device allreduces started together, then waited
//                            for: negotiated mode hands the engine one ready batch
//   dt_device_groups producer  device allreduces called while the last write of their
//                            input is still queued on the producer's stream, which the
//                            call names (dt_op_params_t.stream): one blocking call, one
//                            on a group's own communicator (2 ranks or more), and 4
//                            started together (a batch). Each must see the producer's
//                            write, not the stale values before it. Make the write slow
//                            (DISTTRAIN_MOCK_CUDA_COPY_DELAY_US, DISTTRAIN_FAKE_DEVICE_
//                            DELAY_US) so that a call that does not wait reads them.
//   dt_device_groups abort   (DISTTRAIN_ORDERED=1) rank 0's device allreduce is in
//                            flight on the device transport, waiting for rank 1, which
//                            joins 3 s late; rank 0 aborts its context after 0.3 s: the
//                            allreduce must fail within a second of the abort
//
// Prints "PASS <mode> rank R" and exits 0, or says what differed and exits 1.
#include "device_memory.h"

#include <disttrain/disttrain.h>

#include <chrono>
#include <cstdio>
#include <thread>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

namespace {

int failures = 0;

// Every call names its buffers device memory (the default is host memory).
const dt_op_params_t *device_params() {
    static dt_op_params_t p = [] {
        dt_op_params_t q{};
        q.field_mask = DT_OP_PARAM_FIELD_MEMORY_TYPE;
        q.memory_type = DT_MEMORY_DEVICE;
        return q;
    }();
    return &p;
}

void expect(bool ok, const std::string &what) {
    if (!ok) {
        std::fprintf(stderr, "dt_device_groups: %s\n", what.c_str());
        ++failures;
    }
}

bool ok(dt_status_t s, const char *call) {
    if (s == DT_OK) return true;
    std::fprintf(stderr, "dt_device_groups: %s: %s: %s\n", call, dt_status_string(s),
                 dt_last_error());
    ++failures;
    return false;
}

// A device buffer holding host values, and the copy back.
struct Buffer {
    const dt::testing::DeviceMemory &dev;
    size_t bytes;
    void *ptr;
    Buffer(const dt::testing::DeviceMemory &d, size_t n) : dev(d), bytes(n), ptr(d.alloc(n)) {}
    ~Buffer() { dev.free(ptr); }
    template <typename T> void put(const std::vector<T> &v) { dev.to_device(ptr, v.data(), bytes); }
    template <typename T> std::vector<T> get() const {
        std::vector<T> v(bytes / sizeof(T));
        dev.to_host(v.data(), ptr, bytes);
        return v;
    }
};

void run_group(dt_context_h ctx, const dt::testing::DeviceMemory &dev, int rank, int size) {
    const std::vector<int> members = {size - 1, 0};
    dt_context_h group = nullptr;
    if (!ok(dt_group_create(ctx, members.data(), 2, &group), "dt_group_create")) return;
    if (group == nullptr) return; // outside the group: nothing more to do
    int grank = -1;
    dt_context_rank(group, &grank);
    expect(grank == (rank == size - 1 ? 0 : 1), "group rank " + std::to_string(grank));
    const size_t n = 1000;
    Buffer in(dev, n * sizeof(float)), out(dev, n * sizeof(float));
    std::vector<float> mine(n);
    for (size_t i = 0; i < n; ++i) mine[i] = static_cast<float>(rank + 1) * 0.5f + i;
    in.put(mine);
    for (dt_reduce_op_t op : {DT_SUM, DT_AVG}) {
        if (!ok(dt_allreduce_ex(group, op == DT_SUM ? "g.sum" : "g.avg", in.ptr, out.ptr, n,
                                DT_FLOAT32, op, device_params()), "dt_allreduce_ex")) return;
        std::vector<float> got = out.get<float>();
        for (size_t i = 0; i < n; i += 97) {
            float want = static_cast<float>(size) * 0.5f + 0.5f + 2.0f * i; // ranks 0 and size-1
            if (op == DT_AVG) want /= 2;
            expect(got[i] == want, std::string("group ") + (op == DT_SUM ? "sum" : "avg") +
                   "[" + std::to_string(i) + "] = " + std::to_string(got[i]) + ", want " +
                   std::to_string(want));
        }
    }
    // Allgather: blocks in group rank order (the last world rank first).
    Buffer gathered(dev, 2 * n * sizeof(float));
    if (!ok(dt_allgather_ex(group, "g.gather", in.ptr, gathered.ptr, n, DT_FLOAT32,
                            device_params()), "dt_allgather_ex"))
        return;
    std::vector<float> all = gathered.get<float>();
    expect(all[0] == static_cast<float>(size) * 0.5f && all[n] == 0.5f,
           "group allgather order: " + std::to_string(all[0]) + ", " + std::to_string(all[n]));
    // Broadcast from group rank 0 (world rank size - 1).
    Buffer b(dev, n * sizeof(float));
    b.put(mine);
    if (!ok(dt_broadcast_ex(group, "g.bcast", b.ptr, n, DT_FLOAT32, 0, device_params()),
            "dt_broadcast_ex")) return;
    expect(b.get<float>()[3] == static_cast<float>(size) * 0.5f + 3, "group broadcast");
    dt_context_destroy(group);
}

void run_batch(dt_context_h ctx, const dt::testing::DeviceMemory &dev, int rank, int size) {
    const int k = 16;
    std::vector<std::unique_ptr<Buffer>> bufs;
    std::vector<dt_request_h> reqs(k, nullptr);
    for (int t = 0; t < k; ++t) {
        const size_t n = 64 + 8 * t;
        bufs.push_back(std::make_unique<Buffer>(dev, n * sizeof(int32_t)));
        bufs.back()->put(std::vector<int32_t>(n, (rank + 1) * (t + 1)));
    }
    for (int t = 0; t < k; ++t) {
        const std::string name = "batch." + std::to_string(t);
        if (!ok(dt_allreduce_async_ex(ctx, name.c_str(), bufs[t]->ptr, bufs[t]->ptr,
                                      bufs[t]->bytes / sizeof(int32_t), DT_INT32, DT_SUM,
                                      device_params(), &reqs[t]),
                "dt_allreduce_async_ex")) return;
    }
    for (int t = 0; t < k; ++t) {
        ok(dt_request_wait(reqs[t], 60000), "dt_request_wait");
        dt_request_free(reqs[t]);
        const int32_t want = (t + 1) * size * (size + 1) / 2;
        std::vector<int32_t> got = bufs[t]->get<int32_t>();
        expect(got.front() == want && got.back() == want,
               "batch." + std::to_string(t) + " = " + std::to_string(got.front()) + ", want " +
               std::to_string(want));
    }
}

// A device buffer holding stale values, whose fresh ones (this rank's number + 1) are
// written by a copy still queued on the producer's stream when the call is made.
struct Produced {
    Buffer in, out;
    std::vector<int32_t> fresh; // the copy's source: alive until the copy ran
    Produced(const dt::testing::DeviceMemory &dev, size_t n, int rank, void *stream)
        : in(dev, n * sizeof(int32_t)), out(dev, n * sizeof(int32_t)), fresh(n, rank + 1) {
        in.put(std::vector<int32_t>(n, -1000));
        out.put(std::vector<int32_t>(n, 0));
        dev.to_device_async(in.ptr, fresh.data(), in.bytes, stream);
    }
    void check(const std::string &name, int32_t want) const {
        std::vector<int32_t> got = out.get<int32_t>();
        expect(got.front() == want && got.back() == want,
               name + " = " + std::to_string(got.front()) + ", want " + std::to_string(want) +
               (got.front() < 0 ? " (it read the buffer before its producer wrote it)" : ""));
    }
};

void run_producer(dt_context_h ctx, const dt::testing::DeviceMemory &dev, int rank, int size) {
    void *stream = dev.stream_create();
    dt_op_params_t p{};
    p.field_mask = DT_OP_PARAM_FIELD_MEMORY_TYPE | DT_OP_PARAM_FIELD_STREAM;
    p.memory_type = DT_MEMORY_DEVICE;
    p.stream = stream; // as a user passes the stream its gradients were computed on
    const size_t n = 1024;
    const int32_t all = size * (size + 1) / 2;
    {
        Produced one(dev, n, rank, stream);
        if (ok(dt_allreduce_ex(ctx, "producer.one", one.in.ptr, one.out.ptr, n, DT_INT32, DT_SUM,
                               &p), "dt_allreduce_ex"))
            one.check("producer.one", all);
    }
    if (size >= 2) {
        const std::vector<int> members = {size - 1, 0};
        dt_context_h group = nullptr;
        if (ok(dt_group_create(ctx, members.data(), 2, &group), "dt_group_create") &&
            group != nullptr) {
            Produced g(dev, n, rank, stream);
            if (ok(dt_allreduce_ex(group, "producer.group", g.in.ptr, g.out.ptr, n, DT_INT32,
                                   DT_SUM, &p), "dt_allreduce_ex (group)"))
                g.check("producer.group", 1 + size);
            dt_context_destroy(group);
        }
    }
    const int k = 4;
    std::vector<std::unique_ptr<Produced>> batch;
    for (int t = 0; t < k; ++t) batch.push_back(std::make_unique<Produced>(dev, n, rank, stream));
    std::vector<dt_request_h> reqs(k, nullptr);
    for (int t = 0; t < k; ++t) {
        const std::string name = "producer.batch." + std::to_string(t);
        ok(dt_allreduce_async_ex(ctx, name.c_str(), batch[t]->in.ptr, batch[t]->out.ptr, n,
                                 DT_INT32, DT_SUM, &p, &reqs[t]), "dt_allreduce_async_ex");
    }
    for (int t = 0; t < k; ++t) {
        if (reqs[t] == nullptr) continue;
        if (ok(dt_request_wait(reqs[t], 60000), "dt_request_wait"))
            batch[t]->check("producer.batch." + std::to_string(t), all);
        dt_request_free(reqs[t]);
    }
    dev.stream_destroy(stream);
}

void run_abort(dt_context_h ctx, const dt::testing::DeviceMemory &dev, int rank) {
    const size_t n = 4096;
    Buffer b(dev, n * sizeof(float));
    b.put(std::vector<float>(n, 1.0f));
    if (rank != 0) {
        std::this_thread::sleep_for(std::chrono::seconds(3));
        dt_status_t s = dt_allreduce_ex(ctx, "aborted", b.ptr, b.ptr, n, DT_FLOAT32, DT_SUM,
                                        device_params());
        expect(s != DT_OK, "rank 1's allreduce succeeded although rank 0 aborted");
        return;
    }
    dt_request_h req = nullptr;
    if (!ok(dt_allreduce_async_ex(ctx, "aborted", b.ptr, b.ptr, n, DT_FLOAT32, DT_SUM,
                                  device_params(), &req), "dt_allreduce_async_ex")) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    auto aborted = std::chrono::steady_clock::now();
    ok(dt_context_abort(ctx), "dt_context_abort");
    dt_status_t s = dt_request_wait(req, 20000);
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - aborted).count();
    std::printf("abort: the allreduce returned %s %lld ms after dt_context_abort\n",
                dt_status_string(s), static_cast<long long>(ms));
    expect(s != DT_OK, "the aborted allreduce succeeded");
    expect(ms < 1000, "the aborted allreduce took " + std::to_string(ms) + " ms");
    dt_request_free(req);
}

} // namespace

int main(int argc, char **argv) {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode != "group" && mode != "batch" && mode != "producer" && mode != "abort") {
        std::fprintf(stderr, "usage: dt_device_groups group|batch|producer|abort\n");
        return 2;
    }
    dt_context_h ctx = nullptr;
    if (!ok(dt_context_create(nullptr, &ctx), "dt_context_create")) return 1;
    int rank = 0, size = 1;
    dt_context_rank(ctx, &rank);
    dt_context_size(ctx, &size);
    try {
        dt::testing::DeviceMemory dev;
        if (mode == "abort") {
            run_abort(ctx, dev, rank);
        } else {
            if (mode == "group") run_group(ctx, dev, rank, size);
            else if (mode == "producer") run_producer(ctx, dev, rank, size);
            else run_batch(ctx, dev, rank, size);
            // Negotiation needs every rank, members of the group or not, until all is done.
            ok(dt_barrier(ctx, "done"), "dt_barrier");
        }
    } catch (const std::exception &e) {
        std::fprintf(stderr, "dt_device_groups: %s\n", e.what());
        ++failures;
    }
    dt_status_t destroyed = dt_context_destroy(ctx);
    if (mode != "abort") ok(destroyed, "dt_context_destroy"); // an aborted one may say so
    if (failures == 0) std::printf("PASS %s rank %d\n", mode.c_str(), rank);
    return failures == 0 ? 0 : 1;
}
