// SPDX-License-Identifier: Apache-2.0
#include "shm_harness.h"

#include "reduce/reduce.h"
#include "runtime/error.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <thread>

namespace dt::shm::testing {

Team Rank::team(const std::vector<int> &members, std::chrono::milliseconds timeout,
                Domain *on)
{
    current = members.empty() ? all : members;
    TeamArgs a;
    a.locals = current.data();
    a.size = static_cast<int>(current.size());
    a.rank = static_cast<int>(std::find(current.begin(), current.end(), rank) -
                              current.begin());
    a.tag = next_tag++;
    a.deadline = Clock::now() + timeout;
    a.what = "test collective";
    return Team(on != nullptr ? *on : *domain, a);
}

std::vector<std::string> run_threads(int n, size_t data_bytes,
                                     const std::function<void(Rank &)> &body)
{
    ThreadOptions o;
    o.data_bytes = data_bytes;
    return run_threads(n, o, body);
}

std::vector<std::string> run_threads(int n, const ThreadOptions &options,
                                     const std::function<void(Rank &)> &body)
{
    static int job = 0;
    bootstrap::StoreServer server("127.0.0.1:0", bootstrap::Auth(kToken));
    const std::string prefix = "job" + std::to_string(job++) + "/";
    std::vector<std::string> errors(n);
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r) {
        threads.emplace_back([&, r] {
            Rank rank;
            rank.rank = r;
            rank.size = n;
            for (int i = 0; i < n; ++i)
                rank.all.push_back(i);
            try {
                rank.store = std::make_unique<bootstrap::StoreClient>(
                    server.address(), bootstrap::Auth(kToken), std::chrono::seconds(30));
                DomainOptions opts;
                opts.rank = r;
                opts.size = n;
                opts.local_rank = r;
                opts.local_size = n;
                opts.data_bytes = options.data_bytes;
                opts.key_prefix = prefix;
                opts.timeout = std::chrono::seconds(30);
                opts.cma = options.cma;
                opts.tuning = options.tuning;
                rank.domain = std::make_unique<Domain>(*rank.store, opts);
                if (options.staging_twin) {
                    opts.key_prefix = prefix + "twin/";
                    opts.cma = CmaOptions{};
                    opts.cma.enabled = false;
                    rank.twin = std::make_unique<Domain>(*rank.store, opts);
                }
                body(rank);
            } catch (const std::exception &e) {
                errors[r] = e.what();
                if (errors[r].empty())
                    errors[r] = "(empty message)";
            }
        });
    }
    for (auto &t : threads)
        t.join();
    return errors;
}

double value_of(int rank, size_t i, dt_reduce_op_t op)
{
    // 1..3 for products (4 ranks: at most 81, exact even in int8 and bfloat16), else
    // 0..10 (4 ranks sum to at most 40), differing between ranks for min and max.
    if (op == DT_PROD)
        return static_cast<double>((rank * 7 + i * 3) % 3 + 1);
    return static_cast<double>((rank * 13 + i * 5) % 11);
}

namespace {

template <typename T>
void put(void *buf, size_t i, double v)
{
    static_cast<T *>(buf)[i] = static_cast<T>(v);
}

// Writes v as element i of a floating-point buffer; false for integer dtypes.
bool put_floating(void *buf, size_t i, double v, dt_dtype_t dtype)
{
    switch (dtype) {
    case DT_FLOAT32: put<float>(buf, i, v); return true;
    case DT_FLOAT64: put<double>(buf, i, v); return true;
    case DT_FLOAT16:
        static_cast<uint16_t *>(buf)[i] = reduce::float_to_half(static_cast<float>(v));
        return true;
    case DT_BFLOAT16:
        static_cast<uint16_t *>(buf)[i] =
            reduce::float_to_bfloat16(static_cast<float>(v));
        return true;
    default: return false;
    }
}

} // namespace

void fill(void *buf, size_t count, dt_dtype_t dtype, int rank, size_t offset,
          dt_reduce_op_t op)
{
    for (size_t i = 0; i < count; ++i) {
        double v = value_of(rank, offset + i, op);
        if (put_floating(buf, i, v, dtype))
            continue;
        switch (dtype) {
        case DT_INT8: put<int8_t>(buf, i, v); break;
        case DT_UINT8: put<uint8_t>(buf, i, v); break;
        case DT_INT32: put<int32_t>(buf, i, v); break;
        case DT_INT64: put<int64_t>(buf, i, v); break;
        default: throw Error(DT_ERR_INTERNAL, "fill: dtype");
        }
    }
}

void fill_random(void *buf, size_t count, dt_dtype_t dtype, dt_reduce_op_t op, uint64_t seed)
{
    std::mt19937_64 gen(seed);
    std::uniform_real_distribution<double> real(-2.0, 2.0);
    std::uniform_real_distribution<double> near_one(0.5, 1.5);
    for (size_t i = 0; i < count; ++i) {
        const double v = op == DT_PROD ? near_one(gen) : real(gen);
        const uint64_t bits = gen();
        if (put_floating(buf, i, v, dtype))
            continue;
        switch (dtype) {
        case DT_INT8: static_cast<uint8_t *>(buf)[i] = static_cast<uint8_t>(bits); break;
        case DT_UINT8: static_cast<uint8_t *>(buf)[i] = static_cast<uint8_t>(bits); break;
        case DT_INT32: static_cast<uint32_t *>(buf)[i] = static_cast<uint32_t>(bits); break;
        case DT_INT64: static_cast<uint64_t *>(buf)[i] = bits; break;
        default: throw Error(DT_ERR_INTERNAL, "fill_random: dtype");
        }
    }
}

double read(const void *buf, size_t i, dt_dtype_t dtype)
{
    switch (dtype) {
    case DT_FLOAT32: return static_cast<const float *>(buf)[i];
    case DT_FLOAT64: return static_cast<const double *>(buf)[i];
    case DT_FLOAT16: return reduce::half_to_float(static_cast<const uint16_t *>(buf)[i]);
    case DT_BFLOAT16:
        return reduce::bfloat16_to_float(static_cast<const uint16_t *>(buf)[i]);
    case DT_INT8: return static_cast<const int8_t *>(buf)[i];
    case DT_UINT8: return static_cast<const uint8_t *>(buf)[i];
    case DT_INT32: return static_cast<const int32_t *>(buf)[i];
    case DT_INT64: return static_cast<double>(static_cast<const int64_t *>(buf)[i]);
    default: throw Error(DT_ERR_INTERNAL, "read: dtype");
    }
}

double expected(const std::vector<int> &members, size_t i, dt_reduce_op_t op)
{
    double acc = op == DT_PROD ? 1 : op == DT_MIN ? 1e300 : op == DT_MAX ? -1e300 : 0;
    for (int r : members) {
        double v = value_of(r, i, op);
        switch (op) {
        case DT_PROD: acc *= v; break;
        case DT_MIN: acc = std::min(acc, v); break;
        case DT_MAX: acc = std::max(acc, v); break;
        default: acc += v; break;
        }
    }
    return acc;
}

} // namespace dt::shm::testing
