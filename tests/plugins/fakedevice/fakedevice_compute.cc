// SPDX-License-Identifier: Apache-2.0
// libdt-compute-fakedevice.so: a test-only compute plugin that looks like a GPU to the
// core and to the trainer while computing with the oneDNN plugin on the CPU. Its memory
// is the fake device's (fakedevice_arena.h): alloc hands out pointers into the PROT_NONE
// view, so any host code that touches them instead of going through memcpy crashes. Every
// op translates its device pointer arguments to the shadow view and forwards the call to
// libdt-compute-onednn.so, which it opens itself. Ops run synchronously (stream NULL);
// README.md says why. Built whenever tests are on and oneDNN is there; never installed.
#include "fakedevice_arena.h"

#include <disttrain/plugin/compute.h>

#include <dlfcn.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#ifndef FAKEDEVICE_ONEDNN_DIR
#define FAKEDEVICE_ONEDNN_DIR ""
#endif

namespace fakedevice {
namespace {

const char kOnednnFile[] = "libdt-compute-onednn.so";

// The oneDNN plugin this one computes with: its dlopen handle and ops table.
struct Onednn {
    void *handle = nullptr;
    dt_compute_v1_t ops{};
    std::string path;
    ~Onednn()
    {
        if (handle != nullptr)
            dlclose(handle);
    }
};

struct Instance {
    void *host = nullptr;
    const dt_host_services_t *services = nullptr;
    Arena *arena = nullptr;
    std::unique_ptr<Onednn> onednn;
    void *inner = nullptr; // the oneDNN plugin's instance
    std::string device_name;
};

Instance *self(void *c) { return static_cast<Instance *>(c); }

int32_t fail(const dt_host_services_t *services, void *host, int32_t rc,
             const std::string &why)
{
    if (services != nullptr && services->set_error != nullptr)
        services->set_error(host, ("fakedevice: " + why).c_str());
    return rc;
}

int32_t fail(Instance *in, int32_t rc, const std::string &why)
{
    return fail(in->services, in->host, rc, why);
}

// Device pointers become their shadow; anything else (host memory, NULL) passes as is.
template <typename T>
T *dev(const Instance *in, T *p)
{
    if (p == nullptr || !in->arena->contains(p))
        return p;
    return static_cast<T *>(in->arena->shadow(p));
}

// Where libdt-compute-onednn.so is: DISTTRAIN_FAKE_DEVICE_COMPUTE (a path to the file)
// when set, else the first folder that has it of DISTTRAIN_PLUGIN_PATH (as the core
// searches), the folder of this plugin, and the build folder of the oneDNN plugin. Returns
// false with every path looked at when none is there.
bool find_onednn(std::vector<std::string> &files)
{
    if (const char *file = std::getenv("DISTTRAIN_FAKE_DEVICE_COMPUTE");
        file != nullptr && *file != '\0') {
        files = {file};
        return true;
    }
    std::vector<std::string> folders;
    if (const char *path = std::getenv("DISTTRAIN_PLUGIN_PATH"); path != nullptr) {
        std::string list = path;
        for (size_t at = 0; at <= list.size();) {
            size_t end = list.find(':', at);
            if (end == std::string::npos)
                end = list.size();
            if (end > at)
                folders.push_back(list.substr(at, end - at));
            at = end + 1;
        }
    }
    Dl_info info{};
    if (dladdr(reinterpret_cast<void *>(&find_onednn), &info) != 0 &&
        info.dli_fname != nullptr)
        folders.push_back(std::filesystem::path(info.dli_fname).parent_path().string());
    if (*FAKEDEVICE_ONEDNN_DIR != '\0')
        folders.emplace_back(FAKEDEVICE_ONEDNN_DIR);
    files.clear();
    for (const auto &folder : folders) {
        std::error_code ec;
        auto file = std::filesystem::path(folder) / kOnednnFile;
        if (std::filesystem::is_regular_file(file, ec)) {
            files = {file.string()};
            return true;
        }
        files.push_back(file.string());
    }
    return false;
}

// Opens and negotiates the oneDNN plugin; on failure returns null with `why`.
std::unique_ptr<Onednn> open_onednn(const dt_host_services_t *services, std::string &why)
{
    std::vector<std::string> files;
    if (!find_onednn(files)) {
        why = "no " + std::string(kOnednnFile) + " to compute with; looked for";
        for (const auto &f : files)
            why += " " + f;
        why += " (set DISTTRAIN_FAKE_DEVICE_COMPUTE to its path)";
        return nullptr;
    }
    auto o = std::make_unique<Onednn>();
    o->path = files.front();
    o->handle = dlopen(o->path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (o->handle == nullptr) {
        const char *err = dlerror();
        why = "dlopen of " + o->path + ": " + (err != nullptr ? err : "?");
        return nullptr;
    }
    auto entry = reinterpret_cast<dt_plugin_negotiate_fn>(dlsym(o->handle, DT_PLUGIN_ENTRY_NAME));
    dt_plugin_offer_t offer{sizeof(offer), DT_PLUGIN_NEGOTIATION_VERSION, DT_COMPUTE_VERSION_2,
                            DT_COMPUTE_VERSION_2, services};
    dt_plugin_answer_t answer{};
    answer.struct_size = sizeof(answer);
    answer.abi_version = DT_PLUGIN_NEGOTIATION_VERSION;
    if (entry == nullptr || entry(&offer, &answer) != DTP_OK ||
        answer.kind != DT_PLUGIN_KIND_COMPUTE || answer.ops_version != DT_COMPUTE_VERSION_2 ||
        answer.ops == nullptr) {
        why = o->path + " did not negotiate compute ops version 2" +
              (answer.decline_reason != nullptr ? std::string(": ") + answer.decline_reason : "");
        return nullptr;
    }
    const auto *table = static_cast<const dt_compute_v1_t *>(answer.ops);
    std::memcpy(&o->ops, table, std::min<size_t>(table->struct_size, sizeof(o->ops)));
    if (o->ops.init == nullptr || o->ops.finalize == nullptr || o->ops.info == nullptr) {
        why = o->path + " lacks init, finalize or info";
        return nullptr;
    }
    return o;
}

int32_t init(const dt_compute_init_args_t *args, void **c)
{
    if (args == nullptr || c == nullptr || args->struct_size < sizeof(dt_compute_init_args_t))
        return DTP_ERR_INVALID_ARGUMENT;
    auto in = std::make_unique<Instance>();
    in->host = args->host;
    in->services = args->services;
    std::string why;
    in->onednn = open_onednn(args->services, why);
    if (in->onednn == nullptr)
        return fail(in.get(), DTP_ERR_UNSUPPORTED, why);
    // The oneDNN instance reports its errors straight to the core: same host, services.
    int32_t rc = in->onednn->ops.init(args, &in->inner);
    if (rc != DTP_OK)
        return rc;
    try {
        in->arena = &acquire_arena();
    } catch (const std::exception &e) {
        in->onednn->ops.finalize(in->inner);
        return fail(in.get(), DTP_ERR_UNSUPPORTED, e.what());
    }
    dt_compute_info_t inner{};
    inner.struct_size = sizeof(inner);
    inner.abi_version = DT_COMPUTE_VERSION;
    if (in->onednn->ops.info(in->inner, &inner) == DTP_OK && inner.device_name != nullptr)
        in->device_name = std::string("fake device (oneDNN on ") + inner.device_name + ")";
    else
        in->device_name = "fake device (oneDNN)";
    *c = in.release();
    return DTP_OK;
}

int32_t finalize(void *c)
{
    std::unique_ptr<Instance> in(self(c));
    int32_t rc = in->onednn->ops.finalize(in->inner);
    release_arena(); // the memory stays while the memory provider holds the arena too
    return rc;
}

int32_t info(void *c, dt_compute_info_t *out)
{
    Instance *in = self(c);
    dt_compute_info_t inner{};
    inner.struct_size = sizeof(inner);
    inner.abi_version = DT_COMPUTE_VERSION;
    int32_t rc = in->onednn->ops.info(in->inner, &inner);
    if (rc != DTP_OK)
        return rc;
    dt_compute_info_t mine{};
    mine.struct_size = out->struct_size;
    mine.abi_version = out->abi_version;
    mine.device_kind = DTP_DEVICE_GPU;
    mine.threads = inner.threads;
    mine.compute_dtype = inner.compute_dtype;
    mine.bf16_native = inner.bf16_native;
    mine.device_name = in->device_name.c_str();
    mine.stream = nullptr;                 // every op blocks: see README.md
    mine.memory_provider = "fakedevice"; // libdt-memory-fakedevice.so, same arena
    mine.tf32_convolutions = inner.tf32_convolutions;
    // Only within the core's struct: an older core passes a smaller one.
    std::memcpy(out, &mine, std::min<size_t>(out->struct_size, sizeof(mine)));
    return DTP_OK;
}

int32_t synchronize(void *) { return DTP_OK; } // nothing is ever queued

int32_t alloc(void *c, size_t bytes, void **out)
{
    *out = self(c)->arena->allocate(bytes);
    return *out != nullptr ? DTP_OK
                           : fail(self(c), DTP_ERR_NO_MEMORY,
                                  "device memory is full (" + std::to_string(bytes) +
                                      " bytes asked; DISTTRAIN_FAKE_DEVICE_BYTES)");
}

int32_t free_memory(void *c, void *ptr)
{
    if (ptr == nullptr || self(c)->arena->release(ptr))
        return DTP_OK;
    return fail(self(c), DTP_ERR_INVALID_ARGUMENT, "free of a pointer that is not a live "
                "device allocation");
}

const char *kind_name(int32_t kind)
{
    switch (kind) {
    case DTP_COPY_HOST_TO_DEVICE: return "host to device";
    case DTP_COPY_DEVICE_TO_HOST: return "device to host";
    case DTP_COPY_DEVICE_TO_DEVICE: return "device to device";
    case DTP_COPY_HOST_TO_HOST: return "host to host";
    default: return "unknown";
    }
}

// Like cudaMemcpy with an explicit kind: each side must be the memory the kind names
// (a device range must lie inside the device memory), else an error, not a guess.
int32_t copy(void *c, void *dst, const void *src, size_t bytes, int32_t kind)
{
    Instance *in = self(c);
    if (bytes == 0)
        return DTP_OK;
    const bool src_dev = in->arena->contains(src, bytes);
    const bool dst_dev = in->arena->contains(dst, bytes);
    const bool src_host = !in->arena->contains(src);
    const bool dst_host = !in->arena->contains(dst);
    bool ok = false;
    switch (kind) {
    case DTP_COPY_HOST_TO_DEVICE: ok = src_host && dst_dev; break;
    case DTP_COPY_DEVICE_TO_HOST: ok = src_dev && dst_host; break;
    case DTP_COPY_DEVICE_TO_DEVICE: ok = src_dev && dst_dev; break;
    case DTP_COPY_HOST_TO_HOST: ok = src_host && dst_host; break;
    default: break;
    }
    if (!ok)
        return fail(in, DTP_ERR_INVALID_ARGUMENT,
                    std::string("memcpy ") + kind_name(kind) + " of " + std::to_string(bytes) +
                        " bytes from " + (src_host ? "host" : "device") + " memory to " +
                        (dst_host ? "host" : "device") +
                        " memory (or a device range runs past the device memory)");
    std::memmove(dst_dev ? in->arena->shadow(dst) : dst,
                 src_dev ? in->arena->shadow(src) : src, bytes);
    return DTP_OK;
}

// Forwards to the oneDNN member, or says which op it lacks.
#define FORWARD(member, ...)                                                              \
    do {                                                                                 \
        Instance *in = self(c);                                                          \
        if (in->onednn->ops.member == nullptr)                                           \
            return fail(in, DTP_ERR_UNSUPPORTED, "the oneDNN plugin lacks " #member);     \
        return in->onednn->ops.member(in->inner, __VA_ARGS__);                           \
    } while (0)

int32_t fill(void *c, const dtp_tensor_t *d, void *x, float value)
{
    FORWARD(fill, d, dev(in, x), value);
}

int32_t cast(void *c, const dtp_tensor_t *d, const void *src, int32_t dst_dtype, void *dst)
{
    FORWARD(cast, d, dev(in, src), dst_dtype, dev(in, dst));
}

int32_t matmul(void *c, int32_t dtype, int32_t c_dtype, int32_t trans_a, int32_t trans_b,
               int64_t m, int64_t n, int64_t k, float alpha, const void *a, const void *b,
               float beta, void *out)
{
    FORWARD(matmul, dtype, c_dtype, trans_a, trans_b, m, n, k, alpha, dev(in, a), dev(in, b),
            beta, dev(in, out));
}

int32_t add(void *c, const dtp_tensor_t *d, const void *a, const void *b, void *out)
{
    FORWARD(add, d, dev(in, a), dev(in, b), dev(in, out));
}

int32_t axpby(void *c, const dtp_tensor_t *d, float alpha, const void *x, float beta, void *y)
{
    FORWARD(axpby, d, alpha, dev(in, x), beta, dev(in, y));
}

int32_t scale(void *c, const dtp_tensor_t *d, float alpha, void *x)
{
    FORWARD(scale, d, alpha, dev(in, x));
}

int32_t bias_add(void *c, const dtp_tensor_t *d, void *y, const float *bias)
{
    FORWARD(bias_add, d, dev(in, y), dev(in, bias));
}

int32_t bias_backward(void *c, const dtp_tensor_t *d, const void *dy, float *dbias)
{
    FORWARD(bias_backward, d, dev(in, dy), dev(in, dbias));
}

int32_t relu_forward(void *c, const dtp_tensor_t *d, const void *x, void *y)
{
    FORWARD(relu_forward, d, dev(in, x), dev(in, y));
}

int32_t relu_backward(void *c, const dtp_tensor_t *d, const void *x, const void *dy, void *dx)
{
    FORWARD(relu_backward, d, dev(in, x), dev(in, dy), dev(in, dx));
}

int32_t conv_forward(void *c, const dtp_conv_t *p, const dtp_tensor_t *x_desc, const void *x,
                     const dtp_tensor_t *w_desc, const void *w, const float *bias,
                     const dtp_tensor_t *y_desc, void *y)
{
    FORWARD(conv_forward, p, x_desc, dev(in, x), w_desc, dev(in, w), dev(in, bias), y_desc,
            dev(in, y));
}

int32_t conv_backward_data(void *c, const dtp_conv_t *p, const dtp_tensor_t *w_desc,
                           const void *w, const dtp_tensor_t *dy_desc, const void *dy,
                           const dtp_tensor_t *dx_desc, void *dx)
{
    FORWARD(conv_backward_data, p, w_desc, dev(in, w), dy_desc, dev(in, dy), dx_desc,
            dev(in, dx));
}

int32_t conv_backward_weights(void *c, const dtp_conv_t *p, const dtp_tensor_t *x_desc,
                              const void *x, const dtp_tensor_t *dy_desc, const void *dy,
                              const dtp_tensor_t *dw_desc, void *dw, float *dbias)
{
    FORWARD(conv_backward_weights, p, x_desc, dev(in, x), dy_desc, dev(in, dy), dw_desc,
            dev(in, dw), dev(in, dbias));
}

int32_t pool_workspace_size(void *c, const dtp_pool_t *p, const dtp_tensor_t *x_desc,
                            const dtp_tensor_t *y_desc, size_t *bytes)
{
    FORWARD(pool_workspace_size, p, x_desc, y_desc, bytes); // bytes: a host out-value
}

int32_t pool_forward(void *c, const dtp_pool_t *p, const dtp_tensor_t *x_desc, const void *x,
                     const dtp_tensor_t *y_desc, void *y, void *workspace)
{
    FORWARD(pool_forward, p, x_desc, dev(in, x), y_desc, dev(in, y), dev(in, workspace));
}

int32_t pool_backward(void *c, const dtp_pool_t *p, const dtp_tensor_t *x_desc, const void *x,
                      const dtp_tensor_t *y_desc, const void *y, const void *dy, void *dx,
                      const void *workspace)
{
    FORWARD(pool_backward, p, x_desc, dev(in, x), y_desc, dev(in, y), dev(in, dy), dev(in, dx),
            dev(in, workspace));
}

int32_t batchnorm_forward_training(void *c, const dtp_tensor_t *x_desc, const void *x,
                                   const float *scale_, const float *shift, float epsilon,
                                   float momentum, void *y, float *save_mean,
                                   float *save_invstd, float *running_mean,
                                   float *running_var)
{
    FORWARD(batchnorm_forward_training, x_desc, dev(in, x), dev(in, scale_), dev(in, shift),
            epsilon, momentum, dev(in, y), dev(in, save_mean), dev(in, save_invstd),
            dev(in, running_mean), dev(in, running_var));
}

int32_t batchnorm_forward_inference(void *c, const dtp_tensor_t *x_desc, const void *x,
                                    const float *scale_, const float *shift,
                                    const float *running_mean, const float *running_var,
                                    float epsilon, void *y)
{
    FORWARD(batchnorm_forward_inference, x_desc, dev(in, x), dev(in, scale_), dev(in, shift),
            dev(in, running_mean), dev(in, running_var), epsilon, dev(in, y));
}

int32_t batchnorm_backward(void *c, const dtp_tensor_t *x_desc, const void *x, const void *dy,
                           const float *scale_, const float *save_mean,
                           const float *save_invstd, float epsilon, void *dx, float *dscale,
                           float *dshift)
{
    FORWARD(batchnorm_backward, x_desc, dev(in, x), dev(in, dy), dev(in, scale_),
            dev(in, save_mean), dev(in, save_invstd), epsilon, dev(in, dx), dev(in, dscale),
            dev(in, dshift));
}

// loss and correct are host pointers (the ABI); labels are device memory like the logits
// (the cuDNN plugin's kernels read them on the device), and are translated when they are.
int32_t softmax_xent_forward(void *c, const dtp_tensor_t *d, const void *logits,
                             const int32_t *labels, void *probs, float *loss, int64_t *correct)
{
    FORWARD(softmax_xent_forward, d, dev(in, logits), dev(in, labels), dev(in, probs), loss,
            correct);
}

int32_t softmax_xent_backward(void *c, const dtp_tensor_t *d, const void *probs,
                              const int32_t *labels, float scale_, void *dlogits)
{
    FORWARD(softmax_xent_backward, d, dev(in, probs), dev(in, labels), scale_,
            dev(in, dlogits));
}

int32_t sgd_update(void *c, const dtp_sgd_t *p, size_t count, float *w, const float *grad,
                   float *momentum_buf)
{
    FORWARD(sgd_update, p, count, dev(in, w), dev(in, grad), dev(in, momentum_buf));
}

int32_t adam_update(void *c, const dtp_adam_t *p, size_t count, float *w, const float *grad,
                    float *m, float *v)
{
    FORWARD(adam_update, p, count, dev(in, w), dev(in, grad), dev(in, m), dev(in, v));
}

#undef FORWARD

const dt_compute_v1_t kOps = {
    sizeof(dt_compute_v1_t), DT_COMPUTE_VERSION_2, "fakedevice",
    init, finalize, info, synchronize,
    alloc, free_memory, copy, fill, cast,
    matmul, add, axpby, scale, bias_add, bias_backward, relu_forward, relu_backward,
    conv_forward, conv_backward_data, conv_backward_weights,
    pool_workspace_size, pool_forward, pool_backward,
    batchnorm_forward_training, batchnorm_forward_inference, batchnorm_backward,
    softmax_xent_forward, softmax_xent_backward,
    sgd_update, adam_update,
    // No fused ReLU ops: the core composes them from the members above, on memory the
    // CPU cannot touch, which is what the tests of the fused API here check.
    nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
};

// The table of a plugin built before the fused ReLU ops existed: its struct_size ends
// before them. What lies beyond (here members that abort) must never be called: the core
// copies struct_size bytes and composes the fused ops itself.
[[noreturn]] void read_past_the_table(const char *member)
{
    std::fprintf(stderr, "fakedevice: the core called %s, beyond the table's struct_size\n",
                 member);
    std::abort();
}
int32_t bn_relu_training_past_end(void *, const dtp_tensor_t *, const void *, const float *,
                                  const float *, float, float, void *, float *, float *,
                                  float *, float *)
{
    read_past_the_table("batchnorm_relu_forward_training");
}
int32_t bn_relu_inference_past_end(void *, const dtp_tensor_t *, const void *, const float *,
                                   const float *, const float *, const float *, float, void *)
{
    read_past_the_table("batchnorm_relu_forward_inference");
}
int32_t bn_relu_backward_past_end(void *, const dtp_tensor_t *, const void *, const void *,
                                  const void *, const float *, const float *, const float *,
                                  float, void *, float *, float *)
{
    read_past_the_table("batchnorm_relu_backward");
}
int32_t add_relu_past_end(void *, const dtp_tensor_t *, const void *, const void *, void *)
{
    read_past_the_table("add_relu");
}
int32_t relu_backward_sum_past_end(void *, const dtp_tensor_t *, const void *, const void *,
                                   const void *, void *)
{
    read_past_the_table("relu_backward_sum");
}
int32_t bn_add_relu_training_past_end(void *, const dtp_tensor_t *, const void *, const void *,
                                      const float *, const float *, float, float, void *,
                                      float *, float *, float *, float *)
{
    read_past_the_table("batchnorm_add_relu_forward_training");
}
int32_t bn_add_relu_inference_past_end(void *, const dtp_tensor_t *, const void *,
                                       const void *, const float *, const float *,
                                       const float *, const float *, float, void *)
{
    read_past_the_table("batchnorm_add_relu_forward_inference");
}

dt_compute_v1_t short_table()
{
    dt_compute_v1_t t = kOps;
    t.struct_size = offsetof(dt_compute_v1_t, batchnorm_relu_forward_training);
    t.batchnorm_relu_forward_training = bn_relu_training_past_end;
    t.batchnorm_relu_forward_inference = bn_relu_inference_past_end;
    t.batchnorm_relu_backward = bn_relu_backward_past_end;
    t.add_relu = add_relu_past_end;
    t.relu_backward_sum = relu_backward_sum_past_end;
    t.batchnorm_add_relu_forward_training = bn_add_relu_training_past_end;
    t.batchnorm_add_relu_forward_inference = bn_add_relu_inference_past_end;
    return t;
}
const dt_compute_v1_t kShortOps = short_table();

} // namespace
} // namespace fakedevice

extern "C" DT_PLUGIN_EXPORT int32_t DT_PLUGIN_ENTRY(const dt_plugin_offer_t *offer,
                                                    dt_plugin_answer_t *answer)
{
    if (offer == nullptr || answer == nullptr)
        return DTP_ERR_INVALID_ARGUMENT;
    answer->kind = DT_PLUGIN_KIND_COMPUTE;
    answer->name = "fakedevice";
    // DISTTRAIN_FAKE_DEVICE_OPS_VERSION=1: answer version 1, as a plugin built before
    // version 2 does (the core must then refuse layouts and mixed dtypes itself).
    const char *asked = std::getenv("DISTTRAIN_FAKE_DEVICE_OPS_VERSION");
    const uint32_t mine = asked != nullptr && std::string(asked) == "1" ? DT_COMPUTE_VERSION_1
                                                                         : DT_COMPUTE_VERSION_2;
    if (offer->min_ops_version > mine || offer->max_ops_version < DT_COMPUTE_VERSION_1) {
        answer->decline_reason = "fakedevice speaks compute ops versions 1 and 2 only";
        return DTP_ERR_UNSUPPORTED;
    }
    answer->ops_version = std::min<uint32_t>(mine, offer->max_ops_version);
    // DISTTRAIN_FAKE_DEVICE_TABLE=short: the table of a plugin built before the fused ops.
    const char *table = std::getenv("DISTTRAIN_FAKE_DEVICE_TABLE");
    answer->ops = table != nullptr && std::string(table) == "short" ? &fakedevice::kShortOps
                                                                     : &fakedevice::kOps;
    return DTP_OK;
}
