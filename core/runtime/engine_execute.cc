// Running what negotiation found ready, in the agreed order: consecutive small
// allreduces of the same dtype, operator and memory type (fusion.h) are packed into one
// buffer (at most DISTTRAIN_FUSION_THRESHOLD bytes, so fusion memory is bounded) and run
// as one host allreduce. Host tensors are copied with memcpy into the fusion buffer;
// device tensors with the memory provider's copies into a pinned staging buffer, on each
// tensor's producer stream, with one wait for all copies in and one for all copies out.
#include "algorithms/algorithms.h"
#include "reduce/reduce.h"
#include "runtime/engine.h"
#include "runtime/error.h"
#include "runtime/fusion.h"
#include "runtime/identity.h"

#include <cstring>

namespace dt {

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
    const char *path = router_.run(
        c, desc, r.sig.group == 0 ? active_ranks() : static_cast<int>(ranks.size()));
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
    uint8_t *buffer = nullptr;
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
                                 r.op->desc().stream);
            else if (bytes > 0)
                std::memcpy(buffer + offset, r.op->desc().sendbuf, bytes);
            offset += bytes;
        }
        if (device)
            wait_streams(*staging, ready, first, last, c, false);
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
    const char *path = router_.run(
        c, fused, sig.group == 0 ? active_ranks() : static_cast<int>(ranks.size()));
    auto reduced = Clock::now();

    try {
        size_t offset = 0;
        for (size_t i = first; i < last; ++i) {
            Ready &r = ready[i];
            size_t bytes = bytes_of(r.sig);
            if (r.op && bytes > 0 && device)
                staging->to_device(r.op->desc().recvbuf, buffer + offset, bytes,
                                   staging->return_stream(r.op->desc().stream));
            else if (r.op && bytes > 0)
                std::memcpy(r.op->desc().recvbuf, buffer + offset, bytes);
            offset += bytes;
        }
        if (device)
            wait_streams(*staging, ready, first, last, c, true);
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

void Engine::wait_streams(routing::Staging &staging, const std::vector<Ready> &ready,
                          size_t first, size_t last, const algo::Comm &c, bool back)
{
    // Usually every tensor of a batch comes from the same stream (and every copy back
    // goes on the staging's own): wait once per stream.
    auto stream_of = [&](size_t i) {
        void *producer = ready[i].op->desc().stream;
        return back ? staging.return_stream(producer) : producer;
    };
    for (size_t i = first; i < last; ++i) {
        if (!ready[i].op)
            continue;
        void *stream = stream_of(i);
        bool seen = false;
        for (size_t j = first; j < i && !seen; ++j)
            seen = ready[j].op && stream_of(j) == stream;
        if (!seen)
            staging.wait(stream, c, "fused device allreduce");
    }
}

} // namespace dt
