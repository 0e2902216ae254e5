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

PathChooser::Path PathChooser::choose(size_t bytes, Clock::time_point now) const
{
    const auto &c = times_[size_class(bytes)];
    // Alternately, until each has its first kFirstTries: a first call also pays for
    // touching the program's fresh buffers, whichever path it took.
    for (int i = 0; i < kFirstTries; ++i)
        for (Path p : {kStaging, kSingleCopy})
            if (c[p].count <= i)
                return p;
    const Path faster =
        c[kSingleCopy].estimate() < c[kStaging].estimate() ? kSingleCopy : kStaging;
    const Path slower = faster == kStaging ? kSingleCopy : kStaging;
    const Times &s = c[slower];
    const auto slower_call = std::chrono::duration<double, std::nano>(
        s.estimate() * static_cast<double>(bytes));
    const auto retry = std::max<Clock::duration>(
        kRetryAfter, std::chrono::duration_cast<Clock::duration>(kRetryCost * slower_call));
    return now - s.last_try >= retry ? slower : faster;
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
