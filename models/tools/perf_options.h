/* SPDX-License-Identifier: Apache-2.0 */
// Command line of disttrain-perf, in the style of nccl-tests (-b -e -f -n -w -o -d ...).
#pragma once

#include <disttrain/disttrain.h>

#include <cstddef>
#include <optional>
#include <string>

namespace dt::perf {

enum class Collective { allreduce, broadcast, allgather, reduce_scatter, alltoall, barrier };
enum class Format { table, csv, json };

struct Options {
    size_t min_bytes = 8;
    size_t max_bytes = size_t{64} << 20;
    size_t factor = 2;
    int iters = 20;
    int warmup = 5;
    dt_reduce_op_t op = DT_SUM;
    dt_dtype_t dtype = DT_FLOAT32;
    Collective collective = Collective::allreduce;
    int root = 0;
    bool inplace = false;
    bool async = false;
    bool check = true;
    bool ordered = true; // every rank the same order: no negotiation (as MPI, NCCL)
    Format format = Format::table;
    // Smallest working set the rotating buffers span, so data is not served from cache.
    size_t rotate_bytes = size_t{64} << 20;
};

// The outcome of parsing: options to run with, or an exit code (0 after --help, 2 after
// a bad flag, whose message has been printed to stderr).
struct ParseResult {
    std::optional<Options> options;
    int exit_code = 0;
};

ParseResult parse_options(int argc, char **argv);

// "64M" -> 67108864; K, M and G are powers of 1024. Throws std::invalid_argument.
size_t parse_bytes(const std::string &text);
// Accepts our names (float32, bfloat16) and nccl-tests' (float, half, double, bf16).
std::optional<dt_dtype_t> parse_dtype(const std::string &text);
std::optional<dt_reduce_op_t> parse_op(const std::string &text);
std::optional<Collective> parse_collective(const std::string &text);

const char *collective_name(Collective collective);

} // namespace dt::perf
