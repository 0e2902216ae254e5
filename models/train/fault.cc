// SPDX-License-Identifier: Apache-2.0
#include "train/fault.h"

#include "common/error.h"

#include <csignal>
#include <cstdlib>
#include <string>

namespace dt::models {
namespace {

struct Plan {
    bool armed = false;
    FaultPoint point = FaultPoint::step;
    uint64_t at = 0;
};

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
    plan.armed = plan.at > 0;
    return plan;
}

} // namespace

void fault_point(FaultPoint point)
{
    static const Plan plan = read_plan();
    static uint64_t counts[2] = {0, 0};
    if (!plan.armed || point != plan.point)
        return;
    if (++counts[static_cast<int>(point)] == plan.at)
        std::raise(SIGKILL);
}

} // namespace dt::models
