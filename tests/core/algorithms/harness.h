/* SPDX-License-Identifier: Apache-2.0 */
// Runs one function per rank on its own thread, each with a Comm over a MemFabric
// transport, and collects what every rank threw.
#pragma once

#include "algorithms/comm.h"
#include "mem_transport.h"

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace dt::test {

struct RankOutcome {
    dt_status_t status = DT_OK;
    std::string message;
};

struct RunOptions {
    std::chrono::milliseconds timeout{20000}; // deadline of each rank's Comm
    MemFabric *fabric = nullptr;              // null: a fresh one
    const char *collective = "test";
};

std::vector<RankOutcome> run_ranks(int size, const std::function<void(algo::Comm &)> &fn,
                                   const RunOptions &opts = {});

// A gtest failure naming every rank that did not return normally.
void expect_all_ok(const std::vector<RankOutcome> &outcomes);

} // namespace dt::test
