// SPDX-License-Identifier: Apache-2.0
// disttrain.hpp alone in a translation unit, as C++17 with warnings as errors; its
// templates are instantiated here so their bodies are checked too.
#include <disttrain/disttrain.hpp>
#include <disttrain/disttrain.hpp>

#include <array>
#include <vector>

static_assert(disttrain::dtype_v<float> == disttrain::dtype::float32);
static_assert(disttrain::dtype_v<const double> == disttrain::dtype::float64);
static_assert(disttrain::dtype_v<std::int8_t> == disttrain::dtype::int8);
static_assert(disttrain::dtype_v<std::uint8_t> == disttrain::dtype::uint8);
static_assert(disttrain::dtype_v<std::int32_t> == disttrain::dtype::int32);
static_assert(disttrain::dtype_v<std::int64_t> == disttrain::dtype::int64);
static_assert(static_cast<int>(disttrain::reduce_op::prod) == DT_PROD);
static_assert(static_cast<int>(disttrain::memory_type::automatic) == DT_MEMORY_AUTO);
static_assert(!std::is_copy_constructible_v<disttrain::request>);
static_assert(std::is_nothrow_move_constructible_v<disttrain::request>);

// Never called: it only makes the compiler instantiate every collective.
void cxx_disttrain_hpp_instantiate(disttrain::context &ctx);
void cxx_disttrain_hpp_instantiate(disttrain::context &ctx)
{
    std::vector<float> v(4);
    std::array<std::int64_t, 4> a{};
    double d[4] = {};
    std::int32_t in[8] = {}, out[8] = {};
    ctx.allreduce(v);
    ctx.allreduce(a, disttrain::reduce_op::max, "a");
    ctx.allreduce(d, 4);
    ctx.allreduce(in, out, 8, disttrain::reduce_op::min);
    ctx.allreduce(v.data(), v.data(), v.size(), disttrain::dtype::float32,
                  disttrain::reduce_op::avg);
    disttrain::request r = ctx.allreduce_async(v);
    r = ctx.allreduce_async(in, out, 8);
    r.wait(10);
    r.test();
    ctx.broadcast(v, 0);
    ctx.broadcast(d, 4, 0);
    r = ctx.broadcast_async(d, 4, 0);
    ctx.allgather(in, out, 4);
    r = ctx.allgather_async(in, out, 4);
    ctx.reduce_scatter(in, out, 4);
    r = ctx.reduce_scatter_async(in, out, 4, disttrain::reduce_op::prod);
    ctx.alltoall(in, out, 4);
    r = ctx.alltoall_async(in, out, 4);
    ctx.barrier();
    r = ctx.barrier_async("b");
    // Per-call parameters: where the buffers live.
    const auto dev = disttrain::op_params::on_device(0, nullptr);
    disttrain::op_params automatic;
    automatic.memory = disttrain::memory_type::automatic;
    ctx.allreduce(v, disttrain::reduce_op::sum, "p", automatic);
    ctx.allreduce(in, out, 8, disttrain::reduce_op::sum, "p", dev);
    r = ctx.allreduce_async(v, disttrain::reduce_op::avg, nullptr, dev);
    ctx.broadcast(v, 0, nullptr, dev);
    r = ctx.broadcast_async(d, 4, 0, nullptr, dev);
    ctx.allgather(in, out, 4, nullptr, dev);
    r = ctx.allgather_async(in, out, 4, nullptr, dev);
    ctx.reduce_scatter(in, out, 4, disttrain::reduce_op::sum, nullptr, dev);
    r = ctx.reduce_scatter_async(in, out, 4, disttrain::reduce_op::sum, nullptr, dev);
    ctx.alltoall(in, out, 4, nullptr, dev);
    r = ctx.alltoall_async(in, out, 4, nullptr, dev);
    ctx.barrier(nullptr, dev);
    r = ctx.barrier_async(nullptr, dev);
    // API 1.2: uneven blocks, process sets, join.
    const std::vector<std::size_t> counts{4, 4};
    ctx.allgatherv(in, out, 4, counts);
    r = ctx.allgatherv_async(in, out, 4, counts, "gv", dev);
    ctx.alltoallv(in, counts, out, counts);
    r = ctx.alltoallv_async(in, counts, out, counts, "av", dev);
    std::optional<disttrain::context> group = ctx.group({0});
    if (group)
        group->barrier();
    (void)ctx.join();
    ctx.reform();
    (void)ctx.poll_joiners();
    (void)ctx.allgather_uneven(std::vector<float>{1.0f});
    (void)ctx.rank();
    (void)ctx.size();
    (void)ctx.local_rank();
    (void)ctx.local_size();
    (void)ctx.transport();
}
