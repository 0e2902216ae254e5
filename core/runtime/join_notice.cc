// SPDX-License-Identifier: Apache-2.0
#include "runtime/join_notice.h"

#include <string>

namespace dt {
namespace {

// Outside every context's namespace ("ctx<id>/..."): the launcher knows no contexts.
const char *const kCountKey = "launch/joined";
std::string rank_key(int rank) { return "launch/joined/" + std::to_string(rank); }
std::string exit_key(int rank) { return "launch/exited/" + std::to_string(rank); }

} // namespace

void announce_joined(bootstrap::StoreClient &store, int launcher_rank)
{
    // The rank's key before the count: a launcher that sees the count finds the key.
    store.set(rank_key(launcher_rank), "1");
    store.add(kCountKey, 1);
}

bool has_joined(bootstrap::StoreClient &store, int launcher_rank)
{
    return store.try_get(rank_key(launcher_rank), bootstrap::Millis{0}).has_value();
}

int64_t joined_count(bootstrap::StoreClient &store) { return store.add(kCountKey, 0); }

void announce_exit(bootstrap::StoreClient &store, int launcher_rank, int code)
{
    store.set(exit_key(launcher_rank), std::to_string(code));
}

std::optional<std::string> exited_before_joining(bootstrap::StoreClient &store,
                                                 int launcher_rank)
{
    return store.try_get(exit_key(launcher_rank), bootstrap::Millis{0});
}

} // namespace dt
