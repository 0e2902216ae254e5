/* SPDX-License-Identifier: Apache-2.0 */
// The store server's data: a map from key to value with waits for keys to appear. Kept
// apart from the networking so it can be reasoned about (and tested) on its own.
#pragma once

#include "bootstrap/socket_io.h"

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace dt::bootstrap {

class StoreState {
public:
    // Polled about every 200 ms while a wait blocks; returning true abandons the wait
    // (the server uses it to notice a client that hung up).
    using Abandon = std::function<bool()>;

    void set(std::string key, std::string value);
    // The value once key exists; nullopt on deadline, abandon or shutdown.
    std::optional<std::string> get(const std::string &key, const Deadline &deadline,
                                   const Abandon &abandon);
    // Adds delta to the decimal integer under key (absent counts as 0) and returns the
    // sum. Throws DT_ERR_STORE when the value is not an integer or the sum overflows.
    int64_t add(const std::string &key, int64_t delta);
    // The keys still missing when every key exists (empty), or at deadline/abandon/shutdown.
    std::vector<std::string> wait(const std::vector<std::string> &keys,
                                  const Deadline &deadline, const Abandon &abandon);
    // Wakes every wait for good; later waits return at once.
    void shutdown();

private:
    template <typename Ready>
    bool wait_until(std::unique_lock<std::mutex> &lock, const Deadline &deadline,
                    const Abandon &abandon, Ready ready);

    std::mutex mu_;
    std::condition_variable changed_;
    std::unordered_map<std::string, std::string> map_;
    bool stopped_ = false;
};

} // namespace dt::bootstrap
