/* SPDX-License-Identifier: Apache-2.0 */
// The fake device's streams and events. A stream is a worker thread that runs its queue
// in order, each copy after an optional delay (DISTTRAIN_FAKE_DEVICE_DELAY_US), so a
// caller that reads a result without waiting for its event sees stale data or a fault
// instead of a lucky pass. An event completes when its stream's worker reaches it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace fakedevice {

// Recorded and completed count up; the event is complete when they are equal, so a
// re-record makes it pending again until the stream reaches the newest record.
struct Event {
    std::atomic<uint64_t> recorded{0};
    std::atomic<uint64_t> completed{0};
    bool done() const noexcept { return completed.load() == recorded.load(); }
};

class Stream {
public:
    explicit Stream(std::chrono::microseconds delay);
    ~Stream(); // runs what is queued, then joins the worker
    Stream(const Stream &) = delete;
    Stream &operator=(const Stream &) = delete;

    // Queues a memcpy(dst, src, bytes) that runs after the delay. Returns at once.
    void copy(void *dst, const void *src, size_t bytes);
    // Queues the completion of the event's newest record. Returns at once. The queue
    // shares the event, so destroying a pending event's handle is safe.
    void record(std::shared_ptr<Event> event);
    // Queues a wait: what is queued after it runs once the event's newest record (now)
    // has completed on whichever stream recorded it. Returns at once.
    void wait(std::shared_ptr<Event> event);

private:
    void push(std::function<void()> work);
    void run();

    std::chrono::microseconds delay_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::function<void()>> queue_; // under mutex_
    bool closing_ = false;                    // under mutex_
    std::thread worker_;
};

} // namespace fakedevice
