// SPDX-License-Identifier: Apache-2.0
// libdt-compute-onednn.so: the entry point, instance life cycle and the helpers every
// operation file shares.
#include "onednn_context.h"
#include "onednn_ops.h"

#include <omp.h>

#include <cstdio>
#include <cstring>
#include <memory>

namespace dtp::onednn {

namespace {

const char *isa_name(dnnl::cpu_isa isa)
{
    switch (isa) {
    case dnnl::cpu_isa::sse41: return "sse41";
    case dnnl::cpu_isa::avx: return "avx";
    case dnnl::cpu_isa::avx2: return "avx2";
    case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
    case dnnl::cpu_isa::avx512_core: return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
    default: return "other";
    }
}

void log(const Instance &in, int level, const std::string &message)
{
    if (in.services != nullptr && in.services->log != nullptr)
        in.services->log(in.host, level, "onednn", message.c_str());
}

int32_t init(const dt_compute_init_args_t *args, void **c)
{
    if (args == nullptr || c == nullptr || args->services == nullptr)
        return DTP_ERR_INVALID_ARGUMENT;
    try {
        auto in = std::make_unique<Instance>(static_cast<size_t>(args->cache_capacity));
        in->host = args->host;
        in->services = args->services;
        in->threads = args->threads < 1 ? 1 : args->threads;
        const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
        const auto bits = static_cast<unsigned>(isa);
        in->bf16_native = (bits & static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16)) ==
                          static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
        in->bf16_compute = args->compute_dtype == DTP_BFLOAT16 && in->bf16_native;
        in->device_name = std::string("cpu (") + isa_name(isa) + ")";
        const dnnl_version_t *v = dnnl_version();
        log(*in, DT_LOG_DEBUG,
            "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
                std::to_string(v->patch) + ", ISA " + isa_name(isa));
        *c = in.release();
        return DTP_OK;
    } catch (const std::exception &e) {
        if (args->services->set_error != nullptr)
            args->services->set_error(args->host,
                                      (std::string("oneDNN CPU engine: ") + e.what()).c_str());
        return DTP_ERR_INTERNAL;
    }
}

int32_t finalize(void *c)
{
    std::unique_ptr<Instance> owned(static_cast<Instance *>(c));
    if (owned != nullptr)
        log(*owned, DT_LOG_DEBUG,
            "primitive cache: " + std::to_string(owned->cache.hits()) + " hits, " +
                std::to_string(owned->cache.misses()) + " misses");
    return DTP_OK;
}

int32_t info(void *c, dt_compute_info_t *out)
{
    const auto *in = static_cast<const Instance *>(c);
    dt_compute_info_t mine{};
    mine.struct_size = out->struct_size;
    mine.abi_version = out->abi_version;
    mine.device_kind = DTP_DEVICE_CPU;
    mine.threads = in->threads;
    mine.compute_dtype = in->bf16_compute ? DTP_BFLOAT16 : DTP_FLOAT32;
    mine.bf16_native = in->bf16_native ? 1 : 0;
    mine.device_name = in->device_name.c_str();
    std::memcpy(out, &mine, std::min<size_t>(out->struct_size, sizeof(mine)));
    return DTP_OK;
}

int32_t synchronize(void *) { return DTP_OK; } // every op blocks on CPU

const dt_compute_v1_t kOps = {
    sizeof(dt_compute_v1_t), DT_COMPUTE_VERSION_2, "onednn",
    init, finalize, info, synchronize,
    alloc, free_memory, copy, fill, cast,
    matmul, add, axpby, scale, bias_add, bias_backward, relu_forward, relu_backward,
    conv_forward, conv_backward_data, conv_backward_weights,
    pool_workspace_size, pool_forward, pool_backward,
    batchnorm_forward_training, batchnorm_forward_inference, batchnorm_backward,
    softmax_xent_forward, softmax_xent_backward,
    sgd_update, adam_update,
    batchnorm_relu_forward_training, batchnorm_relu_forward_inference, batchnorm_relu_backward,
    add_relu,
    relu_backward_sum,
    batchnorm_add_relu_forward_training, batchnorm_add_relu_forward_inference,
};

} // namespace

void Instance::enter() const
{
    thread_local int current = -1;
    if (current != threads) {
        omp_set_num_threads(threads);
        current = threads;
    }
}

void report(void *c, const char *message)
{
    const auto *in = static_cast<const Instance *>(c);
    if (in != nullptr && in->services != nullptr && in->services->set_error != nullptr)
        in->services->set_error(in->host, message);
}

dnnl::memory::data_type dnnl_type(int32_t dtype)
{
    switch (dtype) {
    case DTP_FLOAT32: return dnnl::memory::data_type::f32;
    case DTP_BFLOAT16: return dnnl::memory::data_type::bf16;
    case DTP_FLOAT16: return dnnl::memory::data_type::f16;
    case DTP_INT32: return dnnl::memory::data_type::s32;
    default: throw Unsupported("dtype " + std::to_string(dtype) + " has no oneDNN type");
    }
}

dnnl::memory::desc plain_desc(const dtp_tensor_t &t, dnnl::memory::data_type type)
{
    dnnl::memory::dims dims(t.dims, t.dims + t.ndims);
    static const dnnl::memory::format_tag tags[] = {
        dnnl::memory::format_tag::a, dnnl::memory::format_tag::ab,
        dnnl::memory::format_tag::abc, dnnl::memory::format_tag::abcd};
    return dnnl::memory::desc(dims, type, tags[t.ndims - 1]);
}

dnnl::memory::desc plain_desc(const dtp_tensor_t &t) { return plain_desc(t, dnnl_type(t.dtype)); }

dnnl::memory::desc activation_desc(const dtp_tensor_t &t, int32_t layout,
                                   dnnl::memory::data_type type)
{
    if (layout != DTP_LAYOUT_NHWC)
        return plain_desc(t, type);
    return dnnl::memory::desc({t.dims[0], t.dims[1], t.dims[2], t.dims[3]}, type,
                              dnnl::memory::format_tag::acdb);
}

dnnl::memory::desc activation_desc(const dtp_tensor_t &t, int32_t layout)
{
    return activation_desc(t, layout, dnnl_type(t.dtype));
}

dnnl::memory::data_type compute_type(const Instance &in, int32_t dtype)
{
    if (dtype == DTP_FLOAT32 && in.bf16_compute)
        return dnnl::memory::data_type::bf16;
    return dnnl_type(dtype);
}

std::string key_of(const dtp_tensor_t &t)
{
    std::string out = std::to_string(t.dtype) + ":";
    for (int i = 0; i < t.ndims; ++i)
        out += std::to_string(t.dims[i]) + (i + 1 < t.ndims ? "x" : "");
    return out;
}

std::string key_float(float v)
{
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof(bits));
    char out[12];
    std::snprintf(out, sizeof(out), "%08x", bits);
    return out;
}

} // namespace dtp::onednn

extern "C" DT_PLUGIN_EXPORT int32_t DT_PLUGIN_ENTRY(const dt_plugin_offer_t *offer,
                                                    dt_plugin_answer_t *answer)
{
    if (offer == nullptr || answer == nullptr)
        return DTP_ERR_INVALID_ARGUMENT;
    // Versions 1 and 2 share the table; 2 (layouts, bfloat16 activations with float32
    // weights) wherever the core speaks it.
    if (offer->min_ops_version > DT_COMPUTE_VERSION_2 ||
        offer->max_ops_version < DT_COMPUTE_VERSION_1) {
        answer->decline_reason = "this plugin speaks compute ops versions 1 and 2 only";
        return DTP_ERR_UNSUPPORTED;
    }
    answer->kind = DT_PLUGIN_KIND_COMPUTE;
    answer->ops_version = offer->max_ops_version >= DT_COMPUTE_VERSION_2 ? DT_COMPUTE_VERSION_2
                                                                         : DT_COMPUTE_VERSION_1;
    answer->name = "onednn";
    answer->ops = &dtp::onednn::kOps;
    return DTP_OK;
}
