// SPDX-License-Identifier: Apache-2.0
// The call check of ordered mode as a value: which fields count for which kind, that
// every counted field changes the hash, and what a disagreement's message says.
#include "runtime/call_check.h"

#include <gtest/gtest.h>

namespace dt {
namespace {

OpDesc allreduce(size_t count)
{
    OpDesc d;
    d.kind = OpKind::allreduce;
    d.name = "grad.0";
    d.count = count;
    d.dtype = DT_FLOAT32;
    d.op = DT_SUM;
    return d;
}

bool contains(const std::string &s, const std::string &part)
{
    return s.find(part) != std::string::npos;
}

TEST(CallCheck, FieldsThatDoNotMatterForTheKindAreZero)
{
    OpDesc d = allreduce(8);
    d.root = 3;
    EXPECT_EQ(call_check_of(d, 0).root, 0); // an allreduce has no root
    d.kind = OpKind::broadcast;
    d.op = DT_MAX;
    CallCheck b = call_check_of(d, 0);
    EXPECT_EQ(b.root, 3);
    EXPECT_EQ(b.op, 0); // a broadcast does not reduce
    d.kind = OpKind::barrier;
    EXPECT_EQ(call_check_of(d, 0).count, 0u);
    // The uneven kinds' counts are compared by their algorithm, count by count.
    for (OpKind k : {OpKind::allgatherv, OpKind::alltoallv}) {
        d.kind = k;
        EXPECT_EQ(call_check_of(d, 0).count, 0u) << op_kind_name(k);
        EXPECT_EQ(call_check_of(d, 0).kind, static_cast<uint8_t>(k)) << op_kind_name(k);
    }
}

TEST(CallCheck, EveryComparedFieldChangesTheHash)
{
    const OpDesc base = allreduce(8);
    const uint64_t h = call_check_hash(call_check_of(base, 5));
    EXPECT_NE(h, 0u);
    EXPECT_EQ(h, call_check_hash(call_check_of(base, 6))) << "the call number is not compared";
    auto differs = [&](auto change) {
        OpDesc d = base;
        change(d);
        return call_check_hash(call_check_of(d, 5)) != h;
    };
    EXPECT_TRUE(differs([](OpDesc &d) { d.count = 4; }));
    EXPECT_TRUE(differs([](OpDesc &d) { d.dtype = DT_INT32; }));
    EXPECT_TRUE(differs([](OpDesc &d) { d.op = DT_MAX; }));
    EXPECT_TRUE(differs([](OpDesc &d) { d.kind = OpKind::reduce_scatter; }));
    EXPECT_TRUE(differs([](OpDesc &d) { d.group = 2; }));
    EXPECT_TRUE(differs([](OpDesc &d) { d.name = "grad.1"; }));
    EXPECT_TRUE(differs([](OpDesc &d) { d.memory = DT_MEMORY_DEVICE; }));
    EXPECT_FALSE(differs([](OpDesc &d) { d.device = 2; })) << "each rank has its own device";
}

TEST(CallCheck, MemoryTypeTakesTheSpareByte)
{
    OpDesc d = allreduce(8);
    EXPECT_EQ(call_check_of(d, 0).memory, DT_MEMORY_HOST);
    d.memory = DT_MEMORY_DEVICE;
    EXPECT_EQ(call_check_of(d, 0).memory, DT_MEMORY_DEVICE);
    d.kind = OpKind::barrier; // moves no buffer: never a disagreement
    EXPECT_EQ(call_check_of(d, 0).memory, DT_MEMORY_HOST);
}

TEST(CallCheck, AgreementIsNoMessage)
{
    CallCheck c = call_check_of(allreduce(8), 3);
    EXPECT_EQ(call_check_mismatch("allreduce 'grad.0'", 0, c, 1, c), "");
}

TEST(CallCheck, ADisagreementNamesTheFieldAndBothValues)
{
    CallCheck mine = call_check_of(allreduce(8), 3);
    OpDesc other = allreduce(8);
    other.dtype = DT_FLOAT64;
    std::string m = call_check_mismatch("allreduce 'grad.0'", 0, mine, 2,
                                        call_check_of(other, 3));
    EXPECT_TRUE(contains(m, "allreduce 'grad.0'")) << m;
    EXPECT_TRUE(contains(m, "ranks disagree on dtype: rank 0 float32, rank 2 float64")) << m;
    EXPECT_TRUE(contains(m, "DISTTRAIN_ORDERED=1")) << m;

    other = allreduce(8);
    other.memory = DT_MEMORY_DEVICE;
    m = call_check_mismatch("allreduce 'grad.0'", 0, mine, 1, call_check_of(other, 3));
    EXPECT_TRUE(contains(m, "ranks disagree on memory: rank 0 host, rank 1 device")) << m;

    other = allreduce(8);
    other.name = "grad.7";
    m = call_check_mismatch("allreduce 'grad.0'", 0, mine, 2, call_check_of(other, 3));
    EXPECT_TRUE(contains(m, "rank 2's call has another name")) << m;
}

TEST(CallCheck, SomethingThatIsNoCheckIsNamedAsSuch)
{
    CallCheck mine = call_check_of(allreduce(8), 3);
    CallCheck garbage{};
    std::string m = call_check_mismatch("allreduce 'grad.0'", 0, mine, 1, garbage);
    EXPECT_TRUE(contains(m, "rank 1 sent data where rank 0 expected the call check")) << m;
    m = call_check_missing("allreduce 'grad.0'", 0, 1, 4);
    EXPECT_TRUE(contains(m, "rank 1 sent 4 bytes")) << m;
}

} // namespace
} // namespace dt
