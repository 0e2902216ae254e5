// SPDX-License-Identifier: Apache-2.0
// Collectives in flight: queued behind the communicator, recorded as an event on the
// plugin's stream, completed when cudaEventQuery says so, and failed together when NCCL
// reports an asynchronous error or the core aborts.
#include "nccl_context.h"

#include "plugin_request.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include <sys/prctl.h>

namespace dt::nccl {

using dtp::complete_request;
using dtp::start_request;

int32_t Context::isend(int32_t, uint64_t, const void *, size_t, dt_transport_request_t *) {
    host_.set_error("nccl: point-to-point is not offered (the capability answer has no "
                    "p2p_memory): the core sends through its host transport");
    return DTP_ERR_UNSUPPORTED;
}

int32_t Context::irecv(int32_t, uint64_t, void *, size_t, dt_transport_request_t *) {
    host_.set_error("nccl: point-to-point is not offered (the capability answer has no "
                    "p2p_memory): the core receives through its host transport");
    return DTP_ERR_UNSUPPORTED;
}

// More collectives than this in flight at once are rare; their extra events are destroyed.
constexpr size_t kSpareEvents = 64;

cudaError_t Context::take_event(cudaEvent_t *event) {
    if (!spare_events_.empty()) {
        *event = spare_events_.back();
        spare_events_.pop_back();
        return cudaSuccess;
    }
    return lib_.cuda.EventCreateWithFlags(event, cudaEventDisableTiming);
}

void Context::give_back_event(cudaEvent_t event, bool reached) {
    // One still pending (a failed or aborted collective) is destroyed, which CUDA defers
    // until the GPU reaches it: a later record must not be confused with it.
    if (reached && spare_events_.size() < kSpareEvents) {
        spare_events_.push_back(event);
    } else {
        lib_.cuda.EventDestroy(event);
    }
}

void Context::complete(Op &op, int32_t status, const std::string &why) {
    if (op.event != nullptr) {
        give_back_event(op.event, status == DTP_OK);
        op.event = nullptr;
    }
    if (status != DTP_OK) {
        // The core reads the reason of a failed request from the last error.
        host_.log(DT_LOG_DEBUG, why);
        host_.set_error(why);
    }
    complete_request(op.req, status, status == DTP_OK ? op.bytes : 0);
}

void Context::fail_all(int32_t status, const std::string &why) {
    while (!ops_.empty()) {
        std::unique_ptr<Op> op = std::move(ops_.front());
        ops_.pop_front();
        complete(*op, status, why);
    }
}

void Context::release_comm(bool abort) {
    if (comm_ == nullptr) return;
    OnDevice on(*this);
    if (abort) {
        lib_.nccl.CommAbort(comm_);
    } else {
        lib_.nccl.CommDestroy(comm_);
    }
    comm_ = nullptr;
}

bool Context::comm_failed() {
    if (broken_ != DTP_OK) return true;
    ncclResult_t state = ncclSuccess;
    ncclResult_t rc = lib_.nccl.CommGetAsyncError(comm_, &state);
    ncclResult_t failure = rc != ncclSuccess ? rc : state;
    if (failure == ncclSuccess || failure == ncclInProgress) return false;
    break_comm("nccl: the communicator failed: " + lib_.nccl.describe(failure, comm_));
    return true;
}

bool Context::record(Op &op) {
    cudaError_t rc = take_event(&op.event);
    if (rc == cudaSuccess) rc = lib_.cuda.EventRecord(op.event, op.stream);
    if (rc == cudaSuccess) {
        op.state = State::running;
        return true;
    }
    lib_.cuda.GetLastError();
    // Without its event nothing could ever say when the collective ends.
    break_comm(std::string("nccl: recording the completion event of ") + op.what +
               " failed: " + lib_.cuda.describe(rc));
    return false;
}

void Context::break_comm(const std::string &why) {
    broken_ = DTP_ERR_TRANSPORT;
    broken_why_ = why;
    host_.log(DT_LOG_ERROR, broken_why_);
    fail_all(broken_, broken_why_);
    release_comm(true); // a failed communicator is aborted, never reused
}

void Context::pump() {
    // Most polls find every op running: they need neither the device nor NCCL.
    if (std::all_of(ops_.begin(), ops_.end(),
                    [](const auto &op) { return op->state == State::running; }))
        return;
    OnDevice on(*this);
    for (size_t i = 0; i < ops_.size(); ++i) {
        Op &op = *ops_[i];
        if (op.state == State::running) continue;
        if (op.state == State::queued && op.batch != 0) {
            if (!op.sealed) return; // its batch is still being submitted
            if (!launch_batch(i)) return;
            continue;
        }
        if (op.state == State::enqueueing) {
            // NCCL is still enqueueing it: nothing else may start on the communicator.
            ncclResult_t state = ncclSuccess;
            ncclResult_t rc = lib_.nccl.CommGetAsyncError(comm_, &state);
            if (rc == ncclSuccess && state == ncclInProgress) return;
            if (rc != ncclSuccess || state != ncclSuccess) {
                comm_failed();
                return;
            }
            if (!record(op)) return;
            continue;
        }
        ncclResult_t rc = op.launch(op.stream);
        op.launch = nullptr;
        if (rc == ncclSuccess) {
            if (!record(op)) return;
        } else if (rc == ncclInProgress) {
            op.state = State::enqueueing;
            return;
        } else {
            break_comm(std::string("nccl: ") + op.what + " failed: " +
                       lib_.nccl.describe(rc, comm_));
            return;
        }
    }
}

// The batch's collectives are queued back to back (nothing else is submitted between
// batch_begin and batch_end), so they are ops_[first] onwards with its number.
bool Context::launch_batch(size_t first) {
    const unsigned batch = ops_[first]->batch;
    size_t end = first;
    while (end < ops_.size() && ops_[end]->batch == batch) ++end;
    ncclResult_t rc = lib_.nccl.GroupStart();
    ncclResult_t failed = rc;
    const char *what = "ncclGroupStart";
    for (size_t i = first; rc == ncclSuccess && i < end && failed == ncclSuccess; ++i) {
        Op &op = *ops_[i];
        failed = op.launch(op.stream);
        op.launch = nullptr;
        if (failed == ncclInProgress) failed = ncclSuccess;
        if (failed != ncclSuccess) what = op.what;
    }
    if (rc == ncclSuccess) {
        rc = lib_.nccl.GroupEnd(); // always, to close the group
        if (failed == ncclSuccess && rc != ncclSuccess && rc != ncclInProgress) {
            failed = rc;
            what = "ncclGroupEnd";
        }
    }
    for (size_t i = first; i < end; ++i) ops_[i]->batch = 0; // launched: plain ops now
    if (failed != ncclSuccess) {
        break_comm(std::string("nccl: a batch of ") + std::to_string(end - first) +
                   " collectives failed in " + what + ": " + lib_.nccl.describe(failed, comm_));
        return false;
    }
    if (rc == ncclInProgress) {
        // NCCL enqueues the whole group: each op records its event once that is done.
        for (size_t i = first; i < end; ++i) ops_[i]->state = State::enqueueing;
        return false;
    }
    for (size_t i = first; i < end; ++i)
        if (!record(*ops_[i])) return false;
    return true;
}

int32_t Context::batch_begin() {
    if (batch_ != 0) {
        host_.set_error("nccl: batch_begin inside a batch: end the open one first");
        return DTP_ERR_INVALID_ARGUMENT;
    }
    batch_ = ++batches_;
    if (batch_ == 0) batch_ = ++batches_; // 0 means "alone"
    return DTP_OK;
}

int32_t Context::batch_end() {
    if (batch_ == 0) {
        host_.set_error("nccl: batch_end without batch_begin");
        return DTP_ERR_INVALID_ARGUMENT;
    }
    for (auto &op : ops_)
        if (op->batch == batch_) op->sealed = true;
    batch_ = 0;
    if (broken_ != DTP_OK) {
        host_.set_error(broken_why_);
        return broken_;
    }
    pump();
    return DTP_OK;
}

cudaStream_t Context::take_launch_stream() {
    if (!launch_stream_set_) return stream_;
    launch_stream_set_ = false;
    return launch_stream_;
}

int32_t Context::submit(dt_transport_request_t *req, const char *what, size_t bytes,
                        cudaStream_t stream, std::function<ncclResult_t(cudaStream_t)> launch) {
    start_request(req, -1);
    if (broken_ != DTP_OK) {
        complete_request(req, broken_, 0);
        host_.set_error(broken_why_);
        return broken_;
    }
    auto op = std::make_unique<Op>();
    op->req = req;
    op->what = what;
    op->bytes = bytes;
    op->stream = stream;
    op->launch = std::move(launch);
    if (batch_ != 0) {
        op->batch = batch_;
        op->sealed = false;
        ops_.push_back(std::move(op));
        return DTP_INPROGRESS; // launched with its batch at batch_end
    }
    ops_.push_back(std::move(op));
    pump();
    return DTP_INPROGRESS;
}

namespace {

// How progress waits between polls: it yields for the first kSpin, since a collective of
// a few MiB on one node ends in tens of microseconds and a training step waits on hundreds
// of them, then sleeps in steps of kSleep with a timer slack of 1 us (Linux's default of
// 50 us would stretch every sleep).
constexpr auto kSpin = std::chrono::microseconds(200);
constexpr auto kSleep = std::chrono::microseconds(20);

void pause_between_polls(std::chrono::steady_clock::time_point entered) {
    if (std::chrono::steady_clock::now() - entered < kSpin) {
        std::this_thread::yield();
        return;
    }
    static thread_local bool slack_set = false;
    if (!slack_set) {
        prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL); // a failure only costs speed
        slack_set = true;
    }
    std::this_thread::sleep_for(kSleep);
}

} // namespace

int32_t Context::progress(int32_t timeout_ms) {
    // A single poll (timeout 0, the core's spin) reads no clock.
    const auto entered = timeout_ms != 0 ? std::chrono::steady_clock::now()
                                         : std::chrono::steady_clock::time_point{};
    const auto until = entered + std::chrono::milliseconds(timeout_ms);
    for (;;) {
        if (broken_ != DTP_OK) {
            host_.set_error(broken_why_);
            return broken_;
        }
        if (ops_.empty()) return DTP_OK;
        pump();
        // Completes the finished ones in order: NCCL runs a communicator's collectives in
        // the order they were launched, whichever stream each went on.
        bool done = false;
        while (!ops_.empty() && ops_.front()->state == State::running) {
            Op &op = *ops_.front();
            cudaError_t rc = lib_.cuda.EventQuery(op.event);
            if (rc == cudaErrorNotReady) break;
            if (rc == cudaSuccess) {
                complete(op, DTP_OK, "");
            } else {
                lib_.cuda.GetLastError();
                complete(op, DTP_ERR_TRANSPORT, std::string("nccl: ") + op.what +
                         " failed on the GPU: " + lib_.cuda.describe(rc));
            }
            ops_.pop_front();
            done = true;
        }
        // The communicator's asynchronous error is asked only when nothing completed: the
        // poll that sees a collective end then returns a call sooner.
        if (!done && comm_failed()) {
            host_.set_error(broken_why_);
            return broken_;
        }
        if (done || timeout_ms == 0 ||
            (timeout_ms > 0 && std::chrono::steady_clock::now() >= until)) {
            return DTP_OK;
        }
        pause_between_polls(entered);
    }
}

void Context::abort() {
    for (Context *child : children_) child->abort(); // their calls cannot finish either
    fail_all(DTP_ERR_ABORTED, "nccl: aborted");
    release_comm(true);
    if (broken_ == DTP_OK) {
        broken_ = DTP_ERR_ABORTED;
        broken_why_ = "nccl: the transport was aborted";
    }
}

void Context::finish(std::chrono::milliseconds limit) {
    if (comm_ == nullptr) return;
    if (!ops_.empty()) {
        // Work still in flight on other ranks' behalf cannot be finished cleanly.
        abort();
        return;
    }
    OnDevice on(*this);
    ncclResult_t rc = lib_.nccl.CommFinalize(comm_);
    auto until = std::chrono::steady_clock::now() + limit;
    ncclResult_t state = rc;
    while (rc == ncclSuccess || rc == ncclInProgress) {
        rc = lib_.nccl.CommGetAsyncError(comm_, &state);
        if (rc != ncclSuccess || state != ncclInProgress) break;
        if (std::chrono::steady_clock::now() >= until) break;
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    release_comm(!(rc == ncclSuccess && state == ncclSuccess));
}

Context::~Context() {
    if (parent_ != nullptr) {
        auto &siblings = parent_->children_;
        siblings.erase(std::remove(siblings.begin(), siblings.end(), this), siblings.end());
    }
    fail_all(DTP_ERR_ABORTED, "nccl: finalized with the request still pending");
    release_comm(true);
    OnDevice on(*this);
    for (cudaEvent_t event : spare_events_) lib_.cuda.EventDestroy(event);
    if (scratch_ != nullptr) lib_.cuda.Free(scratch_);
    if (stream_ != nullptr) lib_.cuda.StreamDestroy(stream_);
}

} // namespace dt::nccl
