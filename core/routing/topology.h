/* SPDX-License-Identifier: Apache-2.0 */
// What the router knows about the ranks of one call: how many, whether they are the whole
// job (a transport's native collectives span every rank), which collectives the transport
// runs natively and which memory it accepts, whether a shared-memory domain serves this
// context and how the members spread over hosts. A plain value, so tests describe any job
// without one.
#pragma once

#include "runtime/operation.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace dt::routing {

// Where a call's buffers live (the call's dt_op_params_t, or a loaded memory provider for
// DT_MEMORY_AUTO), as bits of Path::memory and of what a transport accepts. Device memory
// runs where a transport accepts it, else through staging (pinned host buffers of the
// memory provider); the C API refuses it while no memory provider is loaded.
enum class Memory : uint8_t { host = 1, device = 2 };

constexpr uint8_t memory_bit(Memory m) { return static_cast<uint8_t>(m); }

enum class Spread : uint8_t {
    all_local,    // every member runs on this host
    shared_hosts, // members on several hosts, and some host holds more than one
    one_per_host, // no two members share a host (or nothing is known of hosts)
};

constexpr uint32_t kind_bit(OpKind kind) { return uint32_t{1} << static_cast<int>(kind); }

struct Topology {
    int size = 1;           // members of the call
    bool whole_job = true;  // the call spans every rank of the job (group 0)
    uint32_t native = 0;    // kind_bit() of each collective the transport runs itself
    // memory_bit() of each memory type the transport accepts, in isend/irecv and in its
    // native collectives: its capability answer, read once at load.
    uint8_t p2p_memory = memory_bit(Memory::host);
    uint8_t native_memory = memory_bit(Memory::host);
    bool shm = false;       // a working shared-memory domain serves this context
    bool staging = false;   // a memory provider can stage device buffers through the host
    uint32_t device_native = 0; // kind_bit() per native collective of the device transport
    Spread spread = Spread::one_per_host; // meaningful only with shm
};

// How `size` members spread over hosts, where host_of(i) names member i's host and
// `mine` is this rank's. scratch is reused between calls, so that this allocates nothing
// once it has grown to the largest call.
template <typename HostOf>
Spread spread_of(int size, int mine, HostOf &&host_of, std::vector<int> &scratch)
{
    bool all_local = true;
    for (int i = 0; i < size && all_local; ++i)
        all_local = host_of(i) == mine;
    if (all_local)
        return Spread::all_local;
    scratch.clear();
    for (int i = 0; i < size; ++i)
        scratch.push_back(host_of(i));
    std::sort(scratch.begin(), scratch.end());
    const auto hosts = std::unique(scratch.begin(), scratch.end()) - scratch.begin();
    return hosts < size ? Spread::shared_hosts : Spread::one_per_host;
}

} // namespace dt::routing
