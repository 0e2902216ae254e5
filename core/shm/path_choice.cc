// SPDX-License-Identifier: Apache-2.0
#include "shm/path_choice.h"

#include <algorithm>
#include <bit>

namespace dt::shm {

int PathChooser::size_class(size_t bytes)
{
    const int log2 = bytes == 0 ? 0 : std::bit_width(bytes) - 1;
    return std::min(log2, kClasses - 1);
}

double PathChooser::Times::estimate() const
{
    return *std::min_element(ns_per_byte.begin(), ns_per_byte.begin() + count);
}

PathChooser::Path PathChooser::choose(size_t bytes, Clock::time_point now, int offered) const
{
    const auto &c = times_[size_class(bytes)];
    const int paths = std::clamp(offered, 1, kPaths);
    // In turn, until each has its first kFirstTries: a first call also pays for
    // touching the program's fresh buffers, whichever path it took.
    for (int i = 0; i < kFirstTries; ++i)
        for (int p = 0; p < paths; ++p)
            if (c[p].count <= i)
                return static_cast<Path>(p);
    int fastest = 0;
    for (int p = 1; p < paths; ++p)
        if (c[p].estimate() < c[fastest].estimate())
            fastest = p;
    for (int p = 0; p < paths; ++p) {
        if (p == fastest)
            continue;
        const Times &s = c[p];
        const auto slower_call = std::chrono::duration<double, std::nano>(
            s.estimate() * static_cast<double>(bytes));
        const auto retry = std::max<Clock::duration>(
            kRetryAfter, std::chrono::duration_cast<Clock::duration>(kRetryCost * slower_call));
        if (now - s.last_try >= retry)
            return static_cast<Path>(p);
    }
    return static_cast<Path>(fastest);
}

void PathChooser::record(size_t bytes, Path path, Clock::duration took, Clock::time_point now)
{
    Times &t = times_[size_class(bytes)][path];
    const double ns = std::chrono::duration<double, std::nano>(took).count();
    t.ns_per_byte[t.next] = ns / static_cast<double>(std::max<size_t>(bytes, 1));
    t.next = (t.next + 1) % kSamples;
    t.count = std::min(t.count + 1, kSamples);
    t.last_try = now;
}

} // namespace dt::shm
