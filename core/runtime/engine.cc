#include "runtime/engine.h"

#include "runtime/error.h"
#include "runtime/execute.h"
#include "telemetry/log.h"

namespace dt {

Engine::Engine(Transport &transport, int rank, int size, std::chrono::milliseconds timeout)
    : transport_(transport), rank_(rank), size_(size), timeout_(timeout)
{
    thread_ = std::thread([this] { loop(); });
}

Engine::~Engine()
{
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
}

void Engine::submit(std::shared_ptr<Operation> op)
{
    if (aborted_.load()) {
        op->complete(DT_ERR_ABORTED, cat(op_kind_name(op->desc().kind), " '",
                                         op->desc().name,
                                         "' was not run: the context was aborted"));
        return;
    }
    {
        std::lock_guard lock(mutex_);
        queue_.push_back(std::move(op));
    }
    cv_.notify_one();
}

void Engine::abort()
{
    aborted_.store(true);
    std::deque<std::shared_ptr<Operation>> dropped;
    {
        std::lock_guard lock(mutex_);
        dropped.swap(queue_);
    }
    for (auto &op : dropped)
        op->complete(DT_ERR_ABORTED, cat(op_kind_name(op->desc().kind), " '",
                                         op->desc().name,
                                         "' was not run: the context was aborted"));
}

void Engine::loop()
{
    log::set_rank(rank_);
    for (;;) {
        std::shared_ptr<Operation> op;
        {
            std::unique_lock lock(mutex_);
            cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
            if (queue_.empty())
                return; // stopping and drained
            op = std::move(queue_.front());
            queue_.pop_front();
        }
        run(*op);
    }
}

void Engine::run(Operation &op)
{
    const OpDesc &d = op.desc();
    if (aborted_.load()) {
        op.complete(DT_ERR_ABORTED, cat(op_kind_name(d.kind), " '", d.name,
                                        "' was not run: the context was aborted"));
        return;
    }
    auto deadline = timeout_.count() > 0 ? algo::Clock::now() + timeout_
                                         : algo::Clock::time_point::max();
    try {
        execute(transport_, d, rank_, size_, next_tag_++, deadline);
        op.complete(DT_OK, {});
    } catch (const Error &e) {
        DT_LOG(debug, "engine", op_kind_name(d.kind), " '", d.name, "' failed: ", e.what());
        op.complete(e.status(), cat(op_kind_name(d.kind), " '", d.name, "': ", e.what()));
    } catch (const std::exception &e) {
        op.complete(DT_ERR_INTERNAL, cat(op_kind_name(d.kind), " '", d.name,
                                         "': internal error: ", e.what()));
    }
}

} // namespace dt
