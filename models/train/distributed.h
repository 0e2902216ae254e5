/* SPDX-License-Identifier: Apache-2.0 */
// The trainer's side of data parallelism, on the public collectives of disttrain.h:
// broadcasting rank 0's state, averaging gradients asynchronously as backward produces
// them, and summing metrics.
#pragma once

#include "nn/compute.h"
#include "nn/layer.h"

#include <disttrain/disttrain.hpp>

#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace dt::models {

struct RequestFree {
    void operator()(dt_request *r) const { dt_request_free(r); }
};
using Request = std::unique_ptr<dt_request, RequestFree>;

class Distributed {
public:
    // dt_context_create from the environment (disttrainrun sets it), in ordered mode
    // unless DISTTRAIN_ORDERED says otherwise. The collectives on tensors tell the
    // library where compute's tensors live and the stream that produces them; for device
    // tensors the context loads the memory provider compute names, unless
    // DISTTRAIN_MEMORY chooses another.
    explicit Distributed(const Compute &compute);
    int rank() const { return rank_; }
    int size() const { return size_; }
    dt_context_h get() const { return ctx_.c_handle(); }
    disttrain::context &context() { return ctx_; }
    // Reads rank and size again, after the job re-formed (elastic).
    void refresh();
    std::string transport() const; // its name and the engine's mode, e.g. "tcp (ordered)"

    // Copies rank 0's tensors (float32) to every rank, all in flight at once.
    void broadcast(const std::vector<Tensor> &tensors, const std::string &prefix);
    void broadcast_raw(void *data, size_t count, dt_dtype_t dtype, const char *name);
    // Sums doubles across ranks in place (blocking).
    void sum(std::vector<double> &values, const char *name);
    // Averages float32 tensors across ranks in place (blocking).
    void average(const std::vector<Tensor> &tensors, const std::string &prefix);
    // What the collectives on tensors pass: their memory type and producer stream.
    const dt_op_params_t *tensor_params() const { return &tensor_params_; }

private:
    bool ordered_ = true;
    dt_op_params_t tensor_params_ = {};
    disttrain::context ctx_;
    int rank_ = 0, size_ = 1;
};

// Averages gradients across ranks as they become ready: start() launches a named
// asynchronous allreduce (DT_AVG, in place), so the engine overlaps it with the rest of
// backward; wait_all() before the optimizer step. With one rank it does nothing.
//
// Host tensors go one allreduce per gradient (the engine fuses neighbours in negotiated
// mode, and a copy into a bucket would cost the CPU what fusion saves). Device tensors go
// in buckets, as DistributedDataParallel's: from the second step on, gradients are
// copied on the device (queued on the compute stream, at the device's memory bandwidth)
// into flat buffers of up to kBucketBytes in the order backward produced them in the
// first step (the same on every rank, so ordered mode holds), each bucket allreduced once
// all of its gradients are in, and copied back before the optimizer. Staging then moves
// a few large buffers instead of one per tensor. Measured on an H200, 2 ranks of
// ResNet-50 sharing the GPU, ordered (tests/gpu/run.sh): 1185 images/sec in total with
// one allreduce per gradient, 1615 with buckets (one process: 1870).
class GradientSync {
public:
    static constexpr size_t kBucketBytes = size_t{25} << 20;

    GradientSync(Distributed &dist, const Compute &compute);
    void start(Parameter &p);
    void wait_all();
    // Frees the allreduces of a step that failed (a lost peer), whatever their state, so
    // the job can re-form (dt_context_reform needs every request gone).
    void abandon();
    GradReady callback()
    {
        return [this](Parameter &p) { start(p); };
    }

private:
    struct Slot {
        Parameter *param;
        size_t offset; // bytes into the bucket
    };
    struct Bucket {
        Tensor flat;
        std::vector<Slot> slots;
        size_t arrived = 0; // gradients copied in this step
        Request request;
    };
    void plan_buckets(); // from first_order_
    void allreduce(const std::string &name, void *data, size_t count);

    Distributed &dist_;
    const Compute &compute_;
    bool bucketing_;
    std::vector<Request> pending_;
    std::vector<Parameter *> first_order_; // the first step's order of gradients
    std::vector<Bucket> buckets_;          // empty until the first step ended
    std::unordered_map<Parameter *, std::pair<size_t, size_t>> where_; // bucket, slot
};

} // namespace dt::models
