// SPDX-License-Identifier: Apache-2.0
#include "mem_transport.h"

#include "plugin/transport_adapter.h"
#include "runtime/error.h"

#include <chrono>
#include <cstring>

namespace dt::test {

MemFabric::MemFabric(int size)
{
    for (int r = 0; r < size; ++r)
        ranks_.push_back(std::make_unique<RankState>());
}

std::unique_ptr<Transport> MemFabric::make_transport(int rank)
{
    auto endpoint = std::make_unique<Endpoint>(Endpoint{this, rank});
    // dt::Transport owns the instance from here and frees it through op_finalize.
    return std::make_unique<Transport>("mem", "(in process)", &ops(), endpoint.release(),
                                       DT_TRANSPORT_VERSION_3);
}

void MemFabric::fail_next_recv(int rank, int from, int32_t status)
{
    std::lock_guard lock(mutex_);
    ranks_[rank]->recv_faults.push_back({from, status});
}

void MemFabric::fail_next_post(int rank, int32_t status, std::string message)
{
    std::lock_guard lock(mutex_);
    ranks_[rank]->post_fault = status;
    ranks_[rank]->post_fault_message = std::move(message);
}

void MemFabric::complete_receives_at_post(int rank)
{
    std::lock_guard lock(mutex_);
    ranks_[rank]->complete_at_post = true;
}

void MemFabric::fail_next_progress(int rank, int32_t status, std::string message)
{
    std::lock_guard lock(mutex_);
    ranks_[rank]->progress_fault = status;
    ranks_[rank]->progress_fault_message = std::move(message);
}

const dt_transport_v3_t &MemFabric::ops()
{
    static const dt_transport_v3_t table = [] {
        dt_transport_v3_t t{};
        t.struct_size = sizeof(t);
        t.abi_version = DT_TRANSPORT_VERSION_3;
        t.name = "mem";
        t.init = op_init;
        t.finalize = op_finalize;
        t.isend = op_isend;
        t.irecv = op_irecv;
        t.progress = op_progress;
        t.abort = op_abort;
        t.query = plugin::host_only_query; // a host transport, as the algorithms need
        return t;
    }();
    return table;
}

int32_t MemFabric::op_init(const dt_transport_init_args_t *, void **)
{
    return DTP_ERR_UNSUPPORTED; // instances come from make_transport
}

int32_t MemFabric::op_finalize(void *instance)
{
    std::unique_ptr<Endpoint> ep(static_cast<Endpoint *>(instance));
    ep->fabric->leave(ep->rank);
    return DTP_OK;
}

int32_t MemFabric::op_abort(void *instance)
{
    auto *ep = static_cast<Endpoint *>(instance);
    ep->fabric->leave(ep->rank);
    return DTP_OK;
}

// Caller holds mutex_.
int32_t MemFabric::check_post(int rank, int peer)
{
    RankState &me = *ranks_[rank];
    if (me.post_fault != 0) {
        int32_t status = me.post_fault;
        me.post_fault = 0;
        set_last_error(me.post_fault_message);
        return status;
    }
    if (peer < 0 || peer >= size()) {
        set_last_error(cat("mem: peer ", peer, " out of range [0, ", size(), ")"));
        return DTP_ERR_INVALID_ARGUMENT;
    }
    if (me.gone) {
        set_last_error("mem: transport was aborted");
        return DTP_ERR_ABORTED;
    }
    return DTP_OK;
}

// Caller holds mutex_. Copies into a posted receive and queues its completion.
void MemFabric::deliver(RankState &to, PostedRecv recv, int src, const void *data, size_t len)
{
    if (len > recv.cap) {
        to.done.push_back({recv.req, DTP_ERR_PROTOCOL, src, 0});
    } else {
        if (len > 0)
            std::memcpy(recv.buf, data, len);
        to.done.push_back({recv.req, DTP_OK, src, len});
    }
    to.cv.notify_all();
}

// Caller holds mutex_. The tcp plugin's way with a message that was already here.
int32_t MemFabric::deliver_now(PostedRecv recv, int src, const std::vector<std::byte> &data)
{
    recv.req->peer = src;
    if (data.size() > recv.cap) {
        set_last_error(cat("mem: rank ", src, " sent ", data.size(), " bytes, but the receive "
                           "posted ", recv.cap, " bytes"));
        recv.req->bytes = 0;
        recv.req->status = DTP_ERR_PROTOCOL;
        return DTP_ERR_PROTOCOL;
    }
    if (!data.empty())
        std::memcpy(recv.buf, data.data(), data.size());
    recv.req->bytes = data.size();
    recv.req->status = DTP_OK;
    return DTP_OK;
}

int32_t MemFabric::op_isend(void *instance, int32_t peer, uint64_t tag, const void *buf,
                            size_t len, dt_transport_request_t *req)
{
    auto *ep = static_cast<Endpoint *>(instance);
    MemFabric &f = *ep->fabric;
    std::lock_guard lock(f.mutex_);
    if (int32_t rc = f.check_post(ep->rank, peer); rc != DTP_OK)
        return rc;
    req->status = DTP_INPROGRESS;
    RankState &me = *f.ranks_[ep->rank];
    RankState &to = *f.ranks_[peer];
    if (to.gone) {
        me.done.push_back({req, DTP_ERR_PEER_LOST, peer, 0});
        return DTP_OK;
    }
    bool matched = false;
    for (auto it = to.posted.begin(); it != to.posted.end(); ++it) {
        if (it->src == ep->rank && it->tag == tag) {
            PostedRecv recv = *it;
            to.posted.erase(it);
            f.deliver(to, recv, ep->rank, buf, len);
            matched = true;
            break;
        }
    }
    if (!matched) {
        const auto *bytes = static_cast<const std::byte *>(buf);
        to.unexpected.push_back({ep->rank, tag, std::vector<std::byte>(bytes, bytes + len)});
    }
    me.done.push_back({req, DTP_OK, peer, len});
    return DTP_OK;
}

int32_t MemFabric::op_irecv(void *instance, int32_t peer, uint64_t tag, void *buf,
                            size_t len, dt_transport_request_t *req)
{
    auto *ep = static_cast<Endpoint *>(instance);
    MemFabric &f = *ep->fabric;
    std::lock_guard lock(f.mutex_);
    if (int32_t rc = f.check_post(ep->rank, peer); rc != DTP_OK)
        return rc;
    req->status = DTP_INPROGRESS;
    RankState &me = *f.ranks_[ep->rank];
    for (auto it = me.recv_faults.begin(); it != me.recv_faults.end(); ++it) {
        if (it->from == peer) {
            me.done.push_back({req, it->status, peer, 0});
            me.recv_faults.erase(it);
            return DTP_OK;
        }
    }
    PostedRecv recv{peer, tag, buf, len, req};
    for (auto it = me.unexpected.begin(); it != me.unexpected.end(); ++it) {
        if (it->src == peer && it->tag == tag) {
            Message msg = std::move(*it);
            me.unexpected.erase(it);
            if (me.complete_at_post)
                return f.deliver_now(recv, peer, msg.data);
            f.deliver(me, recv, peer, msg.data.data(), msg.data.size());
            return DTP_OK;
        }
    }
    if (f.ranks_[peer]->gone)
        me.done.push_back({req, DTP_ERR_PEER_LOST, peer, 0});
    else
        me.posted.push_back(recv);
    return DTP_OK;
}

int32_t MemFabric::op_progress(void *instance, int32_t timeout_ms)
{
    auto *ep = static_cast<Endpoint *>(instance);
    MemFabric &f = *ep->fabric;
    std::unique_lock lock(f.mutex_);
    RankState &me = *f.ranks_[ep->rank];
    if (me.progress_fault != 0) {
        int32_t status = me.progress_fault;
        me.progress_fault = 0;
        set_last_error(me.progress_fault_message);
        return status;
    }
    if (me.done.empty() && timeout_ms > 0)
        me.cv.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                       [&] { return !me.done.empty(); });
    for (const Completion &c : me.done) {
        c.req->peer = c.peer;
        c.req->bytes = c.bytes;
        c.req->status = c.status;
    }
    me.done.clear();
    return DTP_OK;
}

// The rank leaves: its own pending requests fail with ABORTED now (on its thread), and
// every receive another rank posted from it fails with PEER_LOST.
void MemFabric::leave(int rank)
{
    std::lock_guard lock(mutex_);
    RankState &me = *ranks_[rank];
    if (me.gone)
        return;
    me.gone = true;
    for (const Completion &c : me.done) {
        c.req->peer = c.peer;
        c.req->bytes = c.bytes;
        c.req->status = c.status == DTP_OK ? DTP_OK : DTP_ERR_ABORTED;
    }
    me.done.clear();
    for (const PostedRecv &p : me.posted)
        p.req->status = DTP_ERR_ABORTED;
    me.posted.clear();
    for (int r = 0; r < size(); ++r) {
        RankState &other = *ranks_[r];
        for (auto it = other.posted.begin(); it != other.posted.end();) {
            if (it->src == rank) {
                other.done.push_back({it->req, DTP_ERR_PEER_LOST, rank, 0});
                it = other.posted.erase(it);
            } else {
                ++it;
            }
        }
        other.cv.notify_all();
    }
}

} // namespace dt::test
