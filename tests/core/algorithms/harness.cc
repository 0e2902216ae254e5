// SPDX-License-Identifier: Apache-2.0
#include "harness.h"

#include "runtime/error.h"

#include <gtest/gtest.h>

#include <memory>
#include <thread>

namespace dt::test {

std::vector<RankOutcome> run_ranks(int size, const std::function<void(algo::Comm &)> &fn,
                                   const RunOptions &opts)
{
    std::unique_ptr<MemFabric> own;
    MemFabric *fabric = opts.fabric;
    if (fabric == nullptr) {
        own = std::make_unique<MemFabric>(size);
        fabric = own.get();
    }
    std::vector<std::unique_ptr<Transport>> transports;
    for (int r = 0; r < size; ++r)
        transports.push_back(fabric->make_transport(r));

    std::vector<RankOutcome> outcomes(static_cast<size_t>(size));
    const auto deadline = algo::Clock::now() + opts.timeout;
    std::vector<std::thread> threads;
    for (int r = 0; r < size; ++r) {
        threads.emplace_back([&, r] {
            try {
                algo::Comm comm(*transports[r], r, size, 7, deadline, opts.collective);
                fn(comm);
            } catch (const Error &e) {
                outcomes[r] = {e.status(), e.what()};
            } catch (const std::exception &e) {
                outcomes[r] = {DT_ERR_INTERNAL, e.what()};
            }
        });
    }
    for (auto &t : threads)
        t.join();
    transports.clear(); // finalize while the fabric lives
    return outcomes;
}

void expect_all_ok(const std::vector<RankOutcome> &outcomes)
{
    for (size_t r = 0; r < outcomes.size(); ++r)
        EXPECT_EQ(outcomes[r].status, DT_OK) << "rank " << r << ": " << outcomes[r].message;
}

} // namespace dt::test
