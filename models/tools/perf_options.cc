// SPDX-License-Identifier: Apache-2.0
#include "perf_options.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <iostream>
#include <stdexcept>
#include <utility>

namespace dt::perf {

namespace {

std::string normalise(std::string text)
{
    // "All_Reduce", "all-reduce" and "allreduce" name the same thing.
    std::string out;
    for (char c : text)
        if (c != '_' && c != '-')
            out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

template <typename T>
std::optional<T> lookup(const std::string &text,
                        std::initializer_list<std::pair<const char *, T>> table)
{
    const std::string key = normalise(text);
    for (const auto &[name, value] : table)
        if (key == name)
            return value;
    return std::nullopt;
}

// Turns a flag value into T or explains what is allowed.
template <typename T, typename Parser>
T convert(const std::string &flag, const std::string &text, Parser parse, const char *allowed)
{
    if (auto value = parse(text))
        return *value;
    throw CLI::ValidationError(flag, "'" + text + "' is not one of: " + allowed);
}

bool parse_bool(const std::string &flag, int value)
{
    if (value != 0 && value != 1)
        throw CLI::ValidationError(flag, "expects 0 or 1, got " + std::to_string(value));
    return value == 1;
}

} // namespace

size_t parse_bytes(const std::string &text)
{
    size_t pos = 0;
    unsigned long long value = 0;
    try {
        value = std::stoull(text, &pos);
    } catch (const std::exception &) {
        throw std::invalid_argument("'" + text + "' is not a byte count (e.g. 8, 64K, 128M, 1G)");
    }
    if (!text.empty() && text[0] == '-')
        throw std::invalid_argument("'" + text + "' is negative; byte counts are >= 0");
    std::string suffix = text.substr(pos);
    if (suffix.size() == 2 && (suffix[1] == 'B' || suffix[1] == 'b'))
        suffix.pop_back(); // "64MB"
    unsigned shift = 0;
    if (suffix == "K" || suffix == "k") shift = 10;
    else if (suffix == "M" || suffix == "m") shift = 20;
    else if (suffix == "G" || suffix == "g") shift = 30;
    else if (!suffix.empty())
        throw std::invalid_argument("'" + text + "' has an unknown suffix '" + suffix +
                                    "'; use K, M or G");
    if (value > (~0ull >> shift))
        throw std::invalid_argument("'" + text + "' is too large");
    return static_cast<size_t>(value << shift);
}

std::optional<dt_dtype_t> parse_dtype(const std::string &text)
{
    return lookup<dt_dtype_t>(text, {
        {"float", DT_FLOAT32}, {"float32", DT_FLOAT32}, {"fp32", DT_FLOAT32},
        {"f32", DT_FLOAT32}, {"double", DT_FLOAT64}, {"float64", DT_FLOAT64},
        {"fp64", DT_FLOAT64}, {"f64", DT_FLOAT64}, {"half", DT_FLOAT16},
        {"float16", DT_FLOAT16}, {"fp16", DT_FLOAT16}, {"f16", DT_FLOAT16},
        {"bfloat16", DT_BFLOAT16}, {"bf16", DT_BFLOAT16}, {"int8", DT_INT8},
        {"char", DT_INT8}, {"uint8", DT_UINT8}, {"int32", DT_INT32}, {"int", DT_INT32},
        {"int64", DT_INT64},
    });
}

std::optional<dt_reduce_op_t> parse_op(const std::string &text)
{
    return lookup<dt_reduce_op_t>(text, {
        {"sum", DT_SUM}, {"prod", DT_PROD}, {"min", DT_MIN}, {"max", DT_MAX},
        {"avg", DT_AVG},
    });
}

std::optional<Collective> parse_collective(const std::string &text)
{
    return lookup<Collective>(text, {
        {"allreduce", Collective::allreduce}, {"broadcast", Collective::broadcast},
        {"bcast", Collective::broadcast}, {"allgather", Collective::allgather},
        {"reducescatter", Collective::reduce_scatter}, {"alltoall", Collective::alltoall},
        {"barrier", Collective::barrier},
    });
}

const char *collective_name(Collective collective)
{
    switch (collective) {
    case Collective::allreduce: return "allreduce";
    case Collective::broadcast: return "broadcast";
    case Collective::allgather: return "allgather";
    case Collective::reduce_scatter: return "reduce_scatter";
    case Collective::alltoall: return "alltoall";
    case Collective::barrier: return "barrier";
    }
    return "unknown";
}

ParseResult parse_options(int argc, char **argv)
{
    Options opts;
    std::string min_bytes = "8", max_bytes = "64M", op = "sum", dtype = "float";
    std::string collective = "allreduce", rotate = "64M";
    int inplace = 0, async = 0, check = 1, ordered = 1;
    bool csv = false, json = false;

    CLI::App app{"disttrain-perf: bandwidth and latency of libdisttrain collectives.\n"
                 "Run it under disttrainrun (or mpirun); rank 0 prints one row per size."};
    app.add_option("-b,--minbytes", min_bytes, "smallest message (bytes, K/M/G suffix)")
        ->capture_default_str();
    app.add_option("-e,--maxbytes", max_bytes, "largest message (bytes, K/M/G suffix)")
        ->capture_default_str();
    app.add_option("-f,--stepfactor", opts.factor, "multiply the size by this each step")
        ->capture_default_str();
    app.add_option("-n,--iters", opts.iters, "timed iterations per size")
        ->capture_default_str();
    app.add_option("-w,--warmup_iters", opts.warmup, "untimed iterations per size")
        ->capture_default_str();
    app.add_option("-o,--op", op, "reduction: sum, prod, min, max, avg")
        ->capture_default_str();
    app.add_option("-d,--datatype", dtype,
                   "float, double, half, bfloat16, int8, uint8, int32, int64 "
                   "(or float32, float64, float16, bf16)")
        ->capture_default_str();
    app.add_option("-c,--collective", collective,
                   "allreduce, broadcast, allgather, reduce_scatter, alltoall, barrier")
        ->capture_default_str();
    app.add_option("-r,--root", opts.root, "root rank of broadcast")->capture_default_str();
    app.add_option("-i,--inplace", inplace, "1: in place (allreduce, allgather)")
        ->capture_default_str();
    app.add_option("-a,--async", async, "1: use the _async calls, several in flight")
        ->capture_default_str();
    app.add_option("--check", check, "1: verify results after the timed loop")
        ->capture_default_str();
    app.add_option("-O,--ordered", ordered,
                   "1: ranks call in the same order, as nccl-tests and MPI do, so the "
                   "engine skips negotiation (DISTTRAIN_ORDERED); 0: negotiate every call")
        ->capture_default_str();
    app.add_option("--rotate", rotate, "smallest working set of the rotating buffers")
        ->capture_default_str();
    auto *csv_flag = app.add_flag("--csv", csv, "print comma-separated values");
    app.add_flag("--json", json, "print one JSON document")->excludes(csv_flag);

    try {
        app.parse(argc, argv);
        opts.min_bytes = parse_bytes(min_bytes);
        opts.max_bytes = parse_bytes(max_bytes);
        opts.rotate_bytes = parse_bytes(rotate);
        opts.op = convert<dt_reduce_op_t>("--op", op, parse_op, "sum, prod, min, max, avg");
        opts.dtype = convert<dt_dtype_t>("--datatype", dtype, parse_dtype,
                                         "float, double, half, bfloat16, int8, uint8, "
                                         "int32, int64");
        opts.collective = convert<Collective>("--collective", collective, parse_collective,
                                              "allreduce, broadcast, allgather, "
                                              "reduce_scatter, alltoall, barrier");
        opts.inplace = parse_bool("--inplace", inplace);
        opts.async = parse_bool("--async", async);
        opts.check = parse_bool("--check", check);
        opts.ordered = parse_bool("--ordered", ordered);
        if (opts.min_bytes > opts.max_bytes)
            throw CLI::ValidationError("--minbytes", "is larger than --maxbytes (" +
                                       min_bytes + " > " + max_bytes + ")");
        if (opts.factor < 2)
            throw CLI::ValidationError("--stepfactor", "must be at least 2");
        if (opts.iters < 1 || opts.warmup < 0)
            throw CLI::ValidationError("--iters/--warmup_iters",
                                       "need iters >= 1 and warmup >= 0");
        if (opts.root < 0)
            throw CLI::ValidationError("--root", "must be >= 0");
        if (opts.inplace && (opts.collective == Collective::alltoall ||
                             opts.collective == Collective::reduce_scatter))
            throw CLI::ValidationError("--inplace", std::string(collective_name(
                                       opts.collective)) + " has no in-place form");
    } catch (const CLI::CallForHelp &e) {
        return {std::nullopt, app.exit(e)};
    } catch (const CLI::ParseError &e) {
        std::cerr << "disttrain-perf: " << e.what() << "\n(run with --help for usage)\n";
        return {std::nullopt, 2};
    } catch (const std::invalid_argument &e) {
        std::cerr << "disttrain-perf: " << e.what() << "\n";
        return {std::nullopt, 2};
    }
    opts.format = csv ? Format::csv : json ? Format::json : Format::table;
    return {opts, 0};
}

} // namespace dt::perf
