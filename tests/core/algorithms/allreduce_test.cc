// SPDX-License-Identifier: Apache-2.0
// Every allreduce algorithm x dtype x op x rank count 1..5 x size, in place and out of
// place, against the scalar reference.
#include "algorithms/algorithms.h"
#include "harness.h"
#include "reference.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <tuple>

namespace dt::test {
namespace {

using Algorithm = std::function<void(algo::Comm &, const algo::AllreduceArgs &)>;

struct Variant {
    const char *name;
    Algorithm run;
};

const std::vector<Variant> &variants()
{
    static const std::vector<Variant> v = {
        {"ring", [](algo::Comm &c, const algo::AllreduceArgs &a) { algo::allreduce_ring(c, a); }},
        // Tiny segments: many per block, the last one short, pipelining across steps.
        {"ring_seg96",
         [](algo::Comm &c, const algo::AllreduceArgs &a) {
             algo::allreduce_ring(c, a, algo::RingOptions{96});
         }},
        {"halving_doubling",
         [](algo::Comm &c, const algo::AllreduceArgs &a) {
             algo::allreduce_halving_doubling(c, a);
         }},
        // Any rank count: 3 and 5 fold their extra ranks in and out.
        {"recursive_doubling",
         [](algo::Comm &c, const algo::AllreduceArgs &a) {
             algo::allreduce_recursive_doubling(c, a);
         }},
    };
    return v;
}

// The inputs of one shape and their reduction: the same for every algorithm and placement,
// so they are computed once per shape (the scalar reference costs more than the runs).
struct Shape {
    dt_dtype_t dtype;
    dt_reduce_op_t op;
    int p;
    size_t count;
    std::vector<Bytes> inputs;
    Bytes want;
};

Shape make_shape(dt_dtype_t dtype, dt_reduce_op_t op, int p, size_t count)
{
    Shape s{dtype, op, p, count, {}, {}};
    for (int r = 0; r < p; ++r)
        s.inputs.push_back(make_input(dtype, op, count, r, static_cast<uint32_t>(count)));
    s.want = reference_reduce(dtype, op, s.inputs, count);
    return s;
}

void check_allreduce(const Variant &variant, const Shape &shape, bool in_place)
{
    const dt_dtype_t dtype = shape.dtype;
    const int p = shape.p;
    const size_t count = shape.count;
    SCOPED_TRACE(testing::Message() << variant.name << " " << dtype_op_name(dtype, shape.op)
                                    << " ranks=" << p << " count=" << count
                                    << (in_place ? " in place" : " out of place"));
    const size_t es = esize(dtype);
    std::vector<Bytes> inputs = shape.inputs, outputs;
    for (int r = 0; r < p; ++r) {
        // Out of place, recvbuf starts as garbage that must be overwritten.
        outputs.push_back(in_place ? inputs[r] : Bytes(count * es, std::byte{0x5a}));
    }
    auto outcomes = run_ranks(p, [&](algo::Comm &comm) {
        const int r = comm.rank();
        const void *send = in_place ? outputs[r].data() : inputs[r].data();
        variant.run(comm, {send, outputs[r].data(), count, dtype, shape.op});
    });
    expect_all_ok(outcomes);
    for (int r = 0; r < p; ++r) {
        EXPECT_EQ(compare(dtype, outputs[r].data(), shape.want.data(), count), "")
            << "rank " << r;
        if (!in_place) {
            EXPECT_EQ(inputs[r], shape.inputs[r]) << "rank " << r << ": sendbuf was modified";
        }
    }
}

class AllreduceTest : public testing::TestWithParam<std::tuple<dt_dtype_t, dt_reduce_op_t>> {};

TEST_P(AllreduceTest, MatchesReferenceForEveryAlgorithmRankCountAndSize)
{
    auto [dtype, op] = GetParam();
    const size_t big = (size_t{1} << 20) / esize(dtype) + 3; // ~1 MiB, not a round number
    for (int p = 1; p <= 5; ++p) {
        for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1001}}) {
            const Shape shape = make_shape(dtype, op, p, count);
            for (const Variant &variant : variants())
                for (bool in_place : {false, true})
                    check_allreduce(variant, shape, in_place);
        }
        if (p != 1 && p != 4) { // keep the suite fast: the big case on 2, 3 and 5 ranks
            const Shape shape = make_shape(dtype, op, p, big);
            for (const Variant &variant : variants())
                check_allreduce(variant, shape, p % 2 == 0);
        }
    }
}

INSTANTIATE_TEST_SUITE_P(AllDtypesAndOps, AllreduceTest,
                         testing::Combine(testing::ValuesIn(kAllDtypes),
                                          testing::ValuesIn(kAllOps)),
                         [](const auto &info) {
                             return dtype_op_name(std::get<0>(info.param),
                                                  std::get<1>(info.param));
                         });

// The size-based choice crosses from recursive doubling to halving-doubling (32 KiB on
// 3 ranks, 2 MiB on 2) and from halving-doubling to ring (64 KiB); each forced
// algorithm and the automatic choice must give the reference result on both sides.
// (Which algorithm each size gets is tests/core/routing's; the policy's parsing of
// DISTTRAIN_ALGORITHM too.)
TEST(AllreduceSelect, ForcedAlgorithmsAgreeAcrossTheThresholds)
{
    using C = algo::AllreduceChoice;
    std::vector<Shape> shapes;
    for (size_t count : {size_t{8191}, size_t{8192}, size_t{8193}, size_t{16383},
                         size_t{16384}, size_t{16385}})
        shapes.push_back(make_shape(DT_FLOAT32, DT_SUM, 3, count));
    for (size_t count : {size_t{524288}, size_t{524289}})
        shapes.push_back(make_shape(DT_FLOAT32, DT_SUM, 2, count));
    for (C choice : {C::ring, C::halving_doubling, C::recursive_doubling, C::automatic}) {
        const Variant forced = {"forced", [choice](algo::Comm &c, const algo::AllreduceArgs &a) {
                                    algo::allreduce(c, a, choice);
                                }};
        for (const Shape &shape : shapes)
            check_allreduce(forced, shape, false);
    }
}

} // namespace
} // namespace dt::test
