/* SPDX-License-Identifier: Apache-2.0 */
// Operations the ranks have agreed on before, each in a numbered slot. Every rank holds
// the same cache (slots are assigned in the coordinator's response order, lowest free
// slot first), so readiness of a cached operation is one byte per slot in a MIN
// allreduce instead of a round trip through the coordinator.
#pragma once

#include "runtime/signature.h"

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace dt {

class ResponseCache {
public:
    // Byte values of a slot in the per-cycle state (MIN across ranks).
    static constexpr uint8_t kInvalid = 0; // a rank has the name with another signature
    static constexpr uint8_t kAbsent = 1;  // a rank has not submitted it
    static constexpr uint8_t kReady = 2;   // submitted (or no part in it) on this rank

    struct Entry {
        std::string name;
        Signature sig;
    };

    // Slot of name, or -1.
    int find(const std::string &name) const;
    const Entry &at(int slot) const { return *slots_.at(slot); }
    bool occupied(int slot) const { return slots_.at(slot).has_value(); }
    size_t slot_count() const { return slots_.size(); }

    // Adds (or replaces) name in the lowest free slot; returns the slot.
    int insert(const std::string &name, const Signature &sig);
    void erase(int slot);

private:
    std::vector<std::optional<Entry>> slots_;
    std::unordered_map<std::string, int> by_name_;
};

} // namespace dt
