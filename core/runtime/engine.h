// The background engine of a context: callers enqueue operations from any thread; one
// engine thread runs them in submission order (the transport is driven from this thread
// only). Ranks must submit the same collectives in the same order; negotiation of
// out-of-order submissions comes with the collective engine (issue 3).
#pragma once

#include "plugin/transport.h"
#include "runtime/operation.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

namespace dt {

class Engine {
public:
    Engine(Transport &transport, int rank, int size, std::chrono::milliseconds timeout);
    // Runs what is queued (each bounded by the timeout), then stops the thread.
    ~Engine();
    Engine(const Engine &) = delete;
    Engine &operator=(const Engine &) = delete;

    // Thread safe. After abort() the operation completes at once with DT_ERR_ABORTED.
    void submit(std::shared_ptr<Operation> op);

    // Fails queued operations and every later one with DT_ERR_ABORTED. The operation in
    // flight fails when the transport is aborted (the context does that).
    void abort();
    bool aborted() const { return aborted_.load(); }

private:
    void loop();
    void run(Operation &op);

    Transport &transport_;
    int rank_;
    int size_;
    std::chrono::milliseconds timeout_;
    uint64_t next_tag_ = 1;

    std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<std::shared_ptr<Operation>> queue_;
    bool stopping_ = false;
    std::atomic<bool> aborted_{false};
    std::thread thread_;
};

} // namespace dt
