/* SPDX-License-Identifier: Apache-2.0 */
// The rendezvous store's wire format. After the token handshake (store_handshake.h) each
// side sends frames: a 4-byte big-endian body length, then the body. Bodies:
//   request: u8 op, then  set: str key, str value | get: str key, u64 timeout_ms
//                         add: str key, i64 delta | wait: u32 n, n x str key, u64 timeout_ms
//   reply:   u8 status (ok, timeout, error), then
//            get ok: str value | add ok: i64 value | wait timeout: u32 n, n x str missing key
//            error: str message
// where str is a u32 big-endian length and the bytes. Every length read off the wire is
// checked against what is left of the frame and against the caps below before anything is
// allocated, and a frame with trailing bytes is malformed too: a bad peer gets its
// connection closed, never a crash, an overflow or a huge allocation.
#pragma once

#include "bootstrap/socket_io.h"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dt::bootstrap::proto {

constexpr size_t kMaxKeyBytes = 4096;
constexpr size_t kMaxValueBytes = size_t{64} << 20;
constexpr size_t kMaxWaitKeys = 65536;
constexpr size_t kMaxMessageBytes = 4096;
// The largest body: a set with the largest key and value, plus its small header.
constexpr uint32_t kMaxFrameBytes = kMaxValueBytes + kMaxKeyBytes + 64;
// timeout_ms meaning "wait without limit".
constexpr uint64_t kNoTimeout = UINT64_MAX;

enum class Op : uint8_t { set = 1, get = 2, add = 3, wait = 4 };
enum class Status : uint8_t { ok = 0, timeout = 1, error = 2 };

const char *op_name(Op op);

struct Request {
    Op op = Op::set;
    std::string key;               // set, get, add
    std::string value;             // set
    int64_t delta = 0;             // add
    std::vector<std::string> keys; // wait
    uint64_t timeout_ms = 0;       // get, wait
};

struct Reply {
    Status status = Status::ok;
    std::string value;             // get ok
    int64_t number = 0;            // add ok
    std::vector<std::string> keys; // wait timeout: the keys still missing
    std::string message;           // error
};

// Checks a key against the caps; throws DT_ERR_INVALID_ARGUMENT naming it (the client
// calls this before sending so a caller's mistake is not reported as a protocol error).
void check_key(const std::string &key);

// Whole frames (length prefix included). Throw DT_ERR_INVALID_ARGUMENT when a field
// exceeds the caps.
std::string encode_request(const Request &req);
std::string encode_reply(Op op, const Reply &reply);

// Parse a frame body; throw dt::Error(DT_ERR_PROTOCOL) saying what was malformed.
Request decode_request(std::string_view body);
Reply decode_reply(Op op, std::string_view body);

// One frame read off a socket: io is not ok when the socket failed or timed out; problem
// is set (and io ok) when the length prefix was zero or over kMaxFrameBytes.
struct FrameRead {
    IoResult io;
    std::string problem;
    bool ok() const { return io.ok() && problem.empty(); }
};

// Waits for a frame's first byte until header_deadline, then gives the body body_timeout
// from when its length arrived (a peer that stalls mid-frame is cut off).
FrameRead read_frame(int fd, std::string &body, const Deadline &header_deadline,
                     std::chrono::milliseconds body_timeout, int wake_fd = -1);

} // namespace dt::bootstrap::proto
