/* SPDX-License-Identifier: Apache-2.0 */
// Per-layer timing of training steps, on with DISTTRAIN_PROFILE_LAYERS=1: Sequential and
// Residual time each leaf layer's forward and backward and, at exit, a table goes to
// stderr: time per kind of layer (conv, bn, relu, ...) and the most expensive layers,
// each layer's first call left out (warm-up).
// The clock is the process's CPU time, not wall time, so that a profile taken on a busy
// machine still adds up (on CPU the calls block; on a GPU they only queue). Off, it costs
// a branch.
#pragma once

#include <string>

namespace dt::models {

class LayerProfile {
public:
    static bool enabled();
    static void record(const std::string &layer, bool backward, double seconds);
    static double now(); // seconds of CPU time used by the process
};

// Times a scope into the profile when profiling is on.
class ProfileScope {
public:
    ProfileScope(const std::string &layer, bool backward)
        : layer_(layer), backward_(backward), on_(LayerProfile::enabled())
    {
        if (on_)
            t0_ = LayerProfile::now();
    }
    ~ProfileScope()
    {
        if (on_)
            LayerProfile::record(layer_, backward_, LayerProfile::now() - t0_);
    }
    ProfileScope(const ProfileScope &) = delete;
    ProfileScope &operator=(const ProfileScope &) = delete;

private:
    const std::string &layer_;
    bool backward_;
    bool on_;
    double t0_ = 0;
};

} // namespace dt::models
