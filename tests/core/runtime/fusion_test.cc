// SPDX-License-Identifier: Apache-2.0
// Which ready operations the engine fuses: small host allreduces of one dtype, operator,
// group and memory type; never two memory types in one batch, and never device memory
// into the host fusion buffer.
#include "runtime/fusion.h"

#include <gtest/gtest.h>

namespace dt {
namespace {

Signature allreduce(uint64_t count, dt_memory_type_t memory = DT_MEMORY_HOST)
{
    Signature s;
    s.kind = OpKind::allreduce;
    s.dtype = DT_FLOAT32;
    s.op = DT_SUM;
    s.count = count;
    s.memory = memory;
    return s;
}

TEST(Fusion, SmallHostAllreducesOfOneShapeFuse)
{
    EXPECT_TRUE(fuses(allreduce(16)));
    EXPECT_TRUE(fusable(allreduce(16), allreduce(1000)));
}

TEST(Fusion, LargeOrOtherKindsRunAlone)
{
    EXPECT_FALSE(fuses(allreduce(kFuseBelowBytes / 4)));
    Signature b = allreduce(16);
    b.kind = OpKind::broadcast;
    EXPECT_FALSE(fuses(b));
    EXPECT_FALSE(fusable(allreduce(16), b));
    for (OpKind k : {OpKind::allgatherv, OpKind::alltoallv}) {
        b.kind = k;
        EXPECT_FALSE(fuses(b)) << op_kind_name(k);
        EXPECT_FALSE(fusable(allreduce(16), b)) << op_kind_name(k);
    }
}

TEST(Fusion, EveryFieldOfTheBatchMustAgree)
{
    const Signature a = allreduce(16);
    Signature b = a;
    b.dtype = DT_FLOAT64;
    EXPECT_FALSE(fusable(a, b));
    b = a;
    b.op = DT_MAX;
    EXPECT_FALSE(fusable(a, b));
    b = a;
    b.group = 3;
    EXPECT_FALSE(fusable(a, b));
}

TEST(Fusion, MemoryTypesAreNeverMixedButDeviceBatchesFuseAmongThemselves)
{
    const Signature host = allreduce(16);
    const Signature device = allreduce(16, DT_MEMORY_DEVICE);
    EXPECT_FALSE(fusable(host, device));
    EXPECT_FALSE(fusable(device, host));
    // A device batch is staged through pinned host memory with the provider's copies.
    EXPECT_TRUE(fuses(device));
    EXPECT_TRUE(fusable(device, device));
}

} // namespace
} // namespace dt
