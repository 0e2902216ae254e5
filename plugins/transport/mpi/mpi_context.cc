// SPDX-License-Identifier: Apache-2.0
#include "mpi_context.h"

#include "decimal.h"
#include "mpi_error.h"
#include "mpi_request.h"
#include "mpi_runtime.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <string>

namespace dt::mpi {
namespace {

using Clock = std::chrono::steady_clock;

// Largest MPI message: MPI counts are ints. DISTTRAIN_MPI_CHUNK_BYTES lowers it (tests use
// a small value to exercise the splitting without moving gigabytes).
size_t chunk_from_env() {
    constexpr size_t kDefault = size_t(1) << 30;
    const char *v = std::getenv("DISTTRAIN_MPI_CHUNK_BYTES");
    if (v == nullptr || *v == '\0') return kDefault;
    uint64_t n = 0;
    if (!dtp::parse_decimal(v, INT_MAX, &n) || n < 1) {
        throw MpiError(DTP_ERR_INVALID_CONFIG,
                       std::string("mpi: DISTTRAIN_MPI_CHUNK_BYTES='") + v +
                           "' is not a number of bytes from 1 to " + std::to_string(INT_MAX) +
                           " written in decimal digits (no spaces, sign or suffix)");
    }
    return static_cast<size_t>(n);
}

std::string library_version() {
    char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int len = 0;
    MPI_Get_library_version(text, &len);
    std::string s(text, static_cast<size_t>(std::max(0, len)));
    return s.substr(0, s.find_first_of(",\n"));
}

} // namespace

Context::MpiHold::MpiHold(const Host &host) { acquire_mpi(host); }
Context::MpiHold::~MpiHold() { release_mpi(); }

Context::Context(const dt_transport_init_args_t &args)
    : host_(args.host, args.services), hold_(host_), rank_(args.rank), size_(args.size),
      chunk_(chunk_from_env()) {
    int mpi_rank = -1, mpi_size = -1;
    check(MPI_Comm_rank(MPI_COMM_WORLD, &mpi_rank), "MPI_Comm_rank");
    check(MPI_Comm_size(MPI_COMM_WORLD, &mpi_size), "MPI_Comm_size");
    if (mpi_rank != rank_ || mpi_size != size_) {
        throw MpiError(DTP_ERR_INVALID_CONFIG,
                       "mpi: libdisttrain found rank " + std::to_string(rank_) + " of " +
                           std::to_string(size_) + ", but MPI says rank " +
                           std::to_string(mpi_rank) + " of " + std::to_string(mpi_size) +
                           "; unset DISTTRAIN_RANK/DISTTRAIN_SIZE (and params.rank/size) so "
                           "the ranks come from mpirun, or choose tcp");
    }
    tags_ = std::make_unique<TagSpace>(); // collective: every rank gets here in order
    host_.log(DT_LOG_DEBUG, "rank " + std::to_string(rank_) + " of " + std::to_string(size_) +
                                " on " + library_version() + ", MPI_TAG_UB " +
                                std::to_string(tags_->tag_ub()) + ", chunk " +
                                std::to_string(chunk_) + " bytes");
}

Context::~Context() {
    drop_pending();
    tags_.reset(); // frees the communicators; MPI itself stays up (mpi_runtime.h)
}

void Context::check_args(int32_t peer, const void *buf, size_t len,
                         const dt_transport_request_t *req) const {
    if (req == nullptr) throw MpiError(DTP_ERR_INVALID_ARGUMENT, "mpi: request is NULL");
    if (peer < 0 || peer >= size_) {
        throw MpiError(DTP_ERR_INVALID_ARGUMENT,
                       "mpi: peer " + std::to_string(peer) + " is not a rank of this job "
                       "(size " + std::to_string(size_) + ")");
    }
    if (buf == nullptr && len > 0) {
        throw MpiError(DTP_ERR_INVALID_ARGUMENT,
                       "mpi: buffer is NULL but length is " + std::to_string(len));
    }
}

int32_t Context::isend(int32_t peer, uint64_t tag, const void *buf, size_t len,
                       dt_transport_request_t *req) {
    check_args(peer, buf, len, req);
    start_request(req, peer);
    if (aborted_) {
        complete_request(req, DTP_ERR_ABORTED, 0);
        return DTP_ERR_ABORTED;
    }
    auto p = std::make_unique<Pending>();
    p->kind = Kind::send;
    p->req = req;
    p->peer = peer;
    p->done_bytes = len;
    p->posted = true;
    TagSpace::Mapped where = tags_->map(tag);
    // Below the chunk size one message; else full chunks and a shorter last one (maybe
    // empty), which tells the receiver where the message ends.
    const char *data = static_cast<const char *>(buf);
    auto post = [&](size_t off, size_t n) {
        MPI_Request r = MPI_REQUEST_NULL;
        int rc = MPI_Isend(data + off, static_cast<int>(n), MPI_BYTE, peer, where.tag,
                           where.comm, &r);
        if (rc != MPI_SUCCESS) {
            if (!p->mpi.empty()) {
                // Part of the message is on its way: this stream is broken for good.
                pending_.push_back(std::move(p));
                abort();
            } else {
                complete_request(req, status_of(rc), 0);
            }
            check(rc, "MPI_Isend");
        }
        p->mpi.push_back(r);
    };
    size_t off = 0;
    do {
        size_t n = std::min(chunk_, len - off);
        post(off, n);
        off += n;
        // An exact multiple of the chunk size: the empty terminator still follows.
        if (n == chunk_ && off == len) post(off, 0);
    } while (off < len);
    pending_.push_back(std::move(p));
    return DTP_INPROGRESS;
}

int32_t Context::irecv(int32_t peer, uint64_t tag, void *buf, size_t len,
                       dt_transport_request_t *req) {
    check_args(peer, buf, len, req);
    start_request(req, peer);
    if (aborted_) {
        complete_request(req, DTP_ERR_ABORTED, 0);
        return DTP_ERR_ABORTED;
    }
    auto p = std::make_unique<Pending>();
    p->kind = Kind::recv;
    p->req = req;
    p->buf = static_cast<char *>(buf);
    p->cap = len;
    p->where = tags_->map(tag);
    p->peer = peer;
    p->chunked = len >= chunk_;
    Key key{p->where.comm, peer, p->where.tag};
    auto blocked = blocked_.find(key);
    if (blocked != blocked_.end()) {
        blocked->second.push_back(p.get()); // posted when the chunked receive ahead ends
    } else {
        post_recv_chunk(*p);
        if (p->chunked) blocked_[key]; // later receives on this key wait for this one
    }
    pending_.push_back(std::move(p));
    return DTP_INPROGRESS;
}

void Context::post_recv_chunk(Pending &p) {
    size_t want = p.chunked ? std::min(chunk_, p.cap - p.done_bytes) : p.cap;
    MPI_Request r = MPI_REQUEST_NULL;
    int rc = MPI_Irecv(p.buf + p.done_bytes, static_cast<int>(want), MPI_BYTE, p.peer,
                       p.where.tag, p.where.comm, &r);
    p.posted = true;
    p.mpi.assign(1, r);
    if (rc != MPI_SUCCESS) {
        p.mpi.assign(1, MPI_REQUEST_NULL);
        fail(p, status_of(rc), "mpi: MPI_Irecv from rank " + std::to_string(p.peer) +
                                   " failed: " + mpi_error_text(rc));
    }
}

// A request that MPI failed: it completes with the status (testsome hands `why` to the
// core then), and the wait for the other ranks at exit gets a time limit (mpi_runtime.h).
void Context::fail(Pending &p, int32_t status, const std::string &why) {
    mark_failed();
    if (p.error == DTP_OK) {
        p.error = status;
        p.why = why;
        host_.log(DT_LOG_DEBUG, why);
    }
}

void Context::on_complete(Pending &p, size_t index, const MPI_Status &st) {
    p.mpi[index] = MPI_REQUEST_NULL;
    if (st.MPI_ERROR != MPI_SUCCESS) {
        std::string who = p.kind == Kind::collective ? std::string(p.what)
                          : p.kind == Kind::send     ? "send to rank " + std::to_string(p.peer)
                                                     : "receive from rank " + std::to_string(p.peer);
        if (status_of(st.MPI_ERROR) == DTP_ERR_PROTOCOL && p.kind == Kind::recv) {
            fail(p, DTP_ERR_PROTOCOL,
                 "mpi: the message from rank " + std::to_string(p.peer) +
                     " is larger than the " + std::to_string(p.cap) +
                     "-byte receive posted for it (" + mpi_error_text(st.MPI_ERROR) +
                     "); do all ranks pass the same count?");
        } else {
            fail(p, status_of(st.MPI_ERROR), "mpi: " + who + " failed: " +
                                                 mpi_error_text(st.MPI_ERROR));
        }
        return;
    }
    if (p.kind != Kind::recv) return;
    int count = 0;
    MPI_Get_count(&st, MPI_BYTE, &count);
    p.done_bytes += static_cast<size_t>(std::max(0, count));
    // A full chunk means another (maybe empty) one follows.
    if (p.chunked && static_cast<size_t>(count) == chunk_ && p.error == DTP_OK) {
        post_recv_chunk(p);
    }
}

bool Context::finished(const Pending &p) const {
    if (!p.posted) return false;
    return std::all_of(p.mpi.begin(), p.mpi.end(),
                       [](MPI_Request r) { return r == MPI_REQUEST_NULL; });
}

void Context::release_key(const Pending &p) {
    auto it = blocked_.find(Key{p.where.comm, p.peer, p.where.tag});
    if (it == blocked_.end()) return;
    auto &queue = it->second;
    while (!queue.empty()) {
        Pending *next = queue.front();
        queue.pop_front();
        post_recv_chunk(*next);
        if (next->chunked) return; // it holds the key now; the rest keep waiting
    }
    blocked_.erase(it);
}

int Context::testsome() {
    reqs_.clear();
    owners_.clear();
    for (auto &p : pending_) {
        for (size_t i = 0; i < p->mpi.size(); ++i) {
            if (p->mpi[i] == MPI_REQUEST_NULL) continue;
            reqs_.push_back(p->mpi[i]);
            owners_.emplace_back(p.get(), i);
        }
    }
    int completed = 0;
    if (!reqs_.empty()) {
        indices_.resize(reqs_.size());
        statuses_.resize(reqs_.size());
        int out = 0;
        int rc = MPI_Testsome(static_cast<int>(reqs_.size()), reqs_.data(), &out,
                              indices_.data(), statuses_.data());
        if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) check(rc, "MPI_Testsome");
        if (out == MPI_UNDEFINED) out = 0;
        for (int k = 0; k < out; ++k) {
            MPI_Status &st = statuses_[static_cast<size_t>(k)];
            // MPI fills MPI_ERROR only when it reports MPI_ERR_IN_STATUS.
            if (rc == MPI_SUCCESS) st.MPI_ERROR = MPI_SUCCESS;
            auto [p, i] = owners_[static_cast<size_t>(indices_[static_cast<size_t>(k)])];
            on_complete(*p, i, st);
        }
        completed = out;
    }
    // Complete the core's requests that have nothing left in MPI.
    for (size_t i = 0; i < pending_.size();) {
        Pending &p = *pending_[i];
        if (!finished(p)) {
            ++i;
            continue;
        }
        if (p.kind == Kind::recv) {
            p.req->peer = p.peer;
            if (p.chunked) release_key(p); // it held its key: post who waited behind it
        }
        // The core reads a failed request's message from the progress call that completed
        // it (services->set_error).
        if (p.error != DTP_OK) host_.set_error(p.why);
        complete_request(p.req, p.error, p.error == DTP_OK ? p.done_bytes : 0);
        pending_[i] = std::move(pending_.back());
        pending_.pop_back();
    }
    return completed;
}

int32_t Context::progress(int32_t timeout_ms) {
    const auto deadline = Clock::now() + std::chrono::milliseconds(std::max(0, timeout_ms));
    for (;;) {
        if (testsome() > 0 || timeout_ms == 0 || pending_.empty()) return DTP_OK;
        if (timeout_ms > 0 && Clock::now() >= deadline) return DTP_OK;
        // MPI has no wait with a timeout; yield so that oversubscribed ranks on one core
        // (and MPI's own progress threads) get to run.
        sched_yield();
    }
}

// The core's last sends (its notice to the peers that this rank leaves) may still be in
// flight when a clean exit finalizes the transport. drop_pending() cannot cancel a send
// that matched, and leaves it to MPI; MPI is then not finalised (mpi_runtime.h), and
// mpirun reports the rank as exiting improperly although the job succeeded (seen once in
// the conformance suite on a loaded host).
// Receives posted ahead stay: drop_pending cancels those.
void Context::finish_sends(std::chrono::milliseconds limit) {
    const auto deadline = Clock::now() + limit;
    auto sending = [&] {
        return std::any_of(pending_.begin(), pending_.end(),
                           [](const auto &p) { return p->kind == Kind::send; });
    };
    while (sending() && Clock::now() < deadline) {
        if (testsome() == 0) sched_yield();
    }
}

// The core aborts after a timeout, a failed request or a broken collective: some peer
// may never come to exit, so the wait for them there gets a time limit whatever is left.
void Context::abort() {
    mark_failed();
    drop_pending();
}

namespace {

// How long dropping the pending requests lets MPI finish the ones it was asked to cancel.
// Open MPI never cancels a send once posted (its ob1 layer refuses); a small one still
// completes on its own as MPI progresses it, but one MPI_Test does not always get that
// far on a loaded host, and each send left unfinished costs the rank its MPI_Finalize
// (mpi_runtime.h). A send that needs its receiver (a large one to a stopped rank) is
// left to MPI after this: the wait only delays the error that made the core abort.
constexpr auto kCancelGrace = std::chrono::milliseconds(200);

} // namespace

void Context::drop_pending() {
    if (aborted_) return;
    aborted_ = true;
    bool clean = true;
    std::vector<MPI_Request *> cancelled;
    for (auto &p : pending_) {
        for (MPI_Request &r : p->mpi) {
            if (r == MPI_REQUEST_NULL) continue;
            if (p->kind == Kind::collective) {
                // MPI forbids cancelling or freeing a non-blocking collective: leave it.
                clean = false;
                continue;
            }
            MPI_Cancel(&r);
            cancelled.push_back(&r);
        }
    }
    // A request that completes, cancelled or not, is set to MPI_REQUEST_NULL by MPI_Test.
    const auto deadline = Clock::now() + kCancelGrace;
    for (;;) {
        bool unfinished = false;
        for (MPI_Request *r : cancelled) {
            if (*r == MPI_REQUEST_NULL) continue;
            int flag = 0;
            MPI_Test(r, &flag, MPI_STATUS_IGNORE);
            unfinished = unfinished || *r != MPI_REQUEST_NULL;
        }
        if (!unfinished || Clock::now() >= deadline) break;
        sched_yield();
    }
    for (MPI_Request *r : cancelled) {
        if (*r == MPI_REQUEST_NULL) continue;
        // Still running: MPI finishes it on its own; we only stop watching it.
        MPI_Request_free(r);
        clean = false;
    }
    for (auto &p : pending_) complete_request(p->req, DTP_ERR_ABORTED, 0);
    pending_.clear();
    blocked_.clear();
    if (!clean) {
        host_.log(DT_LOG_INFO, "requests MPI could not cancel were left to it; MPI will not "
                               "be finalised at exit (mpirun may report this rank as exiting "
                               "improperly)");
        mark_abandoned();
    }
}

} // namespace dt::mpi
