/* SPDX-License-Identifier: Apache-2.0 */
// Messages of the negotiation between ranks and the coordinator (rank 0), and their
// encoding. Each cycle a rank with news sends the coordinator its records; the
// coordinator answers every rank with the same list of responses, in the order in which
// every rank then runs the ready operations.
#pragma once

#include "runtime/signature.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dt {

struct Record {
    enum class Type : uint8_t { request = 1, join = 2 };
    Type type = Type::request;
    std::string name; // request
    Signature sig;    // request
    // request of a group (sig.group != 0): its world ranks. The coordinator may not be
    // in the group's parent and so may never have seen the group created.
    std::vector<int32_t> members;
    // request: how long the operation had waited on this rank when it was sent, from the
    // first negotiation cycle after its submission. One that the response cache held back
    // (the ranks' caches had it, but some rank never submitted it) comes late; the
    // coordinator counts DISTTRAIN_TIMEOUT from when the earliest rank began waiting.
    uint64_t waited_us = 0;
};

struct Response {
    enum class Type : uint8_t { ready = 1, error = 2, join_done = 3 };
    Type type = Type::ready;
    std::string name;       // ready, error
    Signature sig;          // ready
    int32_t status = DT_OK; // error
    std::string message;    // error
    int32_t last_joined = -1; // join_done: the rank that joined last
};

struct ResponseList {
    std::vector<Response> responses;
    std::vector<int32_t> joined; // ranks that have joined and not yet been released
};

std::vector<uint8_t> encode(const std::vector<Record> &records);
std::vector<Record> decode_records(const std::vector<uint8_t> &bytes);
std::vector<uint8_t> encode(const ResponseList &list);
ResponseList decode_responses(const std::vector<uint8_t> &bytes);

} // namespace dt
