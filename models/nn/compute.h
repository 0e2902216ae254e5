/* SPDX-License-Identifier: Apache-2.0 */
// The compute context the layers run on (dt_compute_h from api/disttrain/compute.h)
// behind RAII, plus check(), which turns a failed dt_compute_* call into an exception
// carrying the library's message.
#pragma once

#include <disttrain/compute.h>

#include <memory>
#include <string>

namespace dt::models {

// Throws disttrain::error (a std::runtime_error that keeps the status)
// "<what>: <status>: <dt_last_error()>" unless status is OK.
void check(dt_status_t status, const char *what);

struct ComputeOptions {
    int threads = 0;       // 0: DISTTRAIN_THREADS or the affinity mask
    bool bf16 = false;     // compute matmul/convolution in bfloat16 where supported
    std::string plugin;    // "": DISTTRAIN_COMPUTE or auto
};

class Compute {
public:
    explicit Compute(const ComputeOptions &options = {});
    dt_compute_h get() const { return handle_.get(); }
    // "onednn on cpu (avx2), 2 threads, float32 compute".
    std::string describe() const;
    int threads() const;
    bool bf16_active() const;
    // Whether float32 convolutions run in TF32 on tensor cores (the cuDNN plugin's default
    // on Ampere and later GPUs; DISTTRAIN_TF32=0 turns it off).
    bool tf32_convolutions() const;
    // Where the context's tensors live: device memory on a GPU plugin, else host memory.
    dt_memory_type_t tensor_memory() const;
    // The dtype the convolutional nets keep their activations in. By default bfloat16
    // when the context computes in bfloat16 on host memory (the oneDNN plugin runs
    // bfloat16 activations with float32 weights natively), else float32: on a GPU the
    // cuDNN plugin's mixed path has not been measured yet. DISTTRAIN_ACTIVATIONS=
    // bfloat16 asks for bfloat16 wherever the context computes in bfloat16 (a GPU too),
    // float32 for float32 always, auto (or unset) for the default. Weights, gradients and
    // optimizer state stay float32 either way.
    dt_dtype_t activation_dtype() const;
    // The device queue its operations run on (null where they block, on CPU): the stream
    // after whose work a collective on a tensor must start.
    void *stream() const;
    // The memory provider that knows its tensors ("cuda"), or null for host memory.
    const char *memory_provider() const;
    // Waits until everything queued on the context has finished.
    void synchronize() const;

private:
    struct Deleter {
        void operator()(dt_compute *c) const { dt_compute_destroy(c); }
    };
    std::unique_ptr<dt_compute, Deleter> handle_;
};

} // namespace dt::models
