// SPDX-License-Identifier: Apache-2.0
// Pipelined ring allreduce: a reduce-scatter then an allgather around the ring, each of
// the 2(p-1) steps split into segments. Segments stream: the receive of the next segment
// is in flight while the current one is reduced, and each segment is forwarded to the
// right neighbour as soon as it is ready, so the next step starts before this one ends.
//
// Step s receives block recv_block(s) from the left and sends block send_block(s) to the
// right; send_block(s + 1) == recv_block(s), which is what lets a segment be forwarded
// the moment it has been reduced. After step p-2 this rank holds block r+1 fully reduced.
//
// Out of place, sendbuf is read where it is: block r leaves from it, and each block
// received in the reduce-scatter is reduced as recvbuf = sendbuf + incoming (every rank
// reduces each block other than r exactly once, and gets block r back in the allgather).
// No up-front copy of the whole input to recvbuf: for large tensors that copy was a
// full extra pass over memory, a sixth of the time of a 2-rank allreduce of 8 MiB.
#include "algorithms/algorithms.h"
#include "algorithms/partition.h"
#include "reduce/reduce.h"

#include <cstring>
#include <deque>
#include <vector>

namespace dt::algo {

namespace {

using detail::part_length;
using detail::part_offset;
using detail::wrap;

// Default segment: big enough that per-message costs vanish, small enough that several
// stay in cache while they are reduced. Over tcp loopback (2 ranks, compare_allreduce.py
// --rt, 7 alternating rounds) 256 KiB ran 512 KiB - 32 MiB allreduces 6-18% faster than
// 128 KiB and tied below and above; 64 KiB and less were up to 2x slower.
constexpr size_t kDefaultSegmentBytes = 256 * 1024;
// Receives posted beyond the segment being reduced.
constexpr size_t kAhead = 2;

struct Segment {
    int step;
    int block;
    size_t offset; // elements into recvbuf
    size_t count;  // elements
    size_t slot;   // scratch slot (reduce-scatter steps)
    Request req;
};

class RingAllreduce {
public:
    RingAllreduce(Comm &comm, const AllreduceArgs &args, size_t seg_elems, size_t esize)
        : comm_(comm), args_(args), p_(comm.size()), r_(comm.rank()),
          left_(wrap(r_ - 1, p_)), right_(wrap(r_ + 1, p_)), esize_(esize),
          seg_elems_(seg_elems), out_(static_cast<std::byte *>(args.recvbuf)),
          in_(static_cast<const std::byte *>(args.sendbuf)),
          sends_(static_cast<size_t>(p_))
    {
        size_t largest = part_length(args.count, p_, 0);
        scratch_seg_ = std::min(seg_elems_, largest);
        scratch_.resize((kAhead + 1) * scratch_seg_ * esize_);
    }

    void run()
    {
        send_block(r_);
        std::deque<Segment> inflight;
        fill(inflight);
        while (!inflight.empty()) {
            Segment seg = std::move(inflight.front());
            inflight.pop_front();
            fill(inflight); // the next receives travel while this one is reduced
            comm_.wait(seg.req);
            finish(seg);
        }
        for (auto &list : sends_)
            for (auto &req : list)
                comm_.wait(req);
    }

private:
    int last_step() const { return 2 * p_ - 3; }
    bool reducing(int step) const { return step < p_ - 1; }
    int recv_block(int s) const
    {
        return reducing(s) ? wrap(r_ - s - 1, p_) : wrap(r_ - (s - (p_ - 1)), p_);
    }
    size_t block_offset(int b) const { return part_offset(args_.count, p_, b); }
    size_t block_count(int b) const { return part_length(args_.count, p_, b); }
    std::byte *at(size_t elem) const { return out_ + elem * esize_; }

    void send_segment(int block, const std::byte *src, size_t count)
    {
        sends_[block].push_back(comm_.isend(right_, src, count * esize_));
    }

    // This rank's own block, the first to leave: straight from sendbuf.
    void send_block(int block)
    {
        size_t base = block_offset(block), n = block_count(block);
        for (size_t k = 0; k < n; k += seg_elems_)
            send_segment(block, in_ + (base + k) * esize_, std::min(seg_elems_, n - k));
    }

    // Posts receives in (step, segment) order until kAhead are outstanding besides the
    // one being reduced, which keeps its scratch slot: kAhead + 1 slots in all.
    void fill(std::deque<Segment> &inflight)
    {
        while (inflight.size() < kAhead && next_step_ <= last_step()) {
            int b = recv_block(next_step_);
            size_t n = block_count(b);
            if (next_k_ >= n) { // block done (or empty): next step
                ++next_step_;
                next_k_ = 0;
                continue;
            }
            Segment seg{next_step_, b, block_offset(b) + next_k_,
                        std::min(seg_elems_, n - next_k_), next_slot_, nullptr};
            const bool first = next_k_ == 0;
            next_k_ += seg.count;
            void *dst;
            if (reducing(seg.step)) {
                dst = scratch_.data() + seg.slot * scratch_seg_ * esize_;
                next_slot_ = (next_slot_ + 1) % (kAhead + 1);
            } else if (first) {
                // The allgather overwrites this block: sends of it from the
                // reduce-scatter must have left the buffer first.
                for (auto &req : sends_[b])
                    comm_.wait(req);
                sends_[b].clear();
                dst = at(seg.offset);
            } else {
                dst = at(seg.offset);
            }
            seg.req = comm_.irecv(left_, dst, seg.count * esize_);
            inflight.push_back(std::move(seg));
        }
    }

    void finish(const Segment &seg)
    {
        if (reducing(seg.step)) {
            const std::byte *src = scratch_.data() + seg.slot * scratch_seg_ * esize_;
            reduce::reduce(at(seg.offset), in_ + seg.offset * esize_, src, seg.count,
                           args_.dtype, args_.op);
            if (seg.step == p_ - 2 && args_.op == DT_AVG)
                reduce::finish_average(at(seg.offset), seg.count, args_.dtype, p_);
        }
        if (seg.step < last_step())
            send_segment(seg.block, at(seg.offset), seg.count);
    }

    Comm &comm_;
    const AllreduceArgs &args_;
    const int p_, r_, left_, right_;
    const size_t esize_, seg_elems_;
    std::byte *out_;
    const std::byte *in_; // == out_ in place
    size_t scratch_seg_ = 0;
    std::vector<std::byte> scratch_;
    std::vector<std::vector<Request>> sends_; // per block, until known complete
    int next_step_ = 0;
    size_t next_k_ = 0;
    size_t next_slot_ = 0;
};

} // namespace

void allreduce_ring(Comm &comm, const AllreduceArgs &args, const RingOptions &opts)
{
    const size_t esize = detail::element_size(args.dtype, "allreduce");
    if (args.count == 0)
        return;
    if (comm.size() == 1) {
        if (args.sendbuf != args.recvbuf)
            std::memcpy(args.recvbuf, args.sendbuf, args.count * esize);
        return; // the average of one contribution is itself
    }
    size_t seg_bytes = opts.segment_bytes != 0 ? opts.segment_bytes : kDefaultSegmentBytes;
    size_t seg_elems = std::max<size_t>(1, seg_bytes / esize);
    RingAllreduce(comm, args, seg_elems, esize).run();
}

} // namespace dt::algo
