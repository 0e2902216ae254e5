/* SPDX-License-Identifier: Apache-2.0 */
// A small, portable random generator (SplitMix64). The trainer needs the same sequence
// on every rank, on every platform and after a restart, which std::mt19937 plus the
// standard distributions do not promise (the distributions are implementation-defined).
#pragma once

#include <cmath>
#include <cstdint>

namespace dt::models {

class Random {
public:
    explicit Random(uint64_t seed) : state_(seed) {}

    uint64_t next()
    {
        uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }

    // Uniform integer in [0, bound), without modulo bias (rejection sampling).
    uint64_t below(uint64_t bound)
    {
        const uint64_t limit = ~uint64_t{0} - (~uint64_t{0} % bound);
        uint64_t x;
        do {
            x = next();
        } while (x >= limit);
        return x % bound;
    }

    // Uniform double in [0, 1) with 53 random bits.
    double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

    // Standard normal (Box-Muller; one value per call keeps the state simple).
    double normal()
    {
        const double u1 = 1.0 - uniform(); // (0, 1]: log() stays finite
        const double u2 = uniform();
        return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    }

    uint64_t state() const { return state_; }

private:
    uint64_t state_;
};

// Derives an independent seed for a purpose (e.g. the permutation of epoch e).
inline uint64_t mix_seed(uint64_t seed, uint64_t stream)
{
    Random r(seed ^ (stream * 0xd1b54a32d192ed03ull));
    return r.next();
}

} // namespace dt::models
