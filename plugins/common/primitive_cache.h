/* SPDX-License-Identifier: Apache-2.0 */
// A least-recently-used cache keyed by operation and shapes, shared by the compute
// plugins (oneDNN primitives, cuDNN descriptors and chosen algorithms), so a training step
// builds nothing after the first. Header-only: plugins never link the core or each other.
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>

namespace dtp {

// What an operation keeps per shape; each operation derives its own.
struct CacheEntry {
    virtual ~CacheEntry() = default;
};

class PrimitiveCache {
public:
    explicit PrimitiveCache(size_t capacity) : capacity_(capacity < 1 ? 1 : capacity) {}

    // The entry under key, created by make() on a miss (evicting the least recently
    // used entry when full). T derives from CacheEntry.
    template <typename T, typename Make>
    T &get(const std::string &key, Make &&make)
    {
        auto it = index_.find(key);
        if (it != index_.end()) {
            order_.splice(order_.begin(), order_, it->second);
            ++hits_;
            return static_cast<T &>(*it->second->second);
        }
        ++misses_;
        std::unique_ptr<CacheEntry> entry = make();
        order_.emplace_front(key, std::move(entry));
        index_[key] = order_.begin();
        while (order_.size() > capacity_) {
            index_.erase(order_.back().first);
            order_.pop_back();
        }
        return static_cast<T &>(*order_.front().second);
    }

    size_t size() const { return order_.size(); }
    size_t hits() const { return hits_; }
    size_t misses() const { return misses_; }

private:
    using Item = std::pair<std::string, std::unique_ptr<CacheEntry>>;
    size_t capacity_;
    std::list<Item> order_; // most recently used first
    std::unordered_map<std::string, std::list<Item>::iterator> index_;
    size_t hits_ = 0;
    size_t misses_ = 0;
};

} // namespace dtp
