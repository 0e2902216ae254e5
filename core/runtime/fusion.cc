// SPDX-License-Identifier: Apache-2.0
#include "runtime/fusion.h"

namespace dt {

size_t bytes_of(const Signature &sig) { return sig.count * dt_dtype_size(sig.dtype); }

bool fuses(const Signature &sig)
{
    return sig.kind == OpKind::allreduce && bytes_of(sig) < kFuseBelowBytes;
}

bool fusable(const Signature &a, const Signature &b)
{
    return fuses(a) && fuses(b) && a.dtype == b.dtype && a.op == b.op &&
           a.group == b.group && a.memory == b.memory;
}

} // namespace dt
