// SPDX-License-Identifier: Apache-2.0
#include "conf_cases.h"

#include "conf_values.h"

#include <cstring>
#include <utility>

namespace dt::conformance {

const char *kind_name(Kind kind)
{
    switch (kind) {
    case Kind::allreduce: return "allreduce";
    case Kind::broadcast: return "broadcast";
    case Kind::allgather: return "allgather";
    case Kind::reduce_scatter: return "reduce_scatter";
    case Kind::alltoall: return "alltoall";
    case Kind::barrier: return "barrier";
    case Kind::allgatherv: return "allgatherv";
    case Kind::alltoallv: return "alltoallv";
    }
    return "?";
}

const std::vector<unsigned char> *Images::find(const std::string &key) const
{
    const auto it = images_.find(key);
    return it == images_.end() ? nullptr : &it->second;
}

const std::vector<unsigned char> &Images::add(const std::string &key,
                                              std::vector<unsigned char> bytes)
{
    return images_[key] = std::move(bytes);
}

namespace {

bool reduces(Kind kind) { return kind == Kind::allreduce || kind == Kind::reduce_scatter; }
bool uneven(Kind kind) { return kind == Kind::allgatherv || kind == Kind::alltoallv; }

} // namespace

Case::Case(Kind kind, dt_dtype_t dtype, dt_reduce_op_t op, size_t count, bool inplace,
           int root, bool async, int rank, int ranks, const testing::DeviceMemory *device)
    : kind_(kind), dtype_(dtype), op_(op), count_(count), inplace_(inplace), root_(root),
      async_(async), rank_(rank), ranks_(ranks), elt_(dt_dtype_size(dtype)), device_(device)
{
    what_ = std::string(kind_name(kind)) + " " + dt_dtype_name(dtype);
    if (reduces(kind))
        what_ += std::string(" ") + dt_reduce_op_name(op);
    what_ += " count=" + std::to_string(count);
    if (kind == Kind::broadcast)
        what_ += " root=" + std::to_string(root);
    if (kind == Kind::barrier) // several barriers are in flight at once: names must differ
        what_ += " #" + std::to_string(root);
    what_ += inplace ? " in-place" : "";
    what_ += async ? " async" : " blocking";
    what_ += device ? " device" : "";
    if (uneven(kind))
        for (int r = 0; r < ranks; ++r) {
            sendcounts_.push_back(block(rank, r));
            recvcounts_.push_back(block(r, rank));
        }
    // Buffers are never empty, so a count of 0 still passes valid pointers.
    out_.resize((out_count() + kGuard) * elt_);
    in_.resize((in_count() + 1) * elt_);
}

Case::Case(Case &&o) noexcept
    : kind_(o.kind_), dtype_(o.dtype_), op_(o.op_), count_(o.count_), inplace_(o.inplace_),
      root_(o.root_), async_(o.async_), rank_(o.rank_), ranks_(o.ranks_), elt_(o.elt_),
      what_(std::move(o.what_)), in_(std::move(o.in_)), out_(std::move(o.out_)),
      sendcounts_(std::move(o.sendcounts_)), recvcounts_(std::move(o.recvcounts_)),
      req_(std::exchange(o.req_, nullptr)), device_(o.device_),
      dev_in_(std::exchange(o.dev_in_, nullptr)), dev_out_(std::exchange(o.dev_out_, nullptr)),
      spoil_(o.spoil_)
{
}

Case::~Case()
{
    dt_request_free(req_);
    if (device_ != nullptr) {
        device_->free(dev_in_);
        device_->free(dev_out_);
    }
}

size_t Case::block(int from, int to) const
{
    const size_t extra = kind_ == Kind::allgatherv ? static_cast<size_t>(from % 3)
                                                   : static_cast<size_t>((from + 2 * to) % 3);
    return count_ + extra;
}

size_t Case::offset(int peer, bool send) const
{
    size_t at = 0;
    for (int r = 0; r < peer; ++r)
        at += send ? block(rank_, r) : block(r, rank_);
    return at;
}

size_t Case::out_count() const
{
    const size_t n = static_cast<size_t>(ranks_);
    switch (kind_) {
    case Kind::allgatherv:
    case Kind::alltoallv: return offset(ranks_, false);
    case Kind::allgather:
    case Kind::alltoall: return count_ * n;
    case Kind::barrier: return 0;
    default: return count_;
    }
}

size_t Case::in_count() const
{
    if (inplace_ || kind_ == Kind::broadcast || kind_ == Kind::barrier)
        return 0;
    const size_t n = static_cast<size_t>(ranks_);
    if (kind_ == Kind::allgatherv)
        return block(rank_, rank_);
    if (kind_ == Kind::alltoallv)
        return offset(ranks_, true);
    return kind_ == Kind::reduce_scatter || kind_ == Kind::alltoall ? count_ * n : count_;
}

const void *Case::in_ptr()
{
    if (!inplace_)
        return in_.data();
    if (kind_ == Kind::allgather)
        return out_.data() + static_cast<size_t>(rank_) * count_ * elt_;
    if (kind_ == Kind::allgatherv)
        return out_.data() + offset(rank_, false) * elt_;
    return out_.data();
}

const void *Case::call_in()
{
    if (device_ == nullptr)
        return in_ptr();
    if (!inplace_)
        return dev_in_;
    if (kind_ == Kind::allgather)
        return static_cast<unsigned char *>(dev_out_) +
               static_cast<size_t>(rank_) * count_ * elt_;
    if (kind_ == Kind::allgatherv)
        return static_cast<unsigned char *>(dev_out_) + offset(rank_, false) * elt_;
    return dev_out_;
}

std::string Case::shape_key(bool with_placement) const
{
    std::string key = std::string(kind_name(kind_)) + " " + dt_dtype_name(dtype_) + " op " +
                      std::to_string(op_) + " count " + std::to_string(count_) + " root " +
                      std::to_string(root_);
    if (with_placement)
        key += inplace_ ? " in-place" : " out-of-place";
    return key;
}

void Case::prepare(Images &images, bool keep_inputs)
{
    const std::string key = shape_key(true);
    const std::vector<unsigned char> *in_image = images.find("in " + key);
    const std::vector<unsigned char> *out_image = images.find("out " + key);
    if (in_image != nullptr && out_image != nullptr) {
        in_ = *in_image;
        out_ = *out_image;
    } else {
        fill();
        if (keep_inputs) {
            images.add("in " + key, in_);
            images.add("out " + key, out_);
        }
    }
    if (device_ != nullptr) {
        const size_t out_bytes = out_.size();
        dev_out_ = device_->alloc(out_bytes);
        device_->to_device(dev_out_, out_.data(), out_bytes);
        if (!inplace_) {
            dev_in_ = device_->alloc(in_.size());
            device_->to_device(dev_in_, in_.data(), in_.size());
        }
    }
}

void Case::fill()
{
    const auto seed = static_cast<uint64_t>(rank_);
    put_repeated(dtype_, out(), 0, out_count() + kGuard, kPoison);
    void *in = const_cast<void *>(in_ptr()); // our buffer; const only for the call
    const auto n = static_cast<uint64_t>(ranks_);
    switch (kind_) {
    case Kind::allreduce:
    case Kind::reduce_scatter:
        put_inputs(dtype_, op_, ranks_, seed, 0, kind_ == Kind::allreduce ? count_ : count_ * n,
                   in, 0);
        break;
    case Kind::broadcast:
        if (rank_ == root_)
            put_payloads(dtype_, ranks_, seed, 0, count_, out(), 0);
        break;
    case Kind::allgather:
        put_payloads(dtype_, ranks_, seed, 0, count_, in, 0);
        break;
    case Kind::alltoall:
        for (uint64_t peer = 0; peer < n; ++peer)
            put_payloads(dtype_, ranks_, seed * n + peer, 0, count_, in, peer * count_);
        break;
    case Kind::allgatherv:
        put_payloads(dtype_, ranks_, seed, 0, block(rank_, rank_), in, 0);
        break;
    case Kind::alltoallv:
        for (int peer = 0; peer < ranks_; ++peer)
            put_payloads(dtype_, ranks_, seed * n + static_cast<uint64_t>(peer), 0,
                         block(rank_, peer), in, offset(peer, true));
        break;
    case Kind::barrier:
        break;
    }
}

dt_status_t Case::launch(dt_context_h ctx)
{
    const std::string name = "conformance " + what_;
    dt_request_h *req = async_ ? &req_ : nullptr;
    const void *in = call_in();
    void *out = call_out();
    dt_op_params_t params{};
    params.field_mask = DT_OP_PARAM_FIELD_MEMORY_TYPE;
    params.memory_type = device_ != nullptr ? DT_MEMORY_DEVICE : DT_MEMORY_HOST;
    const dt_op_params_t *p = &params;
    const char *n = name.c_str();
    switch (kind_) {
    case Kind::allreduce:
        return req ? dt_allreduce_async_ex(ctx, n, in, out, count_, dtype_, op_, p, req)
                   : dt_allreduce_ex(ctx, n, in, out, count_, dtype_, op_, p);
    case Kind::broadcast:
        return req ? dt_broadcast_async_ex(ctx, n, out, count_, dtype_, root_, p, req)
                   : dt_broadcast_ex(ctx, n, out, count_, dtype_, root_, p);
    case Kind::allgather:
        return req ? dt_allgather_async_ex(ctx, n, in, out, count_, dtype_, p, req)
                   : dt_allgather_ex(ctx, n, in, out, count_, dtype_, p);
    case Kind::reduce_scatter:
        return req ? dt_reduce_scatter_async_ex(ctx, n, in, out, count_, dtype_, op_, p, req)
                   : dt_reduce_scatter_ex(ctx, n, in, out, count_, dtype_, op_, p);
    case Kind::alltoall:
        return req ? dt_alltoall_async_ex(ctx, n, in, out, count_, dtype_, p, req)
                   : dt_alltoall_ex(ctx, n, in, out, count_, dtype_, p);
    case Kind::barrier:
        return req ? dt_barrier_async_ex(ctx, n, p, req) : dt_barrier_ex(ctx, n, p);
    case Kind::allgatherv: {
        const size_t mine = recvcounts_[static_cast<size_t>(rank_)];
        return req ? dt_allgatherv_async_ex(ctx, n, in, out, mine, recvcounts_.data(), dtype_,
                                            p, req)
                   : dt_allgatherv_ex(ctx, n, in, out, mine, recvcounts_.data(), dtype_, p);
    }
    case Kind::alltoallv:
        return req ? dt_alltoallv_async_ex(ctx, n, in, out, sendcounts_.data(),
                                           recvcounts_.data(), dtype_, p, req)
                   : dt_alltoallv_ex(ctx, n, in, out, sendcounts_.data(), recvcounts_.data(),
                                     dtype_, p);
    }
    return DT_ERR_INVALID_ARGUMENT;
}

std::vector<Case::Expected> Case::expected_runs() const
{
    const auto n = static_cast<uint64_t>(ranks_);
    const auto self = static_cast<uint64_t>(rank_);
    std::vector<Expected> runs;
    switch (kind_) {
    case Kind::allreduce: runs.push_back({0, count_, true, 0, 0}); break;
    case Kind::reduce_scatter: runs.push_back({0, count_, true, 0, self * count_}); break;
    case Kind::broadcast:
        runs.push_back({0, count_, false, static_cast<uint64_t>(root_), 0});
        break;
    case Kind::allgather:
    case Kind::alltoall:
        for (uint64_t from = 0; from < n; ++from)
            runs.push_back({from * count_, count_, false,
                            kind_ == Kind::allgather ? from : from * n + self, 0});
        break;
    case Kind::allgatherv:
    case Kind::alltoallv:
        for (int from = 0; from < ranks_; ++from) {
            const auto sender = static_cast<uint64_t>(from);
            runs.push_back({offset(from, false), block(from, rank_), false,
                            kind_ == Kind::allgatherv ? sender : sender * n + self, 0});
        }
        break;
    case Kind::barrier: break;
    }
    return runs;
}

double Case::expected(const std::vector<Expected> &runs, size_t i) const
{
    for (const Expected &r : runs) {
        if (i < r.at || i - r.at >= r.n)
            continue;
        const size_t k = r.first + (i - r.at);
        return r.reduced ? reduced(dtype_, op_, ranks_, k) : payload(dtype_, ranks_, r.seed, k);
    }
    return kPoison; // a guard element
}

std::vector<unsigned char> Case::expected_image() const
{
    std::vector<unsigned char> image(out_.size());
    void *out = image.data();
    for (const Expected &r : expected_runs()) {
        if (r.reduced)
            put_reduced(dtype_, op_, ranks_, r.first, r.n, out, r.at);
        else
            put_payloads(dtype_, ranks_, r.seed, r.first, r.n, out, r.at);
    }
    put_repeated(dtype_, out, out_count(), kGuard, kPoison);
    return image;
}

uint64_t Case::verify(std::vector<Mismatch> &out_list, size_t limit, Images &images)
{
    dt_request_free(std::exchange(req_, nullptr));
    if (device_ != nullptr)
        device_->to_host(out_.data(), dev_out_, out_.size()); // guards included
    if (spoil_) { // the most significant byte (little-endian): sign and exponent of floats
        const size_t element = out_count() > 0 ? out_count() - 1 : out_count();
        out_[element * elt_ + elt_ - 1] ^= 0x40;
    }
    const std::string key = "result " + shape_key(false);
    const std::vector<unsigned char> *image = images.find(key);
    if (image == nullptr)
        image = &images.add(key, expected_image());
    // An element with the bytes of the encoded reference is right: the reference is exact
    // in the dtype, except floating averages, which it rounds once, as matches() allows.
    // Only the other elements are judged, against the reference value itself.
    if (std::memcmp(out_.data(), image->data(), out_.size()) == 0)
        return 0;
    uint64_t wrong = 0;
    const std::vector<Expected> runs = expected_runs();
    const size_t outputs = out_count();
    const size_t total = outputs + kGuard;
    for (size_t i = 0; i < total; ++i) {
        if (std::memcmp(out_.data() + i * elt_, image->data() + i * elt_, elt_) == 0)
            continue;
        const double want = expected(runs, i);
        const double got = get(dtype_, out(), i);
        // Guards must stay bit-for-bit poison; outputs match the reference.
        const bool ok = i >= outputs ? got == want : matches(dtype_, op_, got, want);
        if (ok)
            continue;
        if (out_list.size() < limit)
            out_list.push_back({what_ + (i >= outputs ? " (guard past the end)" : ""), rank_,
                                i, got, want});
        ++wrong;
    }
    return wrong;
}

} // namespace dt::conformance
