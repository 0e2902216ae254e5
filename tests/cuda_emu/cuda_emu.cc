// SPDX-License-Identifier: Apache-2.0
// The CPU runner of CUDA kernels (cuda_emu.h): a block's threads are fibers of the
// launching thread, switched at __syncthreads(); blocks run one after another.
#include "cuda_emu.h"

#include "fiber_switch.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <numeric>
#include <random>
#include <vector>

namespace cuda_emu {
namespace {

constexpr unsigned kMaxThreads = 1024; // a block's threads, as on every CUDA GPU
constexpr size_t kStackBytes = 128 * 1024;

enum class State { ready, at_barrier, done };

struct Fiber {
    FiberContext context;
    uint3 index;
    State state;
    int barrier_line;
};

// The launch in progress: one at a time in the process (run() holds a lock), on the
// calling thread.
struct Launch {
    dim3 grid, block;
    uint3 block_index;
    const std::function<void()> *body = nullptr;
    std::vector<Fiber> fibers;
    Fiber *current = nullptr;
    bool direct = false; // the current thread runs as a plain call, not a fiber
    FiberContext scheduler;
    std::string failure;
};

Launch g_launch;
Order g_order = Order::forward;
uint64_t g_launches = 0;
thread_local std::string g_message; // per thread, as CUDA's last error
thread_local cudaError_t g_last_error = cudaSuccess;
uint3 g_host_index{0, 0, 0}; // threadIdx outside a launch: a bug of the caller

// Stacks for kMaxThreads fibers, each with a guard page below it (an overflow faults
// rather than overwriting its neighbour), mapped once and kept.
char *stacks()
{
    static char *base = [] {
        const size_t page = size_t(sysconf(_SC_PAGESIZE));
        const size_t bytes = kMaxThreads * (kStackBytes + page);
        void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) {
            std::perror("cuda_emu: mmap of the fiber stacks");
            std::abort();
        }
        char *b = static_cast<char *>(p);
        for (unsigned i = 0; i < kMaxThreads; ++i)
            mprotect(b + i * (kStackBytes + page), page, PROT_NONE);
        return b;
    }();
    return base;
}

char *stack_of(unsigned fiber)
{
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    return stacks() + fiber * (kStackBytes + page) + page;
}

[[noreturn]] void fiber_main()
{
    (*g_launch.body)();
    Fiber *f = g_launch.current;
    f->state = State::done;
    fiber_switch(f->context, g_launch.scheduler); // never resumed
    std::abort();
}

// Indices 0 .. n-1 in the order of g_order; seed varies the shuffle.
std::vector<unsigned> order_of(size_t n, uint64_t seed)
{
    std::vector<unsigned> v(n);
    std::iota(v.begin(), v.end(), 0u);
    if (g_order == Order::reverse)
        std::reverse(v.begin(), v.end());
    else if (g_order == Order::shuffle)
        std::shuffle(v.begin(), v.end(), std::mt19937_64(seed));
    return v;
}

std::string where(const uint3 &b, const uint3 &t)
{
    char s[160];
    std::snprintf(s, sizeof s, "block (%u, %u, %u), thread (%u, %u, %u)", b.x, b.y, b.z, t.x,
                  t.y, t.z);
    return s;
}

// What syncthreads() throws in a thread that runs as a plain call (run_directly).
struct BarrierInDirectRun {
    int line;
};

// The block's threads after the first, which ended without a barrier: none of them may
// reach one (a barrier is reached by every thread of a block or by none), so each runs as
// a plain call on this stack, no fiber switch at all; one that reaches a barrier makes the
// block fail.
bool run_directly(const std::vector<unsigned> &order)
{
    const Fiber &first = g_launch.fibers[order[0]];
    g_launch.direct = true;
    for (size_t k = 1; k < order.size(); ++k) {
        Fiber &f = g_launch.fibers[order[k]];
        g_launch.current = &f;
        try {
            (*g_launch.body)();
        } catch (const BarrierInDirectRun &b) {
            g_launch.current = nullptr;
            g_launch.direct = false;
            g_launch.failure = "__syncthreads() at line " + std::to_string(b.line) +
                               " reached by " + where(g_launch.block_index, f.index) +
                               " but never by " + where(g_launch.block_index, first.index) +
                               ", which returned";
            return false;
        }
        f.state = State::done;
    }
    g_launch.current = nullptr;
    g_launch.direct = false;
    return true;
}

// Runs one block to its end; false with g_launch.failure set when a thread broke the
// rules of __syncthreads(). The first thread in the launch's order runs as a fiber: if it
// ends without a barrier, the others run as plain calls (run_directly), which is most
// kernels (element-wise ones have no barrier) and far faster; else every thread is a
// fiber, and the block goes from barrier to barrier.
bool run_block(uint64_t seed)
{
    const unsigned n = g_launch.block.x * g_launch.block.y * g_launch.block.z;
    g_launch.fibers.resize(n);
    for (unsigned i = 0; i < n; ++i) {
        Fiber &f = g_launch.fibers[i];
        f.index = uint3{i % g_launch.block.x, (i / g_launch.block.x) % g_launch.block.y,
                        i / (g_launch.block.x * g_launch.block.y)};
        f.state = State::ready;
        f.barrier_line = 0;
    }
    const std::vector<unsigned> order = order_of(n, seed * 7919);
    Fiber &first = g_launch.fibers[order[0]];
    fiber_start(first.context, stack_of(order[0]), kStackBytes, fiber_main);
    g_launch.current = &first;
    fiber_switch(g_launch.scheduler, first.context);
    g_launch.current = nullptr;
    if (first.state == State::done)
        return run_directly(order);
    for (unsigned i = 0; i < n; ++i)
        if (i != order[0])
            fiber_start(g_launch.fibers[i].context, stack_of(i), kStackBytes, fiber_main);
    for (uint64_t phase = 0;; ++phase) {
        for (unsigned i : phase == 0 ? order : order_of(n, seed * 7919 + phase)) {
            Fiber &f = g_launch.fibers[i];
            if (f.state != State::ready)
                continue;
            g_launch.current = &f;
            fiber_switch(g_launch.scheduler, f.context);
            g_launch.current = nullptr;
        }
        // Every thread is now done or at a barrier: all at the same one, or all done.
        const Fiber *waiting = nullptr, *finished = nullptr;
        for (const Fiber &f : g_launch.fibers) {
            if (f.state == State::at_barrier) {
                if (waiting != nullptr && waiting->barrier_line != f.barrier_line) {
                    g_launch.failure = "__syncthreads() at line " +
                                       std::to_string(waiting->barrier_line) + " in " +
                                       where(g_launch.block_index, waiting->index) +
                                       " but at line " + std::to_string(f.barrier_line) +
                                       " in " + where(g_launch.block_index, f.index);
                    return false;
                }
                waiting = &f;
            } else {
                finished = &f;
            }
        }
        if (waiting == nullptr)
            return true;
        if (finished != nullptr) {
            g_launch.failure = "__syncthreads() at line " +
                               std::to_string(waiting->barrier_line) + " reached by " +
                               where(g_launch.block_index, waiting->index) +
                               " but never by " + where(g_launch.block_index, finished->index) +
                               ", which returned";
            return false;
        }
        for (Fiber &f : g_launch.fibers)
            f.state = State::ready;
    }
}

bool fail(cudaError_t error, std::string message)
{
    g_last_error = error;
    g_message = std::move(message);
    return false;
}

} // namespace

void set_order(Order order) { g_order = order; }

const uint3 &thread_index()
{
    return g_launch.current != nullptr ? g_launch.current->index : g_host_index;
}
const uint3 &block_index() { return g_launch.block_index; }
const dim3 &block_dim() { return g_launch.block; }
const dim3 &grid_dim() { return g_launch.grid; }

void syncthreads(int line)
{
    Fiber *f = g_launch.current;
    if (f == nullptr) {
        std::fprintf(stderr, "cuda_emu: __syncthreads() outside a kernel\n");
        std::abort();
    }
    if (g_launch.direct)
        throw BarrierInDirectRun{line};
    f->state = State::at_barrier;
    f->barrier_line = line;
    fiber_switch(f->context, g_launch.scheduler);
}

const std::string &last_message() { return g_message; }

bool within_bounds(unsigned max_threads, dim3 block)
{
    const uint64_t threads = uint64_t(block.x) * block.y * block.z;
    if (threads <= max_threads)
        return true;
    return fail(cudaErrorLaunchOutOfResources,
                "a block of " + std::to_string(threads) +
                    " threads for a kernel whose __launch_bounds__ allow " +
                    std::to_string(max_threads));
}

cudaError_t take_last_error()
{
    const cudaError_t e = g_last_error;
    g_last_error = cudaSuccess;
    return e;
}

bool run(dim3 grid, dim3 block, size_t shared_bytes, const std::function<void()> &body)
{
    // One launch at a time in the process: the launch state and the kernels' shared
    // memory (statics) are the process's.
    static std::mutex one_at_a_time;
    const std::lock_guard<std::mutex> hold(one_at_a_time);
    const uint64_t threads = uint64_t(block.x) * block.y * block.z;
    if (threads == 0 || threads > kMaxThreads || block.z > 64)
        return fail(cudaErrorInvalidConfiguration,
                    "a block of " + std::to_string(block.x) + " x " + std::to_string(block.y) +
                        " x " + std::to_string(block.z) +
                        " threads: CUDA allows 1 to 1024, z at most 64");
    if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.y > 65535 || grid.z > 65535)
        return fail(cudaErrorInvalidConfiguration,
                    "a grid of " + std::to_string(grid.x) + " x " + std::to_string(grid.y) +
                        " x " + std::to_string(grid.z) +
                        " blocks: CUDA allows x >= 1, y and z in 1 .. 65535");
    if (shared_bytes > 48 * 1024)
        return fail(cudaErrorInvalidValue,
                    std::to_string(shared_bytes) + " bytes of dynamic shared memory: the "
                                                   "default limit is 48 KiB");
    g_launch.grid = grid;
    g_launch.block = block;
    g_launch.body = &body;
    g_launch.failure.clear();
    const uint64_t seed = ++g_launches;
    const size_t blocks = size_t(grid.x) * grid.y * grid.z;
    for (unsigned b : order_of(blocks, seed)) {
        g_launch.block_index = uint3{b % grid.x, (b / grid.x) % grid.y, b / (grid.x * grid.y)};
        if (!run_block(seed))
            return fail(cudaErrorLaunchFailure, g_launch.failure);
    }
    g_launch.body = nullptr;
    g_message.clear();
    return true;
}

} // namespace cuda_emu

// The runtime's error report, as the kernels' launchers read it: the last launch's error,
// cleared by the call.
extern "C" cudaError_t cudaGetLastError() { return cuda_emu::take_last_error(); }
