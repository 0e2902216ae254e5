// SPDX-License-Identifier: Apache-2.0
// Liveness and failure notices between engines. Every rank keeps one receive posted to
// every peer on a control tag. A peer that closes its connection (killed, crashed) fails
// that receive at once, so a lost rank is noticed within a cycle even by ranks that are
// not exchanging data with it. A rank that breaks tells its peers why before it leaves,
// so they report the root cause ("rank 3 was lost") rather than the messenger.
#include "algorithms/comm.h"
#include "runtime/engine.h"
#include "runtime/error.h"
#include "runtime/signature.h"
#include "telemetry/log.h"

#include <cstring>

namespace dt {

void Engine::post_control_receives()
{
    control_.resize(size_);
    for (int peer = 0; peer < size_; ++peer) {
        if (peer == rank_)
            continue;
        control_[peer] = std::make_unique<ControlRecv>();
        auto &c = *control_[peer];
        c.raw.status = DTP_INPROGRESS;
        int32_t rc = transport_.ops().irecv(transport_.instance(), peer, kControlTag, c.buf,
                                            sizeof c.buf, &c.raw);
        if (rc < 0)
            throw_error(static_cast<dt_status_t>(rc), "cannot post the control receive from "
                        "rank ", peer, ": ", last_error());
    }
}

namespace {

// A notice: int32 status, then the message.
std::string notice_text(const char *buf, size_t len)
{
    if (len < sizeof(int32_t))
        return "(malformed notice)";
    return std::string(buf + sizeof(int32_t), len - sizeof(int32_t));
}

// The status a peer's notice carries: DT_OK for a clean exit (see loop()), else why its
// context ended; DT_ERR_PEER_LOST when the notice is malformed.
int32_t notice_sent_status(const char *buf, size_t len)
{
    int32_t s = DT_ERR_PEER_LOST;
    if (len >= sizeof s)
        std::memcpy(&s, buf, sizeof s);
    return s;
}

// What a peer's notice says, and what a rank fails with when it ends its operation: the
// peer is gone for this context, unless the ranks disagree on a call, which is every
// rank's error alike.
algo::Comm::Departure departure_of(const char *buf, size_t len)
{
    const int32_t sent = notice_sent_status(buf, len);
    algo::Comm::Departure left;
    left.cause = sent < 0 ? static_cast<dt_status_t>(sent) : DT_ERR_PEER_LOST;
    left.status = left.cause == DT_ERR_MISMATCH ? DT_ERR_MISMATCH : DT_ERR_PEER_LOST;
    left.notice = notice_text(buf, len);
    left.clean = sent == DT_OK;
    return left;
}

} // namespace

algo::Comm::Departure Engine::departure_notice(int peer) const
{
    if (peer < 0 || peer >= static_cast<int>(control_.size()) || !control_[peer])
        return {};
    const auto &c = *control_[peer];
    if (c.raw.status == DTP_INPROGRESS || c.raw.status == DTP_ERR_ABORTED)
        return {}; // still in, or this rank's own transport was aborted
    if (c.raw.status != DTP_OK) {
        algo::Comm::Departure left;
        left.lost = true;
        left.notice = cat("the connection to it failed (",
                          dt_status_string(static_cast<dt_status_t>(c.raw.status)),
                          "): the process died or its network failed");
        return left;
    }
    return departure_of(c.buf, c.raw.bytes);
}

bool Engine::first_notice_clean() const
{
    // The peer check_control names first: the lowest rank whose notice arrived.
    for (const auto &c : control_)
        if (c && c->raw.status == DTP_OK)
            return departure_of(c->buf, c->raw.bytes).clean;
    return false;
}

std::vector<int> Engine::failed_control_receives() const
{
    std::vector<int> lost;
    for (int peer = 0; peer < static_cast<int>(control_.size()); ++peer) {
        if (!control_[peer])
            continue;
        int32_t s = control_[peer]->raw.status;
        if (s != DTP_INPROGRESS && s != DTP_OK && s != DTP_ERR_ABORTED)
            lost.push_back(peer);
    }
    return lost;
}

void Engine::check_control()
{
    std::vector<int> lost;
    for (int peer = 0; peer < size_; ++peer) {
        if (!control_[peer] || control_[peer]->raw.status == DTP_INPROGRESS)
            continue;
        const auto &c = *control_[peer];
        if (c.raw.status == DTP_OK) {
            const algo::Comm::Departure left = departure_of(c.buf, c.raw.bytes);
            throw PeerLeft(left.status, cat("rank ", peer, " ", left.verb(), ": ",
                                            left.notice));
        }
        if (c.raw.status != DTP_ERR_ABORTED)
            lost.push_back(peer);
    }
    if (!lost.empty())
        throw_error(DT_ERR_PEER_LOST, "lost the connection to ", ranks_phrase(lost),
                    " (the process died or its network failed)");
}

std::pair<dt_status_t, std::string> Engine::root_cause(dt_status_t status,
                                                       const std::string &message)
{
    if (status == DT_ERR_ABORTED) {
        if (auto err = error())
            return *err;
    }
    // A peer's own notice explains best. A lost connection explains a lost peer, but not
    // an error this rank found in what arrived (a malformed or mis-sized message makes the
    // transport close that connection itself, so the closure is a consequence).
    bool found_here = status == DT_ERR_PROTOCOL || status == DT_ERR_MISMATCH ||
                      status == DT_ERR_TIMEOUT;
    try {
        check_control();
    } catch (const PeerLeft &e) {
        return {e.status(), e.what()};
    } catch (const Error &e) {
        if (!found_here)
            return {e.status(), e.what()};
    }
    return {status, message};
}

void Engine::notify_peers(dt_status_t status, const std::string &message)
{
    if (control_.empty())
        return;
    std::string payload(sizeof(int32_t), '\0');
    int32_t s = status;
    std::memcpy(payload.data(), &s, sizeof s);
    payload += message.substr(0, sizeof(ControlRecv::buf) - sizeof(int32_t));

    std::vector<dt_transport_request_t> sends(size_);
    bool any = false;
    for (int peer = 0; peer < size_; ++peer) {
        sends[peer].status = DTP_OK;
        // A peer whose own notice arrived still hears ours: it may be waiting for this
        // rank to leave (await_peers_leaving). One whose connection failed cannot.
        if (!control_[peer] || (control_[peer]->raw.status != DTP_INPROGRESS &&
                                control_[peer]->raw.status != DTP_OK))
            continue;
        sends[peer].status = DTP_INPROGRESS;
        if (transport_.ops().isend(transport_.instance(), peer, kControlTag, payload.data(),
                                   payload.size(), &sends[peer]) < 0)
            sends[peer].status = DTP_ERR_TRANSPORT;
        any = true;
    }
    if (!any)
        return;
    notified_ = true;
    // Best effort and brief: a peer that cannot take the notice learns from the closed
    // connection instead.
    auto until = Clock::now() + std::chrono::milliseconds(200);
    auto busy = [&] {
        for (const auto &r : sends)
            if (r.status == DTP_INPROGRESS)
                return true;
        return false;
    };
    while (busy() && Clock::now() < until)
        if (transport_.ops().progress(transport_.instance(), 1) < 0)
            break;
    if (busy()) {
        DT_LOG(debug, "engine", "a notice was not taken within 200 ms; aborting the transport");
        transport_.abort(); // the plugin must forget sends whose buffer is going away
    }
}

// A peer may still be finishing its last collective with data this rank sent, and some
// transports drop what the peer has not read yet when the connection closes under it
// (UCX over TCP can report the peer lost before it delivers the bytes that preceded the
// close). So a clean exit keeps the transport open until every peer has left too (its
// notice arrived, or its connection closed), for a bounded time: a peer that goes on
// working without this rank (another group, user code) costs this rank at most the wait.
void Engine::await_peers_leaving()
{
    constexpr auto kLimit = std::chrono::seconds(5);
    auto remaining = [&] {
        std::vector<int> ranks;
        for (int peer = 0; peer < static_cast<int>(control_.size()); ++peer)
            if (control_[peer] && control_[peer]->raw.status == DTP_INPROGRESS)
                ranks.push_back(peer);
        return ranks;
    };
    const auto start = Clock::now();
    while (!remaining().empty() && Clock::now() - start < kLimit)
        if (transport_.ops().progress(transport_.instance(), 10) < 0)
            return;
    auto still = remaining();
    DT_LOG(debug, "engine", "waited ",
           std::chrono::duration<double, std::milli>(Clock::now() - start).count(),
           " ms for the peers to leave");
    if (!still.empty())
        DT_LOG(info, "engine", "closing the transport while ", ranks_phrase(still),
               " still run; they did not leave within ", kLimit.count(), " s");
}

} // namespace dt
