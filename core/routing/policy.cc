// SPDX-License-Identifier: Apache-2.0
#include "routing/policy.h"

#include "runtime/env.h"
#include "runtime/error.h"

#include <cstdint>

namespace dt::routing {

namespace {

struct Reader {
    const Lookup &lookup;

    int64_t integer(const char *name, int64_t fallback, int64_t min, int64_t max) const
    {
        auto value = lookup(name);
        return value ? env::parse_int(name, *value, min, max) : fallback;
    }
    bool flag(const char *name, bool fallback) const
    {
        return integer(name, fallback ? 1 : 0, 0, 1) == 1;
    }
};

constexpr struct {
    const char *name;
    algo::AllreduceChoice choice;
} kAlgorithms[] = {
    {"auto", algo::AllreduceChoice::automatic},
    {"ring", algo::AllreduceChoice::ring},
    {"halving_doubling", algo::AllreduceChoice::halving_doubling},
    {"recursive_doubling", algo::AllreduceChoice::recursive_doubling},
    {"shm", algo::AllreduceChoice::shm},
};

algo::AllreduceChoice parse_algorithm(const std::optional<std::string> &value)
{
    if (!value)
        return algo::AllreduceChoice::automatic;
    for (const auto &a : kAlgorithms)
        if (*value == a.name)
            return a.choice;
    throw_error(DT_ERR_INVALID_CONFIG, "DISTTRAIN_ALGORITHM='", *value,
                "' is not an allreduce algorithm; expected ring, halving_doubling, "
                "recursive_doubling, shm or auto");
}

shm::Settings parse_shm(const Reader &r)
{
    constexpr int64_t kMaxWaitUs = 10 * 1000 * 1000;
    shm::Settings s;
    s.enabled = r.flag("DISTTRAIN_SHM", s.enabled);
    s.data_bytes = r.integer("DISTTRAIN_SHM_BYTES", s.data_bytes, 64 * 1024, int64_t(1) << 34);
    s.cma = r.flag("DISTTRAIN_SHM_CMA", s.cma);
    s.local_size = r.integer("DISTTRAIN_SHM_LOCAL_SIZE", 0, 0, 1 << 20);
    shm::TuningOverrides &t = s.tuning;
    t.slice_bytes = r.integer("DISTTRAIN_SHM_SLICE", t.slice_bytes, 0, 1 << 30);
    t.oneshot_bytes = r.integer("DISTTRAIN_SHM_ONESHOT", t.oneshot_bytes, -1, 1 << 30);
    t.cma_bytes = r.integer("DISTTRAIN_SHM_CMA_BYTES", t.cma_bytes, -1, INT64_MAX);
    t.cma_piece_bytes = r.integer("DISTTRAIN_SHM_CMA_PIECE", t.cma_piece_bytes, 0, 1 << 30);
    t.stream_bytes = r.integer("DISTTRAIN_SHM_STREAM_BYTES", t.stream_bytes, -1, INT64_MAX);
    t.spin = std::chrono::microseconds(
        r.integer("DISTTRAIN_SHM_SPIN_US", t.spin.count(), 0, kMaxWaitUs));
    t.yield = std::chrono::microseconds(
        r.integer("DISTTRAIN_SHM_YIELD_US", t.yield.count(), 0, kMaxWaitUs));
    return s;
}

} // namespace

Policy parse_policy(const Lookup &lookup)
{
    // Every variable is read whatever the others say (DISTTRAIN_SHM=0 included): a
    // malformed value is an error now, not when a later run turns the path on.
    Reader r{lookup};
    Policy p;
    p.algorithm = parse_algorithm(lookup("DISTTRAIN_ALGORITHM"));
    p.shm = parse_shm(r);
    // Each asks for the opposite of the other; running either would ignore one silently.
    if (p.algorithm == algo::AllreduceChoice::shm && !p.shm.enabled)
        throw_error(DT_ERR_INVALID_CONFIG, "DISTTRAIN_ALGORITHM=shm forces allreduce into "
                    "shared memory, but DISTTRAIN_SHM=0 turns shared memory off; unset one "
                    "of them");
    return p;
}

Policy read_policy()
{
    return parse_policy([](const char *name) { return env::get(name); });
}

const char *algorithm_name(algo::AllreduceChoice choice) noexcept
{
    for (const auto &a : kAlgorithms)
        if (a.choice == choice)
            return a.name;
    return "?";
}

} // namespace dt::routing
