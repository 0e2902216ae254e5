// SPDX-License-Identifier: Apache-2.0
#include "tcp_endpoint.h"

#include "tcp_request.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace dt::tcp {
namespace {

constexpr size_t kStageSize = 64 * 1024;
// Below this many bytes, payload goes through the staging buffer (one recv may then
// also bring the next frames); above it, recv writes straight into the destination.
constexpr size_t kDirectRead = 16 * 1024;
constexpr int kMaxIov = 64;

bool would_block(int err) { return err == EAGAIN || err == EWOULDBLOCK; }

} // namespace

Endpoint::Endpoint(const Host &host, const Config &config, int rank, int peer, Fd fd,
                   std::string addr, SendScratch &out)
    : host_(host), rank_(rank), peer_(peer), fd_(std::move(fd)), addr_(std::move(addr)),
      max_message_(config.max_message), out_(out), stage_(kStageSize) {}

std::string Endpoint::who() const {
    return "rank " + std::to_string(peer_) + " (" + addr_ + ")";
}

int32_t Endpoint::refuse(dt_transport_request_t *req) {
    start_request(req, peer_);
    complete_request(req, fail_status_, 0);
    host_.set_error(fail_message_);
    return fail_status_;
}

// ---- sending ----

int32_t Endpoint::isend(uint64_t tag, const void *buf, size_t len,
                        dt_transport_request_t *req) {
    if (closed()) return refuse(req);
    start_request(req, peer_);
    SendOp op{req, make_frame(tag, len), static_cast<const uint8_t *>(buf), len, 0};
    if (sendq_.empty() && can_write_ && len <= kCopySendBytes && copy_and_send(op))
        return req->status;
    sendq_.push_back(op);
    flush_sends();
    return req->status;
}

// The kernel then reads memory this thread has just written, not the caller's buffer,
// which may sit on pages no recent system call touched: on a paravirtualised host (PVM)
// each page of the caller's that the kernel reads cost 1-5 us, while copying a frame of
// up to 64 KiB costs a few (tcp README: 4 B-64 KiB allreduces with rotating buffers).
// Open MPI's TCP transport copies its eager frames (up to 64 KiB) as well. Takes what the
// socket accepts; false leaves the rest (op.done says how much went) to the queue, and
// errors to flush_sends, which meets them again.
bool Endpoint::copy_and_send(SendOp &op) {
    uint8_t *frame = out_.bytes.data();
    std::memcpy(frame, &op.header, sizeof(FrameHeader));
    if (op.len > 0) std::memcpy(frame + sizeof(FrameHeader), op.buf, op.len);
    const size_t total = sizeof(FrameHeader) + op.len;
    ssize_t w;
    do {
        w = ::send(fd_.get(), frame, total, MSG_NOSIGNAL);
    } while (w < 0 && errno == EINTR);
    if (w < 0) {
        if (would_block(errno)) can_write_ = false;
        return false;
    }
    op.done = static_cast<size_t>(w);
    if (op.done < total) return false;
    complete_request(op.req, DTP_OK, op.len);
    return true;
}

void Endpoint::flush_sends() {
    while (!sendq_.empty() && can_write_ && !closed()) {
        iovec iov[kMaxIov];
        int n = 0;
        for (auto it = sendq_.begin(); it != sendq_.end() && n + 2 <= kMaxIov; ++it) {
            if (it->done < sizeof(FrameHeader)) {
                iov[n].iov_base = reinterpret_cast<uint8_t *>(&it->header) + it->done;
                iov[n].iov_len = sizeof(FrameHeader) - it->done;
                ++n;
            }
            size_t sent = it->done > sizeof(FrameHeader) ? it->done - sizeof(FrameHeader) : 0;
            if (it->len > sent) {
                iov[n].iov_base = const_cast<uint8_t *>(it->buf) + sent;
                iov[n].iov_len = it->len - sent;
                ++n;
            }
        }
        msghdr msg{};
        msg.msg_iov = iov;
        msg.msg_iovlen = static_cast<size_t>(n);
        // MSG_NOSIGNAL: a dead peer is an EPIPE here, never a SIGPIPE for the process.
        ssize_t w = ::sendmsg(fd_.get(), &msg, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR) continue;
            if (would_block(errno)) {
                can_write_ = false;
                return;
            }
            const int err = errno;
            // What the peer sent before it closed is still readable after its reset, and
            // may say why it left (a rank's notice that the ranks disagree): deliver it
            // before the connection fails, or the closure alone would be the news.
            can_read_ = true;
            pump_recv();
            lost(std::strerror(err));
            return;
        }
        size_t left = static_cast<size_t>(w);
        while (left > 0) {
            SendOp &op = sendq_.front();
            size_t total = sizeof(FrameHeader) + op.len;
            size_t take = std::min(left, total - op.done);
            op.done += take;
            left -= take;
            if (op.done < total) break;
            complete_request(op.req, DTP_OK, op.len);
            sendq_.pop_front();
        }
    }
}

// ---- receiving ----

int32_t Endpoint::irecv(uint64_t tag, void *buf, size_t cap, dt_transport_request_t *req) {
    if (closed()) return refuse(req);
    start_request(req, peer_);
    RecvOp op{req, static_cast<uint8_t *>(buf), cap};
    auto u = unexpected_.find(tag);
    if (u != unexpected_.end()) { // an earlier frame with this tag is already here
        std::vector<uint8_t> data = std::move(u->second.front());
        u->second.pop_front();
        if (u->second.empty()) unexpected_.erase(u);
        buffered_bytes_ -= data.size() + kFrameCost;
        if (data.size() > cap) {
            oversized(req, data.size(), cap, tag);
            return req->status;
        }
        if (!data.empty()) std::memcpy(buf, data.data(), data.size());
        complete_request(req, DTP_OK, data.size());
        return DTP_OK;
    }
    if (rstate_ == RecvState::blocked && header_.tag == tag) {
        start_direct(op); // reading resumes straight into the user's buffer
        pump_recv();
        return req->status;
    }
    posted_[tag].push_back(op);
    return DTP_INPROGRESS;
}

void Endpoint::on_event(uint32_t events) {
    if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) can_read_ = true;
    if (events & (EPOLLOUT | EPOLLHUP | EPOLLERR)) can_write_ = true;
    pump();
}

void Endpoint::pump() {
    flush_sends();
    pump_recv();
}

bool Endpoint::fill_stage() {
    if (!can_read_ || closed()) return false;
    if (stage_begin_ == stage_end_) {
        stage_begin_ = stage_end_ = 0;
    } else if (stage_begin_ > 0) { // keep a partial header at the front
        std::memmove(stage_.data(), stage_.data() + stage_begin_, stage_end_ - stage_begin_);
        stage_end_ -= stage_begin_;
        stage_begin_ = 0;
    }
    for (;;) {
        ssize_t n = ::recv(fd_.get(), stage_.data() + stage_end_, stage_.size() - stage_end_, 0);
        if (n > 0) {
            stage_end_ += static_cast<size_t>(n);
            return true;
        }
        if (n == 0) {
            lost("connection closed by the peer");
            return false;
        }
        if (errno == EINTR) continue;
        if (would_block(errno)) {
            can_read_ = false;
            return false;
        }
        lost(std::strerror(errno));
        return false;
    }
}

void Endpoint::pump_recv() {
    while (!closed()) {
        size_t staged = stage_end_ - stage_begin_;
        if (rstate_ == RecvState::blocked) return;
        if (rstate_ == RecvState::header) {
            if (staged >= sizeof(FrameHeader)) {
                std::memcpy(&header_, stage_.data() + stage_begin_, sizeof(FrameHeader));
                stage_begin_ += sizeof(FrameHeader);
                on_header();
                continue;
            }
            if (!fill_stage()) return;
            continue;
        }
        uint8_t *dst = rstate_ == RecvState::direct ? current_.buf : current_buf_.data();
        size_t need = header_.length - got_;
        if (need == 0) {
            finish_payload();
            continue;
        }
        if (staged > 0) {
            size_t take = std::min(staged, need);
            if (rstate_ != RecvState::discard)
                std::memcpy(dst + got_, stage_.data() + stage_begin_, take);
            stage_begin_ += take;
            got_ += take;
            continue;
        }
        // A discarded payload passes through the staging buffer, a piece at a time.
        if (need < kDirectRead || rstate_ == RecvState::discard) {
            if (!fill_stage()) return;
            continue;
        }
        if (!can_read_) return;
        ssize_t n = ::recv(fd_.get(), dst + got_, need, 0);
        if (n > 0) {
            got_ += static_cast<size_t>(n);
        } else if (n == 0) {
            lost("connection closed by the peer in the middle of a message");
        } else if (errno != EINTR) {
            if (would_block(errno)) {
                can_read_ = false;
                return;
            }
            lost(std::strerror(errno));
        }
    }
}

void Endpoint::on_header() {
    std::string why = check_frame(header_, max_message_);
    if (!why.empty()) {
        fail(DTP_ERR_PROTOCOL, who() + " sent an invalid frame: " + why +
                                   "; closed the connection");
        return;
    }
    got_ = 0;
    auto p = posted_.find(header_.tag);
    if (p != posted_.end()) {
        RecvOp op = p->second.front();
        p->second.pop_front();
        if (p->second.empty()) posted_.erase(p);
        start_direct(op);
        return;
    }
    if (header_.length <= kSmallFrame &&
        buffered_bytes_ + header_.length + kFrameCost <= kBufferCap) {
        current_buf_.assign(header_.length, 0);
        buffered_bytes_ += header_.length + kFrameCost;
        rstate_ = RecvState::buffered;
        return;
    }
    rstate_ = RecvState::blocked; // wait for a matching irecv (backpressure)
}

void Endpoint::start_direct(const RecvOp &op) {
    if (header_.length > op.cap) {
        oversized(op.req, header_.length, op.cap, header_.tag);
        rstate_ = RecvState::discard; // the frame is read and dropped; the stream goes on
        return;
    }
    current_ = op;
    got_ = 0;
    rstate_ = RecvState::direct;
}

void Endpoint::finish_payload() {
    if (rstate_ == RecvState::discard) {
        rstate_ = RecvState::header;
        return;
    }
    if (rstate_ == RecvState::direct) {
        complete_request(current_.req, DTP_OK, header_.length);
        current_ = RecvOp{};
        rstate_ = RecvState::header;
        return;
    }
    rstate_ = RecvState::header;
    std::vector<uint8_t> data = std::move(current_buf_);
    current_buf_ = {};
    auto p = posted_.find(header_.tag);
    if (p == posted_.end()) {
        unexpected_[header_.tag].push_back(std::move(data));
        return;
    }
    // A receive was posted while this frame was arriving: it is the frame's match.
    RecvOp op = p->second.front();
    p->second.pop_front();
    if (p->second.empty()) posted_.erase(p);
    buffered_bytes_ -= data.size() + kFrameCost;
    if (data.size() > op.cap) {
        oversized(op.req, data.size(), op.cap, header_.tag);
        return;
    }
    if (!data.empty()) std::memcpy(op.buf, data.data(), data.size());
    complete_request(op.req, DTP_OK, data.size());
}

void Endpoint::oversized(dt_transport_request_t *req, uint64_t sent, size_t cap,
                         uint64_t tag) {
    char msg[320];
    std::snprintf(msg, sizeof(msg),
                  "rank %d sent %" PRIu64 " bytes for tag 0x%" PRIx64
                  ", but the receive posted %zu bytes; do all ranks pass the same count? "
                  "(from %s)",
                  peer_, sent, tag, cap, addr_.c_str());
    // Only this receive fails: the frame is dropped whole (read in full already, or
    // discarded as it arrives), so the stream stays in step and the connection open. A
    // rank that finds the ranks disagree on a count can still tell its peers why before
    // it leaves; a closed connection would reach them first, as a lost rank.
    host_.log(DT_LOG_WARN, msg);
    complete_request(req, DTP_ERR_PROTOCOL, 0);
    host_.set_error(msg);
}

void Endpoint::lost(const std::string &reason) {
    // Between frames: nothing of ours is on the wire and no frame is half in. Receives
    // posted ahead (the core keeps some posted for the whole job) do not count.
    bool between = sendq_.empty() && rstate_ == RecvState::header &&
                   stage_begin_ == stage_end_;
    // Peers finalize at slightly different times and close their connections: a clean
    // close between frames is the end of every job, worth info, not a warning; the core
    // reports a lost peer itself when a collective needed it. A close or reset in the
    // middle of a frame, or with sends of ours still queued, stays a warning.
    fail(DTP_ERR_PEER_LOST, "lost connection to " + who() + ": " + reason,
         between ? DT_LOG_INFO : DT_LOG_WARN);
}

void Endpoint::fail(int32_t status, const std::string &message, int log_level) {
    if (closed()) return;
    fd_.reset();
    fail_status_ = status;
    fail_message_ = message;
    host_.log(log_level, message);
    bool any = false;
    for (SendOp &op : sendq_) {
        complete_request(op.req, status, 0);
        any = true;
    }
    sendq_.clear();
    for (auto &[tag, ops] : posted_) {
        for (RecvOp &op : ops) {
            complete_request(op.req, status, 0);
            any = true;
        }
    }
    posted_.clear();
    if (rstate_ == RecvState::direct && current_.req != nullptr) {
        complete_request(current_.req, status, 0);
        any = true;
    }
    current_ = RecvOp{};
    rstate_ = RecvState::header;
    unexpected_.clear();
    buffered_bytes_ = 0;
    current_buf_ = {};
    stage_ = {};
    stage_begin_ = stage_end_ = 0;
    if (any) host_.set_error(message);
}

// ---- leaving ----

void Endpoint::shutdown_writes() {
    if (!closed()) ::shutdown(fd_.get(), SHUT_WR);
}

bool Endpoint::drain() {
    if (closed()) return true;
    char scratch[16384];
    for (;;) {
        ssize_t n = ::recv(fd_.get(), scratch, sizeof scratch, MSG_DONTWAIT);
        if (n > 0) continue;
        if (n < 0 && errno == EINTR) continue;
        return !(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
    }
}

} // namespace dt::tcp
