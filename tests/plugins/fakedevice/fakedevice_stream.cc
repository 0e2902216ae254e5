// SPDX-License-Identifier: Apache-2.0
#include "fakedevice_stream.h"

#include <cstring>

namespace fakedevice {

Stream::Stream(std::chrono::microseconds delay) : delay_(delay), worker_([this] { run(); }) {}

Stream::~Stream()
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        closing_ = true;
    }
    wake_.notify_one();
    worker_.join();
}

void Stream::copy(void *dst, const void *src, size_t bytes)
{
    push([this, dst, src, bytes] {
        if (delay_.count() > 0)
            std::this_thread::sleep_for(delay_);
        std::memcpy(dst, src, bytes);
    });
}

void Stream::record(std::shared_ptr<Event> event)
{
    const uint64_t n = event->recorded.fetch_add(1) + 1;
    push([event = std::move(event), n] { event->completed.store(n); });
}

void Stream::wait(std::shared_ptr<Event> event)
{
    const uint64_t target = event->recorded.load();
    push([event = std::move(event), target] {
        while (event->completed.load() < target)
            std::this_thread::sleep_for(std::chrono::microseconds(20));
    });
}

void Stream::push(std::function<void()> work)
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        queue_.push_back(std::move(work));
    }
    wake_.notify_one();
}

void Stream::run()
{
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
        wake_.wait(lock, [this] { return closing_ || !queue_.empty(); });
        if (queue_.empty())
            return; // closing, and everything queued has run
        auto work = std::move(queue_.front());
        queue_.pop_front();
        lock.unlock();
        work();
        lock.lock();
    }
}

} // namespace fakedevice
