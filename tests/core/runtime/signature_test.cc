// SPDX-License-Identifier: Apache-2.0
// What ranks must agree on for a named operation, and how a disagreement is told: which
// field is named first when several differ, and that every rank's value is listed.
#include "runtime/signature.h"

#include <gtest/gtest.h>

namespace dt {
namespace {

Signature sig(OpKind kind, dt_dtype_t dtype, uint64_t count)
{
    Signature s;
    s.kind = kind;
    s.dtype = dtype;
    s.count = count;
    return s;
}

std::vector<std::pair<int, Signature>> two(const Signature &a, const Signature &b)
{
    return {{0, a}, {1, b}};
}

TEST(Signature, OnlyFieldsThatMatterForTheKindAreKept)
{
    OpDesc d;
    d.kind = OpKind::allreduce;
    d.dtype = DT_FLOAT32;
    d.op = DT_MAX;
    d.count = 12;
    d.root = 3;
    Signature a = signature_of(d, 7);
    EXPECT_EQ(a.op, DT_MAX);
    EXPECT_EQ(a.root, 0) << "an allreduce has no root";
    EXPECT_EQ(a.group, 7u);
    EXPECT_EQ(a.count, 12u);

    d.kind = OpKind::broadcast;
    Signature b = signature_of(d, 0);
    EXPECT_EQ(b.root, 3);
    EXPECT_EQ(b.op, DT_SUM) << "a broadcast does not reduce, so its operator is not compared";

    d.kind = OpKind::reduce_scatter;
    EXPECT_EQ(signature_of(d, 0).op, DT_MAX);

    // Two ranks that pass different unused fields still agree.
    OpDesc e = d;
    e.kind = OpKind::allgather;
    d.kind = OpKind::allgather;
    e.op = DT_MIN;
    e.root = 1;
    EXPECT_EQ(signature_of(d, 0), signature_of(e, 0));
}

TEST(Signature, MemoryTypeIsComparedExceptForABarrier)
{
    OpDesc d;
    d.kind = OpKind::allreduce;
    d.count = 4;
    d.memory = DT_MEMORY_DEVICE;
    d.device = 3;
    d.stream = &d;
    OpDesc e = d;
    e.device = 0; // each rank has its own device and stream: never compared
    e.stream = nullptr;
    EXPECT_EQ(signature_of(d, 0).memory, DT_MEMORY_DEVICE);
    EXPECT_EQ(signature_of(d, 0), signature_of(e, 0));
    e.memory = DT_MEMORY_HOST;
    EXPECT_NE(signature_of(d, 0), signature_of(e, 0));
    EXPECT_EQ(describe_mismatch("grad.w", two(signature_of(e, 0), signature_of(d, 0))),
              "allreduce 'grad.w': ranks disagree on memory: rank 0 host, rank 1 device; "
              "every rank must submit the same operation under this name");

    // A barrier moves no buffer.
    d.kind = e.kind = OpKind::barrier;
    EXPECT_EQ(signature_of(d, 0).memory, DT_MEMORY_HOST);
    EXPECT_EQ(signature_of(d, 0), signature_of(e, 0));
}

TEST(Signature, KindsThatReduceOrHaveARoot)
{
    EXPECT_TRUE(kind_reduces(OpKind::allreduce));
    EXPECT_TRUE(kind_reduces(OpKind::reduce_scatter));
    for (OpKind k : {OpKind::broadcast, OpKind::allgather, OpKind::alltoall, OpKind::barrier})
        EXPECT_FALSE(kind_reduces(k)) << op_kind_name(k);
    EXPECT_TRUE(kind_has_root(OpKind::broadcast));
    for (OpKind k : {OpKind::allreduce, OpKind::allgather, OpKind::reduce_scatter,
                     OpKind::alltoall, OpKind::barrier})
        EXPECT_FALSE(kind_has_root(k)) << op_kind_name(k);
}

TEST(Signature, UnevenKindsLeaveTheCountToTheirAlgorithm)
{
    // Ranks of an allgatherv or alltoallv pass their own counts; the algorithm compares
    // them all (algorithms/counts_agreement.h), so the signature must not.
    for (OpKind k : {OpKind::allgatherv, OpKind::alltoallv}) {
        OpDesc d, e;
        d.kind = e.kind = k;
        d.count = 10;
        e.count = 12;
        EXPECT_FALSE(kind_counts_agree(k)) << op_kind_name(k);
        EXPECT_EQ(signature_of(d, 0), signature_of(e, 0)) << op_kind_name(k);
        e.dtype = DT_FLOAT64;
        EXPECT_NE(signature_of(d, 0), signature_of(e, 0)) << op_kind_name(k);
    }
    EXPECT_TRUE(kind_counts_agree(OpKind::allgather));
    EXPECT_EQ(std::string(op_kind_name(OpKind::allgatherv)), "allgatherv");
    EXPECT_EQ(std::string(op_kind_name(OpKind::alltoallv)), "alltoallv");
}

TEST(Signature, AgreementIsNoMessage)
{
    Signature s = sig(OpKind::allreduce, DT_FLOAT32, 4);
    EXPECT_EQ(disagreement({}), "");
    EXPECT_EQ(disagreement({{3, s}}), "");
    EXPECT_EQ(disagreement({{0, s}, {1, s}, {2, s}}), "");
    EXPECT_EQ(describe_mismatch("x", {{0, s}, {1, s}}), "");
}

TEST(Signature, MismatchNamesTheOperationTheFieldAndEachRanksValue)
{
    Signature a = sig(OpKind::allreduce, DT_FLOAT32, 4);
    Signature b = a;
    b.dtype = DT_FLOAT64;
    EXPECT_EQ(describe_mismatch("grad.w", two(a, b)),
              "allreduce 'grad.w': ranks disagree on dtype: rank 0 float32, rank 1 float64; "
              "every rank must submit the same operation under this name");
}

TEST(Signature, EachFieldIsNamedWithItsValues)
{
    const Signature base = [] {
        Signature s = sig(OpKind::broadcast, DT_INT32, 8);
        s.root = 1;
        s.group = 2;
        return s;
    }();
    struct Case {
        void (*change)(Signature &);
        const char *expected;
    };
    const Case cases[] = {
        {[](Signature &s) { s.kind = OpKind::allgather; },
         "ranks disagree on collective: rank 0 broadcast, rank 1 allgather"},
        {[](Signature &s) { s.group = 9; }, "ranks disagree on group: rank 0 2, rank 1 9"},
        {[](Signature &s) { s.dtype = DT_BFLOAT16; },
         "ranks disagree on dtype: rank 0 int32, rank 1 bfloat16"},
        {[](Signature &s) { s.count = 18446744073709551615u; },
         "ranks disagree on element count: rank 0 8, rank 1 18446744073709551615"},
        {[](Signature &s) { s.op = DT_PROD; },
         "ranks disagree on reduce op: rank 0 sum, rank 1 prod"},
        {[](Signature &s) { s.root = -4; }, "ranks disagree on root: rank 0 1, rank 1 -4"},
        {[](Signature &s) { s.memory = DT_MEMORY_DEVICE; },
         "ranks disagree on memory: rank 0 host, rank 1 device"},
    };
    for (const Case &c : cases) {
        Signature other = base;
        c.change(other);
        EXPECT_EQ(disagreement(two(base, other)), c.expected);
    }
}

TEST(Signature, TheFirstDifferingFieldInTheDocumentedOrderIsNamed)
{
    // Documented order: kind, group, dtype, count, op, root, memory. Each step changes every
    // field from the named one onwards, so only the order decides which is reported.
    Signature a = sig(OpKind::allreduce, DT_FLOAT32, 4);
    Signature b = a;
    b.memory = DT_MEMORY_DEVICE;
    EXPECT_NE(disagreement(two(a, b)).find("on memory"), std::string::npos);
    b.root = 5;
    EXPECT_NE(disagreement(two(a, b)).find("on root"), std::string::npos);
    b.op = DT_MAX;
    EXPECT_NE(disagreement(two(a, b)).find("on reduce op"), std::string::npos);
    b.count = 5;
    EXPECT_NE(disagreement(two(a, b)).find("on element count"), std::string::npos);
    b.dtype = DT_INT8;
    EXPECT_NE(disagreement(two(a, b)).find("on dtype"), std::string::npos);
    b.group = 1;
    EXPECT_NE(disagreement(two(a, b)).find("on group"), std::string::npos);
    b.kind = OpKind::barrier;
    EXPECT_NE(disagreement(two(a, b)).find("on collective"), std::string::npos);
}

TEST(Signature, EveryRankIsListedEvenThoseThatAgreeWithTheFirst)
{
    Signature a = sig(OpKind::allreduce, DT_FLOAT32, 4);
    Signature b = a;
    b.count = 6;
    EXPECT_EQ(disagreement({{0, a}, {2, a}, {5, b}}),
              "ranks disagree on element count: rank 0 4, rank 2 4, rank 5 6");
    // The operation is named after the first listed rank's kind.
    b.kind = OpKind::alltoall;
    EXPECT_EQ(describe_mismatch("t", {{4, b}, {7, a}}).rfind("alltoall 't': ", 0), 0u);
}

TEST(Signature, RankLists)
{
    EXPECT_EQ(rank_list({}), "");
    EXPECT_EQ(rank_list({3}), "3");
    EXPECT_EQ(rank_list({0, 2, 5}), "0, 2, 5");
    EXPECT_EQ(ranks_phrase({3}), "rank 3");
    EXPECT_EQ(ranks_phrase({0, 2, 5}), "ranks 0, 2, 5");
}

} // namespace
} // namespace dt
