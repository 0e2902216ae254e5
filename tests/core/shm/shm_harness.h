/* SPDX-License-Identifier: Apache-2.0 */
// Test harness for core/shm: n "ranks" as threads of this process, each with its own
// store client and Domain over one store server; or as forked processes (see
// shm_process_test.cc). Teams are built over all ranks or a subset, with tags counted
// the same way on every rank.
#pragma once

#include "bootstrap/store.h"
#include "shm/collectives.h"
#include "shm/domain.h"

#include <disttrain/disttrain.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace dt::shm::testing {

inline const std::string kToken = "shm-test-token";

// One rank's state in a threaded test.
struct Rank {
    int rank = 0;
    int size = 1;
    std::unique_ptr<bootstrap::StoreClient> store;
    std::unique_ptr<Domain> domain;
    // With ThreadOptions::staging_twin: a second domain over the same ranks with
    // single-copy reads off, to compare the paths bit for bit.
    std::unique_ptr<Domain> twin;
    uint64_t next_tag = 1;

    // A Team of the given local indices (all ranks when empty) for the next call, on
    // `on` (default: domain).
    Team team(const std::vector<int> &members = {},
              std::chrono::milliseconds timeout = std::chrono::seconds(30),
              Domain *on = nullptr);
    std::vector<int> all;
    std::vector<int> current; // the members of the last team
};

struct ThreadOptions {
    size_t data_bytes = 64 * 1024;
    CmaOptions cma; // of Rank::domain
    TuningOverrides tuning;
    bool staging_twin = false;
};

// Runs body(rank) on n threads, each with a Domain of data_bytes staging; returns the
// error messages (empty string: no error) per rank.
std::vector<std::string> run_threads(int n, size_t data_bytes,
                                     const std::function<void(Rank &)> &body);
std::vector<std::string> run_threads(int n, const ThreadOptions &options,
                                     const std::function<void(Rank &)> &body);

// Deterministic test values that reduce exactly in every dtype (small integers).
double value_of(int rank, size_t i, dt_reduce_op_t op);
void fill(void *buf, size_t count, dt_dtype_t dtype, int rank, size_t offset,
          dt_reduce_op_t op);
// Element i of buf as a double.
double read(const void *buf, size_t i, dt_dtype_t dtype);
// Expected op-reduction over ranks of element i (members: the ranks taking part).
double expected(const std::vector<int> &members, size_t i, dt_reduce_op_t op);

// Values whose reductions round (floats in [-2, 2) with full mantissas; products near 1;
// integers of any size), the same for a given seed: for comparing two paths bit for bit.
void fill_random(void *buf, size_t count, dt_dtype_t dtype, dt_reduce_op_t op,
                 uint64_t seed);

// The dtypes and ops the allreduce tests cover.
inline constexpr dt_dtype_t kAllDtypes[] = {DT_FLOAT32, DT_FLOAT64, DT_FLOAT16, DT_BFLOAT16,
                                            DT_INT8,    DT_UINT8,   DT_INT32,   DT_INT64};
inline constexpr dt_reduce_op_t kAllOps[] = {DT_SUM, DT_PROD, DT_MIN, DT_MAX};

} // namespace dt::shm::testing
