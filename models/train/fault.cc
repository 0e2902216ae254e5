// SPDX-License-Identifier: Apache-2.0
#include "train/fault.h"

#include "common/error.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <sstream>
#include <string>

namespace dt::models {
namespace {

struct Plan {
    bool armed = false;
    FaultPoint point = FaultPoint::step;
    uint64_t at = 0;
};

// Whether DISTTRAIN_TRAIN_KILL_RANKS (unset: every process) names this process.
bool this_rank_is_chosen()
{
    const char *ranks = std::getenv("DISTTRAIN_TRAIN_KILL_RANKS");
    if (ranks == nullptr || *ranks == '\0')
        return true;
    const char *join = std::getenv("DISTTRAIN_ELASTIC_JOIN");
    if (join != nullptr && *join != '\0')
        return false; // a replacement takes a dead rank's number but is not a victim
    const char *mine = std::getenv("DISTTRAIN_RANK");
    std::stringstream in(ranks);
    for (std::string item; std::getline(in, item, ',');) {
        char *end = nullptr;
        std::strtoul(item.c_str(), &end, 10);
        if (item.empty() || *end != '\0')
            throw_input_error("DISTTRAIN_TRAIN_KILL_RANKS='", ranks,
                              "' is not a list of ranks like 1,3");
        if (mine != nullptr && item == mine)
            return true;
    }
    return false;
}

Plan read_plan()
{
    Plan plan;
    const char *env = std::getenv("DISTTRAIN_TRAIN_KILL_AT");
    if (env == nullptr || *env == '\0')
        return plan;
    const std::string v = env;
    const auto colon = v.find(':');
    const std::string kind = v.substr(0, colon);
    if (colon == std::string::npos || (kind != "step" && kind != "checkpoint"))
        throw_input_error("DISTTRAIN_TRAIN_KILL_AT='", v,
                          "' is not step:N or checkpoint:N");
    plan.point = kind == "step" ? FaultPoint::step : FaultPoint::checkpoint_write;
    plan.at = std::strtoull(v.c_str() + colon + 1, nullptr, 10);
    plan.armed = plan.at > 0 && this_rank_is_chosen();
    return plan;
}

} // namespace

void fault_point(FaultPoint point)
{
    static const Plan plan = read_plan();
    static uint64_t counts[2] = {0, 0};
    if (!plan.armed || point != plan.point)
        return;
    if (++counts[static_cast<int>(point)] == plan.at) {
        timespec now{};
        clock_gettime(CLOCK_REALTIME, &now);
        std::fprintf(stderr, "disttrain-train: fault injection: SIGKILL at %s %llu, "
                             "unix time %.3f\n",
                     point == FaultPoint::step ? "step" : "checkpoint",
                     static_cast<unsigned long long>(plan.at),
                     double(now.tv_sec) + double(now.tv_nsec) / 1e9);
        std::fflush(stderr);
        std::raise(SIGKILL);
    }
}

} // namespace dt::models
