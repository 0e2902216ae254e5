// SPDX-License-Identifier: Apache-2.0
// Conformance suite of the collectives, through the public API only. Every rank runs the
// same plan: each collective x dtype x op x size (x in place, x root), blocking and async
// (all variants of a group in flight at once), and compares every output element (plus
// guard elements behind it) with a locally computed reference.
//
//   disttrainrun -np 4 dt_conformance [--no-large] [--verbose] [--device] [--spoil]
// --device runs every call on device buffers of the memory provider DISTTRAIN_MEMORY
// names (the fake device in CI, cuda on a GPU), checked through copies back to the host.
// --spoil checks the checker: the last rank flips one element of every result before
// comparing it, so each of its checks must fail.
// Exit status: 0 when every rank matched, 1 on a mismatch or a failed call, 2 on bad flags.
#include "conf_cases.h"

#include <disttrain/disttrain.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <vector>

namespace dt::conformance {
namespace {

constexpr dt_dtype_t kDtypes[] = {DT_FLOAT32, DT_FLOAT64, DT_FLOAT16, DT_BFLOAT16,
                                  DT_INT8,    DT_UINT8,   DT_INT32,   DT_INT64};
constexpr dt_reduce_op_t kOps[] = {DT_SUM, DT_AVG, DT_MIN, DT_MAX, DT_PROD};
// Empty, single, small odd, odd, and not a multiple of a 64 KiB chunk in any dtype.
constexpr size_t kCounts[] = {0, 1, 7, 1001, 100003};
constexpr size_t kLargeAllreduce = size_t{16} << 20; // 64 MiB of float32
constexpr size_t kLargeAllgather = size_t{1} << 19;  // 2 MiB per rank of float32
constexpr size_t kReportLimit = 10;                  // mismatches described per rank

struct Settings {
    bool large = true;
    bool verbose = false;
    bool device = false;
    bool spoil = false; // the last rank spoils every result it checks (tests the checker)
};

class Suite {
public:
    Suite(dt_context_h ctx, int rank, int ranks, Settings settings,
          const testing::DeviceMemory *device)
        : ctx_(ctx), rank_(rank), ranks_(ranks), settings_(settings), device_(device)
    {
    }

    // Runs the variants of one (collective, dtype, count) blocking, one after another,
    // then all at once asynchronously; the second run reuses the first's buffers and
    // references. Returns false after a call failed (the job cannot go on).
    bool shape(Kind kind, dt_dtype_t dtype, size_t count, bool only_sum_out_of_place = false)
    {
        images_.clear();
        return group(kind, dtype, count, false, only_sum_out_of_place) &&
               group(kind, dtype, count, true, only_sum_out_of_place);
    }

    // Builds the variants of one (collective, dtype, count) and runs them blocking or all
    // at once asynchronously. Returns false after a call failed.
    bool group(Kind kind, dt_dtype_t dtype, size_t count, bool async,
               bool only_sum_out_of_place = false)
    {
        std::vector<Case> cases;
        auto add = [&](dt_reduce_op_t op, bool inplace, int root) {
            cases.emplace_back(kind, dtype, op, count, inplace, root, async, rank_, ranks_,
                               device_);
        };
        switch (kind) {
        case Kind::allreduce:
            for (dt_reduce_op_t op : kOps)
                for (bool inplace : {false, true})
                    if (!only_sum_out_of_place || (op == DT_SUM && inplace == async))
                        add(op, inplace, 0);
            break;
        case Kind::reduce_scatter:
            for (dt_reduce_op_t op : kOps)
                add(op, false, 0);
            break;
        case Kind::broadcast:
            // Every root for small jobs; the first, a middle and the last rank otherwise.
            for (int root = 0; root < ranks_; ++root)
                if (ranks_ <= 4 || root == 0 || root == ranks_ / 2 || root == ranks_ - 1)
                    add(DT_SUM, true, root);
            break;
        case Kind::allgather:
            for (bool inplace : {false, true})
                if (!only_sum_out_of_place || !inplace)
                    add(DT_SUM, inplace, 0);
            break;
        case Kind::alltoall:
        case Kind::alltoallv:
            add(DT_SUM, false, 0);
            break;
        case Kind::allgatherv:
            for (bool inplace : {false, true})
                add(DT_SUM, inplace, 0);
            break;
        case Kind::barrier:
            for (int i = 0; i < 3; ++i)
                add(DT_SUM, false, i); // the root field numbers them
            break;
        }
        // Only the large shapes run one variant a side, each with another placement:
        // their prepared inputs never run again, and keeping them would only cost copies.
        const bool keep_inputs = !only_sum_out_of_place;
        return async ? run_async(cases, keep_inputs) : run_blocking(cases, keep_inputs);
    }

    uint64_t cases() const { return cases_; }
    uint64_t failed_cases() const { return failed_cases_; }
    const std::vector<Mismatch> &mismatches() const { return mismatches_; }

private:
    bool run_blocking(std::vector<Case> &cases, bool keep_inputs)
    {
        for (Case &c : cases) {
            c.prepare(images_, keep_inputs);
            if (!ok(c, c.launch(ctx_), "returned"))
                return false;
            check(c);
        }
        return true;
    }

    bool run_async(std::vector<Case> &cases, bool keep_inputs)
    {
        for (Case &c : cases) {
            c.prepare(images_, keep_inputs);
            if (!ok(c, c.launch(ctx_), "returned"))
                return false;
        }
        for (Case &c : cases)
            if (!ok(c, dt_request_wait(c.request(), -1), "completed with"))
                return false;
        for (Case &c : cases)
            check(c);
        return true;
    }

    bool ok(const Case &c, dt_status_t status, const char *verb)
    {
        if (status == DT_OK)
            return true;
        std::fprintf(stderr, "dt_conformance: rank %d: %s %s %s: %s\n", rank_,
                     c.description().c_str(), verb, dt_status_string(status), dt_last_error());
        return false;
    }

    void check(Case &c)
    {
        ++cases_;
        if (settings_.spoil && rank_ == ranks_ - 1)
            c.spoil_result();
        const uint64_t wrong = c.verify(mismatches_, kReportLimit, images_);
        failed_cases_ += wrong ? 1 : 0;
        if (settings_.verbose && rank_ == 0)
            std::printf("  %-60s %s\n", c.description().c_str(), wrong ? "WRONG" : "ok");
    }

    dt_context_h ctx_;
    int rank_, ranks_;
    Settings settings_;
    const testing::DeviceMemory *device_;
    uint64_t cases_ = 0, failed_cases_ = 0;
    std::vector<Mismatch> mismatches_;
    Images images_; // of the shape running now
};

bool run_plan(Suite &suite, const Settings &settings)
{
    constexpr Kind kKinds[] = {Kind::allreduce, Kind::reduce_scatter, Kind::broadcast,
                               Kind::allgather, Kind::alltoall, Kind::allgatherv,
                               Kind::alltoallv};
    for (bool async : {false, true})
        if (!suite.group(Kind::barrier, DT_FLOAT32, 0, async))
            return false;
    for (Kind kind : kKinds)
        for (dt_dtype_t dtype : kDtypes)
            for (size_t count : kCounts)
                if (!suite.shape(kind, dtype, count))
                    return false;
    return !settings.large ||
           (suite.shape(Kind::allreduce, DT_FLOAT32, kLargeAllreduce, true) &&
            suite.shape(Kind::allgather, DT_FLOAT32, kLargeAllgather, true));
}

int run(const Settings &settings)
{
    const auto start = std::chrono::steady_clock::now();
    dt_context_h ctx = nullptr;
    dt_status_t status = dt_context_create(nullptr, &ctx);
    if (status != DT_OK) {
        std::fprintf(stderr, "dt_conformance: dt_context_create: %s: %s\n",
                     dt_status_string(status), dt_last_error());
        return 1;
    }
    int rank = 0, ranks = 0;
    const char *transport = "?";
    dt_context_rank(ctx, &rank);
    dt_context_size(ctx, &ranks);
    dt_context_transport(ctx, &transport);

    std::unique_ptr<testing::DeviceMemory> device;
    if (settings.device) {
        try {
            device = std::make_unique<testing::DeviceMemory>();
        } catch (const std::exception &e) {
            std::fprintf(stderr, "dt_conformance: --device: %s\n", e.what());
            dt_context_destroy(ctx);
            return 1;
        }
    }
    Suite suite(ctx, rank, ranks, settings, device.get());
    if (!run_plan(suite, settings)) {
        // Peers may wait in a collective this rank will never join: abort wakes them.
        dt_context_abort(ctx);
        dt_context_destroy(ctx);
        return 1;
    }
    for (const Mismatch &m : suite.mismatches())
        std::fprintf(stderr, "dt_conformance: MISMATCH %s: rank %d index %zu got %g "
                             "expected %g\n",
                     m.what.c_str(), m.rank, m.index, m.got, m.expected);

    int64_t totals[2] = {static_cast<int64_t>(suite.cases()),
                         static_cast<int64_t>(suite.failed_cases())};
    status = dt_allreduce(ctx, "conformance totals", totals, totals, 2, DT_INT64, DT_SUM);
    if (status != DT_OK) {
        std::fprintf(stderr, "dt_conformance: rank %d: totals allreduce: %s: %s\n", rank,
                     dt_status_string(status), dt_last_error());
        dt_context_destroy(ctx);
        return 1;
    }
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    if (rank == 0)
        std::printf("dt_conformance: %s ranks=%d transport=%s memory=%s checks=%" PRId64
                    " failed=%" PRId64 " time=%.1fs\n",
                    totals[1] ? "FAIL" : "PASS", ranks, transport,
                    device ? device->name().c_str() : "host", totals[0], totals[1],
                    elapsed.count());
    std::fflush(stdout);
    status = dt_context_destroy(ctx);
    if (status != DT_OK) {
        std::fprintf(stderr, "dt_conformance: rank %d: dt_context_destroy: %s: %s\n", rank,
                     dt_status_string(status), dt_last_error());
        return 1;
    }
    return totals[1] ? 1 : 0;
}

} // namespace
} // namespace dt::conformance

int main(int argc, char **argv)
{
    dt::conformance::Settings settings;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--no-large") == 0) {
            settings.large = false;
        } else if (std::strcmp(argv[i], "--verbose") == 0) {
            settings.verbose = true;
        } else if (std::strcmp(argv[i], "--device") == 0) {
            settings.device = true;
        } else if (std::strcmp(argv[i], "--spoil") == 0) {
            settings.spoil = true;
        } else {
            std::fprintf(stderr, "dt_conformance: unknown argument '%s'; accepted: "
                                 "--no-large (skip the 64 MiB cases), --verbose, --device "
                                 "(device buffers of DISTTRAIN_MEMORY's provider), --spoil "
                                 "(the last rank spoils every result: every check of it "
                                 "must fail)\n", argv[i]);
            return 2;
        }
    }
    return dt::conformance::run(settings);
}
