// SPDX-License-Identifier: Apache-2.0
// Running what negotiation found ready, in the agreed order: consecutive small
// allreduces of the same dtype, operator and memory type (fusion.h) are packed into one
// buffer (at most DISTTRAIN_FUSION_THRESHOLD bytes, so fusion memory is bounded) and run
// as one host allreduce. Host tensors are copied with memcpy into the fusion buffer;
// device tensors with the memory provider's copies into a pinned staging buffer, on each
// tensor's producer stream, with one wait for all copies in and one for all copies out.
// Where a device transport carries the members' device calls, a device batch instead
// runs there natively, issued as one batch (Router::run_device_batch).
#include "algorithms/algorithms.h"
#include "reduce/reduce.h"
#include "runtime/engine.h"
#include "runtime/error.h"
#include "runtime/fusion.h"
#include "runtime/identity.h"

#include <algorithm>
#include <cstring>

namespace dt {

namespace {

// Adds stream to the set of streams a batch's copies went on; returns it. Usually every
// tensor of a batch goes on the same one, so a wait per stream is one wait.
void *add_stream(std::vector<void *> &streams, void *stream)
{
    if (std::find(streams.begin(), streams.end(), stream) == streams.end())
        streams.push_back(stream);
    return stream;
}

} // namespace

void Engine::execute(std::vector<Ready> &ready)
{
    if (timeline_)
        timeline_->marker("CYCLE", Clock::now(), cat(R"("ready":)", ready.size()));
    size_t i = 0;
    while (i < ready.size()) {
        if (fusion_threshold_ > 0 && fuses(ready[i].sig)) {
            i = run_fused(ready, i);
        } else {
            run_one(ready[i]);
            ++i;
        }
    }
}

void Engine::run_one(Ready &r)
{
    if (!r.member) {
        next_op_tag(r.sig.group); // keep the tag sequence in step with the members
        return;
    }
    auto start = Clock::now();
    if (timeline_) {
        timeline_->phase(r.name, "NEGOTIATE", r.submitted, r.ready_at);
        timeline_->phase(r.name, "QUEUE", r.ready_at, start);
    }
    OpDesc desc;
    std::vector<uint8_t> scratch;
    if (r.op) {
        desc = r.op->desc();
    } else {
        // A joined rank takes part with the identity and keeps nothing.
        desc.kind = r.sig.kind;
        desc.name = r.name;
        desc.count = r.sig.count;
        desc.dtype = r.sig.dtype;
        desc.op = r.sig.op;
        desc.group = r.sig.group;
        scratch.resize(bytes_of(r.sig));
        fill_identity(scratch.data(), desc.count, desc.dtype, desc.op);
        desc.sendbuf = desc.recvbuf = scratch.data();
    }
    std::vector<int> ranks = members(r.sig.group);
    algo::Comm c = comm(next_op_tag(r.sig.group), op_kind_name(desc.kind), &ranks);
    const char *path = nullptr;
    try {
        path = router_.run(
            c, desc, r.sig.group == 0 ? active_ranks() : static_cast<int>(ranks.size()));
    } catch (const AgreedFailure &e) {
        // Every member failed it alike before its data moved: the context goes on.
        complete(r, e.status(), e.what());
        return;
    }
    auto end = Clock::now();
    if (timeline_)
        timeline_->phase(r.name, op_kind_name(desc.kind), start, end,
                         cat(R"("bytes":)", bytes_of(r.sig), R"(,"path":")", path, '"'));
    complete(r, DT_OK, {});
}

size_t Engine::run_fused(std::vector<Ready> &ready, size_t first)
{
    size_t total = bytes_of(ready[first].sig);
    size_t last = first + 1;
    while (last < ready.size() && fusable(ready[first].sig, ready[last].sig) &&
           total + bytes_of(ready[last].sig) <= fusion_threshold_) {
        total += bytes_of(ready[last].sig);
        ++last;
    }
    if (last - first == 1 || total > fusion_threshold_) {
        run_one(ready[first]);
        return first + 1;
    }
    if (!ready[first].member) {
        next_op_tag(ready[first].sig.group); // the members run this batch as one operation
        return last;
    }

    const Signature &sig = ready[first].sig;
    const bool device = sig.memory == DT_MEMORY_DEVICE;
    routing::Staging *staging = device ? router_.staging() : nullptr;
    if (device && staging == nullptr)
        throw_error(DT_ERR_INTERNAL, "a fused batch of device allreduces reached the engine "
                    "of a context without a memory provider");
    std::vector<int> ranks = members(sig.group);
    algo::Comm c = comm(next_op_tag(sig.group), "allreduce", &ranks);
    const int divisor = sig.group == 0 ? active_ranks() : static_cast<int>(ranks.size());
    if (device && !joined_mode() && run_device_batch(ready, first, last, c, divisor))
        return last;
    uint8_t *buffer = nullptr;
    std::vector<void *> streams; // device: the streams the copies went on, to wait for
    auto start = Clock::now();
    try {
        if (device) {
            buffer = static_cast<uint8_t *>(staging->buffer(0, total));
        } else {
            if (fusion_buffer_.size() < total)
                fusion_buffer_.resize(total);
            buffer = fusion_buffer_.data();
        }
        size_t offset = 0;
        for (size_t i = first; i < last; ++i) {
            Ready &r = ready[i];
            size_t bytes = bytes_of(r.sig);
            if (timeline_) {
                timeline_->phase(r.name, "NEGOTIATE", r.submitted, r.ready_at);
                timeline_->phase(r.name, "QUEUE", r.ready_at, start);
            }
            if (!r.op)
                fill_identity(buffer + offset, r.sig.count, r.sig.dtype, r.sig.op);
            else if (bytes > 0 && device)
                staging->to_host(buffer + offset, r.op->desc().sendbuf, bytes,
                                 add_stream(streams, staging->after(r.op->desc().stream,
                                                                    r.op->desc().ready.get())));
            else if (bytes > 0)
                std::memcpy(buffer + offset, r.op->desc().sendbuf, bytes);
            offset += bytes;
        }
        for (void *s : streams)
            staging->wait(s, c, "fused device allreduce");
    } catch (const Error &e) {
        c.fail_collective(e.status(), e.what()); // the peers must not wait for this rank
    }
    auto copied_in = Clock::now();

    OpDesc fused;
    fused.kind = OpKind::allreduce;
    fused.name = "fusion";
    fused.sendbuf = fused.recvbuf = buffer;
    fused.count = total / dt_dtype_size(sig.dtype);
    fused.dtype = sig.dtype;
    fused.op = sig.op;
    fused.group = sig.group;
    const char *path = router_.run(c, fused, divisor);
    auto reduced = Clock::now();

    try {
        size_t offset = 0;
        streams.clear();
        for (size_t i = first; i < last; ++i) {
            Ready &r = ready[i];
            size_t bytes = bytes_of(r.sig);
            if (r.op && bytes > 0 && device)
                staging->to_device(r.op->desc().recvbuf, buffer + offset, bytes,
                                   add_stream(streams,
                                              staging->return_stream(r.op->desc().stream)));
            else if (r.op && bytes > 0)
                std::memcpy(r.op->desc().recvbuf, buffer + offset, bytes);
            offset += bytes;
        }
        for (void *s : streams)
            staging->wait(s, c, "fused device allreduce");
    } catch (const Error &e) {
        c.fail_collective(e.status(), e.what());
    }
    auto end = Clock::now();
    if (timeline_) {
        timeline_->marker("FUSION", start,
                          cat(R"("tensors":)", last - first, R"(,"bytes":)", total));
        for (size_t i = first; i < last; ++i) {
            timeline_->phase(ready[i].name, "MEMCPY_IN_FUSION_BUFFER", start, copied_in);
            timeline_->phase(ready[i].name, "allreduce", copied_in, reduced,
                             cat(R"("fused_bytes":)", total, R"(,"path":")", path, '"'));
            timeline_->phase(ready[i].name, "MEMCPY_OUT_FUSION_BUFFER", reduced, end);
        }
    }
    for (size_t i = first; i < last; ++i)
        complete(ready[i], DT_OK, {});
    return last;
}

// A device transport runs the batch natively, each tensor in place (no staging copies),
// issued together and waited for together. False, with nothing run, where it cannot.
bool Engine::run_device_batch(std::vector<Ready> &ready, size_t first, size_t last,
                              algo::Comm &c, int divisor)
{
    std::vector<const OpDesc *> batch;
    for (size_t i = first; i < last; ++i) {
        if (!ready[i].op)
            return false;
        batch.push_back(&ready[i].op->desc());
    }
    auto start = Clock::now();
    const char *path = router_.run_device_batch(c, batch, divisor);
    if (path == nullptr)
        return false;
    auto end = Clock::now();
    if (timeline_) {
        timeline_->marker("DEVICE_BATCH", start, cat(R"("tensors":)", last - first));
        for (size_t i = first; i < last; ++i) {
            timeline_->phase(ready[i].name, "NEGOTIATE", ready[i].submitted, ready[i].ready_at);
            timeline_->phase(ready[i].name, "QUEUE", ready[i].ready_at, start);
            timeline_->phase(ready[i].name, "allreduce", start, end,
                             cat(R"("bytes":)", bytes_of(ready[i].sig), R"(,"path":")", path,
                                 '"'));
        }
    }
    for (size_t i = first; i < last; ++i)
        complete(ready[i], DT_OK, {});
    return true;
}

} // namespace dt
