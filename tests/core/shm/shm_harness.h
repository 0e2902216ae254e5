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
    uint64_t next_tag = 1;

    // A Team of the given local indices (all ranks when empty) for the next call.
    Team team(const std::vector<int> &members = {},
              std::chrono::milliseconds timeout = std::chrono::seconds(30));
    std::vector<int> all;
    std::vector<int> current; // the members of the last team
};

// Runs body(rank) on n threads, each with a Domain of data_bytes staging; returns the
// error messages (empty string: no error) per rank.
std::vector<std::string> run_threads(int n, size_t data_bytes,
                                     const std::function<void(Rank &)> &body);

// Deterministic test values that reduce exactly in every dtype (small integers).
double value_of(int rank, size_t i, dt_reduce_op_t op);
void fill(void *buf, size_t count, dt_dtype_t dtype, int rank, size_t offset,
          dt_reduce_op_t op);
// Element i of buf as a double.
double read(const void *buf, size_t i, dt_dtype_t dtype);
// Expected op-reduction over ranks of element i (members: the ranks taking part).
double expected(const std::vector<int> &members, size_t i, dt_reduce_op_t op);

} // namespace dt::shm::testing
