// SPDX-License-Identifier: Apache-2.0
// disttrain-perf: measures libdisttrain collectives the way nccl-tests measures NCCL,
// then checks one more run against a locally computed result. Public API only.
//
//   disttrainrun -np 2 disttrain-perf -b 8 -e 64M -f 2 -d float -o sum -c allreduce
#include "perf_buffers.h"
#include "perf_collective.h"
#include "perf_data.h"
#include "perf_options.h"
#include "perf_report.h"

#include <disttrain/disttrain.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace dt::perf {
namespace {

// Operations kept in flight by -a 1; enough to let the engine fuse and pipeline.
constexpr size_t kMaxInFlight = 16;

void must(dt_status_t status, const std::string &what)
{
    if (status != DT_OK)
        throw std::runtime_error(what + " failed: " + dt_status_string(status) + ": " +
                                 dt_last_error());
}

struct ContextDeleter {
    void operator()(dt_context *ctx) const { dt_context_destroy(ctx); }
};
using Context = std::unique_ptr<dt_context, ContextDeleter>;

struct RequestDeleter {
    void operator()(dt_request *req) const { dt_request_free(req); }
};
using Request = std::unique_ptr<dt_request, RequestDeleter>;

class Bench {
public:
    Bench(const Options &opts, dt_context_h ctx, int rank, int ranks)
        : o_(opts), ctx_(ctx), rank_(rank), ranks_(ranks), elt_(dt_dtype_size(opts.dtype)),
          buffers_(max_bytes(true), max_bytes(false), opts.rotate_bytes)
    {
    }

    // Times one size and checks it; returns the row every rank agrees on.
    Row run_size(size_t requested_bytes)
    {
        shape_ = shape_for(o_.collective, requested_bytes, elt_, ranks_);
        const size_t sets = buffers_.configure(shape_.send_count * elt_, shape_.recv_count * elt_);
        window_ = o_.async ? std::min(sets, kMaxInFlight) : 1;
        names_.clear();
        for (size_t i = 0; i < window_; ++i)
            names_.push_back("perf." + std::string(collective_name(o_.collective)) + "." +
                             std::to_string(shape_.count) + "." + std::to_string(i));

        must(dt_barrier(ctx_, "perf.sync"), "dt_barrier");
        iterate(o_.warmup);
        must(dt_barrier(ctx_, "perf.sync"), "dt_barrier");
        const auto start = std::chrono::steady_clock::now();
        iterate(o_.iters);
        const std::chrono::duration<double, std::micro> elapsed =
            std::chrono::steady_clock::now() - start;

        // The slowest rank defines the collective's time.
        double time_us = elapsed.count() / o_.iters;
        must(dt_allreduce(ctx_, "perf.time", &time_us, &time_us, 1, DT_FLOAT64, DT_MAX),
             "dt_allreduce of the timings");
        int64_t wrong = o_.check ? static_cast<int64_t>(check()) : 0;
        must(dt_allreduce(ctx_, "perf.wrong", &wrong, &wrong, 1, DT_INT64, DT_SUM),
             "dt_allreduce of the wrong counts");

        const double algbw = time_us > 0 ? static_cast<double>(shape_.bytes) / time_us / 1e3 : 0;
        return {shape_.bytes, shape_.count, time_us, algbw,
                algbw * busbw_factor(o_.collective, ranks_), static_cast<uint64_t>(wrong)};
    }

    const Shape &shape() const { return shape_; }

private:
    size_t max_bytes(bool send) const
    {
        const Shape s = shape_for(o_.collective, o_.max_bytes, elt_, ranks_);
        if (send)
            return o_.inplace ? 0 : s.send_count * elt_;
        return s.recv_count * elt_;
    }

    Call call_for(size_t iteration) const
    {
        void *recv = buffers_.recv(iteration);
        const void *send = o_.inplace ? inplace_send(o_.collective, recv, shape_, elt_, rank_)
                                      : buffers_.send(iteration);
        return {ctx_, names_[iteration % window_].c_str(), o_.collective, send, recv, shape_,
                o_.dtype, o_.op, o_.root};
    }

    void iterate(int count)
    {
        std::deque<Request> in_flight;
        for (int k = 0; k < count; ++k, ++next_) {
            const Call call = call_for(next_);
            if (!o_.async) {
                must(launch(call, nullptr), call.name);
                continue;
            }
            if (in_flight.size() == window_) { // the oldest frees its buffer set and name
                must(dt_request_wait(in_flight.front().get(), -1), "dt_request_wait");
                in_flight.pop_front();
            }
            dt_request_h req = nullptr;
            must(launch(call, &req), call.name);
            in_flight.emplace_back(req);
        }
        for (auto &req : in_flight)
            must(dt_request_wait(req.get(), -1), "dt_request_wait");
    }

    uint64_t check()
    {
        const Call call = call_for(0);
        fill_for_check(call, o_.inplace, rank_, ranks_);
        if (o_.async) {
            dt_request_h req = nullptr;
            must(launch(call, &req), "check");
            Request owned(req);
            must(dt_request_wait(req, -1), "dt_request_wait");
        } else {
            must(launch(call, nullptr), "check");
        }
        return count_wrong(call, rank_, ranks_);
    }

    const Options &o_;
    dt_context_h ctx_;
    int rank_, ranks_;
    size_t elt_;
    RotatingBuffers buffers_;
    Shape shape_;
    size_t window_ = 1;
    size_t next_ = 0;
    std::vector<std::string> names_;
};

std::vector<size_t> sizes(const Options &o)
{
    if (o.collective == Collective::barrier)
        return {0};
    std::vector<size_t> out;
    for (size_t s = o.min_bytes; s <= o.max_bytes;) {
        out.push_back(s);
        if (s == 0)
            s = 1;
        else if (s > o.max_bytes / o.factor)
            break;
        else
            s *= o.factor;
    }
    return out;
}

int run(const Options &opts)
{
    dt_context_h raw = nullptr;
    dt_context_params_t params = {};
    params.field_mask = DT_CONTEXT_PARAM_FIELD_ORDERED;
    params.ordered = opts.ordered ? 1 : 0;
    must(dt_context_create(&params, &raw), "dt_context_create");
    Context ctx(raw);
    int rank = 0, ranks = 0;
    const char *transport = "";
    dt_version_t version{};
    must(dt_context_rank(raw, &rank), "dt_context_rank");
    must(dt_context_size(raw, &ranks), "dt_context_size");
    must(dt_context_transport(raw, &transport), "dt_context_transport");
    must(dt_get_version(&version), "dt_get_version");
    if (opts.root >= ranks) {
        if (rank == 0)
            std::fprintf(stderr, "disttrain-perf: --root %d is not a rank of this %d-rank "
                                 "job; use 0..%d\n", opts.root, ranks, ranks - 1);
        return 2;
    }

    Bench bench(opts, raw, rank, ranks);
    std::optional<Report> report;
    if (rank == 0) {
        report.emplace(RunInfo{ranks, transport, version.string, &opts});
        report->header();
    }
    uint64_t wrong = 0;
    size_t previous_bytes = ~size_t{0};
    for (size_t requested : sizes(opts)) {
        const Shape s = shape_for(opts.collective, requested, dt_dtype_size(opts.dtype), ranks);
        // Sizes that round to the same message (or to nothing) are measured once.
        if (s.bytes == previous_bytes || (s.count == 0 && requested != 0 &&
                                          opts.collective != Collective::barrier))
            continue;
        previous_bytes = s.bytes;
        const Row row = bench.run_size(requested);
        wrong += row.wrong;
        if (report)
            report->row(row);
    }
    if (report)
        report->footer();
    must(dt_barrier(raw, "perf.done"), "dt_barrier");
    return wrong ? 1 : 0;
}

} // namespace
} // namespace dt::perf

int main(int argc, char **argv)
{
    const dt::perf::ParseResult parsed = dt::perf::parse_options(argc, argv);
    if (!parsed.options)
        return parsed.exit_code;
    try {
        return dt::perf::run(*parsed.options);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "disttrain-perf: %s\n", e.what());
        return 1;
    }
}
