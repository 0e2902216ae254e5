// SPDX-License-Identifier: Apache-2.0
#include "tcp_self.h"

#include "tcp_request.h"

#include <cstring>
#include <string>

namespace dt::tcp {

int32_t SelfChannel::deliver(const void *data, size_t len, const Posted &to) {
    if (len > to.cap) {
        host_.set_error("rank " + std::to_string(rank_) + " sent itself " + std::to_string(len) +
                        " bytes, but the receive posted " + std::to_string(to.cap) +
                        " bytes; do all ranks pass the same count?");
        complete_request(to.req, DTP_ERR_PROTOCOL, 0);
        return DTP_ERR_PROTOCOL;
    }
    if (len > 0) std::memcpy(to.buf, data, len);
    complete_request(to.req, DTP_OK, len);
    return DTP_OK;
}

int32_t SelfChannel::isend(uint64_t tag, const void *buf, size_t len,
                           dt_transport_request_t *req) {
    start_request(req, rank_);
    if (fail_status_ != 0) {
        complete_request(req, fail_status_, 0);
        return fail_status_;
    }
    auto p = posted_.find(tag);
    if (p != posted_.end()) {
        Posted to = p->second.front();
        p->second.pop_front();
        if (p->second.empty()) posted_.erase(p);
        deliver(buf, len, to); // an oversized message fails the receive, not the send
    } else {
        auto *b = static_cast<const uint8_t *>(buf);
        unexpected_[tag].emplace_back(b, b + len);
    }
    complete_request(req, DTP_OK, len);
    return DTP_OK;
}

int32_t SelfChannel::irecv(uint64_t tag, void *buf, size_t cap,
                           dt_transport_request_t *req) {
    start_request(req, rank_);
    if (fail_status_ != 0) {
        complete_request(req, fail_status_, 0);
        return fail_status_;
    }
    auto u = unexpected_.find(tag);
    if (u == unexpected_.end()) {
        posted_[tag].push_back(Posted{req, buf, cap});
        return DTP_INPROGRESS;
    }
    std::vector<uint8_t> data = std::move(u->second.front());
    u->second.pop_front();
    if (u->second.empty()) unexpected_.erase(u);
    return deliver(data.data(), data.size(), Posted{req, buf, cap});
}

void SelfChannel::fail_all(int32_t status) {
    fail_status_ = status;
    for (auto &[tag, list] : posted_) {
        for (Posted &p : list) complete_request(p.req, status, 0);
    }
    posted_.clear();
    unexpected_.clear();
}

} // namespace dt::tcp
