/* SPDX-License-Identifier: Apache-2.0 */
// One connected peer: the send queue, the receive state machine and tag matching.
//
// Sends: isend writes header and payload with one sendmsg (gathered) straight away and
// queues whatever the socket does not take; queued frames go out, in order, when epoll
// reports the socket writable. A small frame that finds the queue empty is copied whole
// into the instance's SendScratch and sent from there (copy_and_send).
//
// Receives: frames are parsed from a small staging buffer (one recv serves many small
// frames). When a header arrives and a receive with that tag is posted (FIFO per tag),
// the payload goes straight into the user's buffer, large parts with recv directly into
// it. Unexpected frames up to kSmallFrame bytes are buffered (at most kBufferCap bytes in
// all); any other unexpected frame stops reading from this peer until a matching receive
// is posted, so memory stays bounded and the kernel's flow control holds the sender.
//
// A frame larger than its posted receive fails that receive alone and is discarded
// (RecvState::discard while it arrives). Any other failure (EOF, reset, invalid frame)
// closes the connection and fails every pending request with this peer; later requests
// fail the same way.
#pragma once

#include "tcp_config.h"
#include "tcp_frame.h"
#include "tcp_host.h"
#include "tcp_socket.h"

#include <disttrain/plugin/transport.h>

#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

namespace dt::tcp {

// Up to this many payload bytes, a send that finds the queue empty goes out from a copy
// (copy_and_send).
constexpr size_t kCopySendBytes = 64 * 1024;
// Where copy_and_send assembles a frame: one per transport instance, shared by its
// endpoints (the core calls the transport from one thread at a time, and a frame's copy
// is done with once copy_and_send returns).
struct SendScratch {
    std::vector<uint8_t> bytes = std::vector<uint8_t>(sizeof(FrameHeader) + kCopySendBytes);
};

class Endpoint {
public:
    static constexpr size_t kSmallFrame = 64 * 1024;
    static constexpr size_t kBufferCap = 64 * 1024 * 1024;
    // Bookkeeping charged per buffered frame, so a flood of empty frames is bounded too.
    static constexpr size_t kFrameCost = 64;

    Endpoint(const Host &host, const Config &config, int rank, int peer, Fd fd,
             std::string addr, SendScratch &out);
    Endpoint(const Endpoint &) = delete;
    Endpoint &operator=(const Endpoint &) = delete;

    int fd() const { return fd_.get(); }
    bool closed() const { return !fd_.valid(); }

    // Both return the request's status: DTP_OK or DTP_INPROGRESS when accepted, the
    // connection's error (also written to req, message via set_error) when it is closed.
    int32_t isend(uint64_t tag, const void *buf, size_t len, dt_transport_request_t *req);
    int32_t irecv(uint64_t tag, void *buf, size_t cap, dt_transport_request_t *req);

    // An epoll event for this connection (edge-triggered).
    void on_event(uint32_t events);
    // Moves data in both directions as far as the socket allows.
    void pump();

    // Closes the connection and fails every pending request with status; later
    // requests fail the same way. The message is logged at log_level (DT_LOG_*) and
    // passed to set_error.
    void fail(int32_t status, const std::string &message, int log_level = DT_LOG_WARN);

    // Leaving on purpose (finalize): true while sends are still queued.
    bool sending() const { return !sendq_.empty() && !closed(); }
    // Half-closes the connection: the peer reads everything we sent, then end of stream.
    void shutdown_writes();
    // Reads and discards what the peer still sends; true once it has closed its side too.
    bool drain();

private:
    struct SendOp {
        dt_transport_request_t *req;
        FrameHeader header;
        const uint8_t *buf;
        size_t len;
        size_t done; // bytes of header + payload written
    };
    struct RecvOp {
        dt_transport_request_t *req;
        uint8_t *buf;
        size_t cap;
    };
    enum class RecvState { header, direct, buffered, blocked, discard };

    void flush_sends();
    bool copy_and_send(SendOp &op);
    void pump_recv();
    bool fill_stage();
    void on_header();
    void start_direct(const RecvOp &op);
    void finish_payload();
    void oversized(dt_transport_request_t *req, uint64_t sent, size_t cap, uint64_t tag);
    void lost(const std::string &reason);
    int32_t refuse(dt_transport_request_t *req);
    std::string who() const;

    Host host_;
    int rank_;
    int peer_;
    Fd fd_;
    std::string addr_;
    uint64_t max_message_;
    SendScratch &out_; // a small frame's header and payload (copy_and_send)

    std::deque<SendOp> sendq_;
    bool can_write_ = true;

    std::unordered_map<uint64_t, std::deque<RecvOp>> posted_;
    std::unordered_map<uint64_t, std::deque<std::vector<uint8_t>>> unexpected_;
    size_t buffered_bytes_ = 0;

    RecvState rstate_ = RecvState::header;
    bool can_read_ = true;
    FrameHeader header_{};
    RecvOp current_{};
    std::vector<uint8_t> current_buf_;
    size_t got_ = 0;
    std::vector<uint8_t> stage_;
    size_t stage_begin_ = 0;
    size_t stage_end_ = 0;

    int32_t fail_status_ = DTP_OK;
    std::string fail_message_;
};

} // namespace dt::tcp
