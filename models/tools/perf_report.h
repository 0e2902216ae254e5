/* SPDX-License-Identifier: Apache-2.0 */
// Output of disttrain-perf: an nccl-tests style table, CSV or one JSON document.
// Only rank 0 creates a Report.
#pragma once

#include "perf_options.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dt::perf {

struct RunInfo {
    int ranks;
    std::string transport;
    std::string version;
    const Options *options;
};

struct Row {
    size_t bytes;
    size_t count;
    double time_us;
    double algbw_gbps;
    double busbw_gbps;
    uint64_t wrong;
};

class Report {
public:
    explicit Report(RunInfo info);
    void header();
    void row(const Row &row);
    // The closing lines (average bus bandwidth, total wrong values, or the JSON document).
    void footer();

private:
    RunInfo info_;
    std::vector<Row> rows_;
};

} // namespace dt::perf
