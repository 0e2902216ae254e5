// SPDX-License-Identifier: Apache-2.0
// Adapter for transport ops version 1 (point-to-point only). Version 2 kept v1's members
// in place and appended abort and the native collectives, so the upgrade copies the five
// functions and leaves the rest NULL: the core then calls finalize instead of abort and
// runs its own collective algorithms over isend/irecv. The v2 adapter takes it from there.
#include "plugin/transport_adapter.h"

namespace dt::plugin {

dt_transport_v2_t adapt_transport_v1(const dt_transport_v1_t &v1)
{
    dt_transport_v2_t v2{};
    v2.struct_size = sizeof(v2);
    v2.abi_version = DT_TRANSPORT_VERSION_2;
    v2.name = v1.name;
    v2.init = v1.init;
    v2.finalize = v1.finalize;
    v2.isend = v1.isend;
    v2.irecv = v1.irecv;
    v2.progress = v1.progress;
    return v2;
}

} // namespace dt::plugin
