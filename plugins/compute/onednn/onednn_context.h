/* SPDX-License-Identifier: Apache-2.0 */
// The oneDNN compute plugin's instance: a CPU engine and stream, the thread count, the
// compute dtype in effect and the primitive cache. Shared by every onednn_*.cc file.
#pragma once

#include "onednn_cache.h"

#include <disttrain/plugin/compute.h>

#include <oneapi/dnnl/dnnl.hpp>

#include <string>
#include <vector>

namespace dtp::onednn {

struct Instance {
    dnnl::engine engine{dnnl::engine::kind::cpu, 0};
    dnnl::stream stream{engine};
    int threads = 1;
    bool bf16_native = false;  // the CPU computes bfloat16 (AVX-512 BF16 or AMX)
    bool bf16_compute = false; // f32 matmul/conv run internally in bfloat16
    std::string device_name;   // "cpu (avx512_core_bf16)"
    PrimitiveCache cache;
    std::vector<float> gemm_scratch; // strided 1x1 convolutions' rows (onednn_conv_gemm.cc)
    void *host = nullptr;
    const dt_host_services_t *services = nullptr;

    explicit Instance(size_t cache_capacity) : cache(cache_capacity) {}

    // Sets OpenMP's thread count for the calling thread before each operation, since
    // omp_set_num_threads is per calling thread and the user may call from any thread.
    void enter() const;
};

// Runs body, turning exceptions (dnnl::error, std::bad_alloc, ...) into a DTP status and
// a message passed to services->set_error. No exception crosses the plugin ABI.
template <typename F>
int32_t guarded(void *c, F &&body) noexcept;

// The oneDNN data type of a DTP_* dtype (f32, bf16, f16).
dnnl::memory::data_type dnnl_type(int32_t dtype);

// Plain row-major (abcd...) memory descriptor of a tensor, optionally with another type.
dnnl::memory::desc plain_desc(const dtp_tensor_t &t);
dnnl::memory::desc plain_desc(const dtp_tensor_t &t, dnnl::memory::data_type type);

// The memory descriptor of a convolution or pooling activation, described in NCHW order
// (dtp_tensor_t) and laid out as `layout` (DTP_LAYOUT_NCHW: abcd, DTP_LAYOUT_NHWC: acdb).
dnnl::memory::desc activation_desc(const dtp_tensor_t &t, int32_t layout);
dnnl::memory::desc activation_desc(const dtp_tensor_t &t, int32_t layout,
                                   dnnl::memory::data_type type);

// The data type matmul and convolution compute in for tensors of `dtype`.
dnnl::memory::data_type compute_type(const Instance &in, int32_t dtype);

// A short key for the primitive cache: "conv_fwd|2,3,28,28|f32|...".
std::string key_of(const dtp_tensor_t &t);

// The float's bits in hex, for cache keys (to_string would round 1e-7 to 0.000000).
std::string key_float(float v);

// Throws Unsupported (turned into DTP_ERR_UNSUPPORTED) with the message.
struct Unsupported : std::runtime_error {
    using std::runtime_error::runtime_error;
};

void report(void *c, const char *message);

template <typename F>
int32_t guarded(void *c, F &&body) noexcept
{
    try {
        static_cast<Instance *>(c)->enter();
        body();
        return DTP_OK;
    } catch (const Unsupported &e) {
        report(c, e.what());
        return DTP_ERR_UNSUPPORTED;
    } catch (const dnnl::error &e) {
        report(c, (std::string("oneDNN: ") + e.what()).c_str());
        return e.status == dnnl_unimplemented ? DTP_ERR_UNSUPPORTED
               : e.status == dnnl_out_of_memory ? DTP_ERR_NO_MEMORY
               : e.status == dnnl_invalid_arguments ? DTP_ERR_INVALID_ARGUMENT
                                                    : DTP_ERR_INTERNAL;
    } catch (const std::bad_alloc &) {
        report(c, "out of memory");
        return DTP_ERR_NO_MEMORY;
    } catch (const std::invalid_argument &e) {
        report(c, e.what());
        return DTP_ERR_INVALID_ARGUMENT;
    } catch (const std::exception &e) {
        report(c, e.what());
        return DTP_ERR_INTERNAL;
    }
}

} // namespace dtp::onednn
