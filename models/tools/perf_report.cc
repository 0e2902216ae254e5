// SPDX-License-Identifier: Apache-2.0
#include "perf_report.h"

#include <disttrain/disttrain.h>

#include <cstdio>
#include <utility>

namespace dt::perf {

namespace {

const char *root_text(const Options &o, char (&buf)[16])
{
    if (o.collective != Collective::broadcast)
        return "-1";
    std::snprintf(buf, sizeof buf, "%d", o.root);
    return buf;
}

} // namespace

Report::Report(RunInfo info) : info_(std::move(info)) {}

void Report::header()
{
    const Options &o = *info_.options;
    switch (o.format) {
    case Format::table:
        std::printf("# disttrain-perf: %s, %d ranks, transport %s, libdisttrain %s\n"
                    "# %s, %s, %d iterations (%d warm-up), %s, %s, %s\n",
                    collective_name(o.collective), info_.ranks, info_.transport.c_str(),
                    info_.version.c_str(), dt_dtype_name(o.dtype), dt_reduce_op_name(o.op),
                    o.iters, o.warmup, o.inplace ? "in place" : "out of place",
                    o.async ? "async" : "blocking",
                    o.ordered ? "ordered (no negotiation)" : "negotiated");
        std::printf("#%11s %12s %9s %6s %5s %11s %12s %12s %7s\n", "size", "count", "type",
                    "redop", "root", "time(us)", "algbw(GB/s)", "busbw(GB/s)", "#wrong");
        break;
    case Format::csv:
        std::printf("# disttrain-perf ranks=%d transport=%s version=%s\n", info_.ranks,
                    info_.transport.c_str(), info_.version.c_str());
        std::printf("collective,size,count,type,redop,root,time_us,algbw_gbps,busbw_gbps,"
                    "wrong\n");
        break;
    case Format::json:
        break;
    }
    std::fflush(stdout);
}

void Report::row(const Row &r)
{
    const Options &o = *info_.options;
    char root[16];
    rows_.push_back(r);
    switch (o.format) {
    case Format::table:
        std::printf("%12zu %12zu %9s %6s %5s %11.2f %12.3f %12.3f %7llu\n", r.bytes, r.count,
                    dt_dtype_name(o.dtype), dt_reduce_op_name(o.op), root_text(o, root),
                    r.time_us, r.algbw_gbps, r.busbw_gbps,
                    static_cast<unsigned long long>(r.wrong));
        break;
    case Format::csv:
        std::printf("%s,%zu,%zu,%s,%s,%s,%.3f,%.4f,%.4f,%llu\n", collective_name(o.collective),
                    r.bytes, r.count, dt_dtype_name(o.dtype), dt_reduce_op_name(o.op),
                    root_text(o, root), r.time_us, r.algbw_gbps, r.busbw_gbps,
                    static_cast<unsigned long long>(r.wrong));
        break;
    case Format::json:
        break;
    }
    std::fflush(stdout);
}

void Report::footer()
{
    const Options &o = *info_.options;
    double busbw_sum = 0;
    unsigned long long wrong = 0;
    for (const Row &r : rows_) {
        busbw_sum += r.busbw_gbps;
        wrong += r.wrong;
    }
    const double busbw_avg = rows_.empty() ? 0.0 : busbw_sum / static_cast<double>(rows_.size());
    if (o.format == Format::table) {
        std::printf("# Wrong values: %llu\n# Avg bus bandwidth: %.3f GB/s\n", wrong, busbw_avg);
    } else if (o.format == Format::json) {
        char root[16];
        std::printf("{\"tool\": \"disttrain-perf\", \"version\": \"%s\", \"transport\": \"%s\", "
                    "\"ranks\": %d, \"collective\": \"%s\", \"type\": \"%s\", \"redop\": \"%s\", "
                    "\"root\": %s, \"inplace\": %s, \"async\": %s, \"iters\": %d, "
                    "\"warmup\": %d, \"wrong\": %llu, \"avg_busbw_gbps\": %.4f, \"rows\": [",
                    info_.version.c_str(), info_.transport.c_str(), info_.ranks,
                    collective_name(o.collective), dt_dtype_name(o.dtype),
                    dt_reduce_op_name(o.op), root_text(o, root), o.inplace ? "true" : "false",
                    o.async ? "true" : "false", o.iters, o.warmup, wrong, busbw_avg);
        for (size_t i = 0; i < rows_.size(); ++i) {
            const Row &r = rows_[i];
            std::printf("%s\n  {\"size\": %zu, \"count\": %zu, \"time_us\": %.3f, "
                        "\"algbw_gbps\": %.4f, \"busbw_gbps\": %.4f, \"wrong\": %llu}",
                        i ? "," : "", r.bytes, r.count, r.time_us, r.algbw_gbps, r.busbw_gbps,
                        static_cast<unsigned long long>(r.wrong));
        }
        std::printf("\n]}\n");
    }
    std::fflush(stdout);
}

} // namespace dt::perf
