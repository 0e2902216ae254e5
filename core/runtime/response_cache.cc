// SPDX-License-Identifier: Apache-2.0
#include "runtime/response_cache.h"

namespace dt {

int ResponseCache::find(const std::string &name) const
{
    auto it = by_name_.find(name);
    return it == by_name_.end() ? -1 : it->second;
}

int ResponseCache::insert(const std::string &name, const Signature &sig)
{
    int existing = find(name);
    if (existing >= 0)
        erase(existing);
    int slot = 0;
    while (slot < static_cast<int>(slots_.size()) && slots_[slot].has_value())
        ++slot;
    if (slot == static_cast<int>(slots_.size()))
        slots_.emplace_back();
    slots_[slot] = Entry{name, sig};
    by_name_[name] = slot;
    return slot;
}

void ResponseCache::erase(int slot)
{
    if (!slots_.at(slot))
        return;
    by_name_.erase(slots_[slot]->name);
    slots_[slot].reset();
    // Trailing free slots shrink the per-cycle state on every rank alike.
    while (!slots_.empty() && !slots_.back())
        slots_.pop_back();
}

} // namespace dt
