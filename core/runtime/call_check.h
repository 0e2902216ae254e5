/* SPDX-License-Identifier: Apache-2.0 */
// The call check of ordered mode (DISTTRAIN_ORDERED=1). Nothing is negotiated there: the
// n-th collective of every rank simply meets the n-th of the others. So that a rank that
// skipped a call or passed other arguments is an error rather than a silent wrong result,
// each call's first transfer between two ranks carries this compact description of the
// call, and the receiver compares it with its own before it touches the data:
//   - point-to-point algorithms (algo::Comm): the first message to each peer starts with
//     it (inline below kInlineCheckedBytes, as a message of its own above);
//   - shared memory: the tag line holds its hash, the rank's check line the whole of it;
//   - a transport's native collectives: a two-word allreduce of its hash runs first.
#pragma once

#include "runtime/operation.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace dt {

// Sent as raw bytes between ranks of one job (one architecture, one build of the wire).
struct CallCheck {
    uint32_t magic = 0;
    uint8_t kind = 0;
    uint8_t dtype = 0;
    uint8_t op = 0;
    uint8_t memory = 0; // dt_memory_type_t: host or device
    int32_t root = 0;
    uint32_t group = 0;
    uint64_t count = 0;
    uint32_t name_hash = 0;
    uint32_t call = 0; // the sender's call number in its group (messages only)
};
static_assert(sizeof(CallCheck) == 32);

constexpr uint32_t kCallCheckMagic = 0x6b636364; // "dcck"

// The check of one call: fields that do not matter for the kind (the op of a broadcast,
// the root of an allreduce) are zero, so they never count as a disagreement.
CallCheck call_check_of(const OpDesc &desc, uint64_t call);

// Whether two checks describe the same call: every field but `call`, which ends the
// struct (and which the tag that carried the check already matched).
inline bool call_checks_agree(const CallCheck &a, const CallCheck &b)
{
    return std::memcmp(&a, &b, offsetof(CallCheck, call)) == 0;
}

// One word that differs when any compared field differs (not `call`).
uint64_t call_check_hash(const CallCheck &c);

// Empty when theirs (received from world rank `peer`) agrees with mine; else the whole
// error message: the call, the field and both values, what ordered mode requires.
// `what` names the collective ("allreduce 'grad.0'").
std::string call_check_mismatch(const std::string &what, int me, const CallCheck &mine,
                                int peer, const CallCheck &theirs);

// "received N bytes where a call check was expected": a peer whose first message of the
// call is too short to hold one (an unchecked peer, or another call's data).
std::string call_check_missing(const std::string &what, int me, int peer, size_t bytes);

} // namespace dt
