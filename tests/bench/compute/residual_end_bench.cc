// SPDX-License-Identifier: Apache-2.0
// The end of a ResNet-50 residual block on the compute plugin the environment picks
// (DISTTRAIN_COMPUTE: the cuDNN plugin on a GPU, oneDNN on a CPU): the batch norm with
// the shortcut's add and ReLU in one pass (dt_compute_batchnorm_add_relu_forward_training)
// against the batch norm, then dt_compute_add_relu, in alternating rounds on the four
// block-end shapes of ResNet-50. Prints the median time of each per shape, their ratio,
// and what a whole step's 16 block ends come to; checks once per shape that both give the
// same bits (exit 1 if not). Never asserts a time.
//
//   residual_end_bench [--batch N (64)] [--rounds R (7)] [--calls C (10)]
//                      [--layout nhwc|nchw (nhwc)] [--bf16 (bfloat16 activations, the
//                      models' DISTTRAIN_ACTIVATIONS=bfloat16)]
#include <disttrain/compute.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct BlockEnd {
    int64_t channels, side; // side x side maps
    int blocks;             // how many blocks of ResNet-50 end with this shape
};

// layer1 to layer4 of ResNet-50 at 224 x 224.
constexpr BlockEnd kEnds[] = {{256, 56, 3}, {512, 28, 4}, {1024, 14, 6}, {2048, 7, 3}};

struct Options {
    int64_t batch = 64;
    int rounds = 7, calls = 10;
    bool nhwc = true, bf16 = false;
};

bool parse(int argc, char **argv, Options &o)
{
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool has_value = i + 1 < argc;
        if (a == "--batch" && has_value)
            o.batch = std::atoll(argv[++i]);
        else if (a == "--rounds" && has_value)
            o.rounds = std::atoi(argv[++i]);
        else if (a == "--calls" && has_value)
            o.calls = std::atoi(argv[++i]);
        else if (a == "--layout" && has_value && (!std::strcmp(argv[i + 1], "nhwc") ||
                                                  !std::strcmp(argv[i + 1], "nchw")))
            o.nhwc = !std::strcmp(argv[++i], "nhwc");
        else if (a == "--bf16")
            o.bf16 = true;
        else
            return false;
    }
    return o.batch >= 1 && o.rounds >= 1 && o.calls >= 1;
}

void ok(dt_status_t s, const char *what)
{
    if (s != DT_OK) {
        std::fprintf(stderr, "residual_end_bench: %s: %s: %s\n", what, dt_status_string(s),
                     dt_last_error());
        std::exit(1);
    }
}

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Device buffers of one shape: x, the shortcut z, the outputs of both ways, the
// per-channel vectors.
class Buffers {
public:
    Buffers(dt_compute_h c, size_t elements, size_t element_bytes, int64_t channels)
        : c_(c), bytes_(elements * element_bytes)
    {
        std::vector<float> host(elements);
        for (size_t i = 0; i < elements; ++i) // varied values of both signs
            host[i] = float(int64_t((i * 2654435761u) % 2001) - 1000) / 500.0f;
        const dt_tensor_desc_t flat = dt_tensor_desc_1d(DT_FLOAT32, int64_t(elements));
        void *staging = alloc(elements * 4);
        ok(dt_compute_memcpy(c, staging, host.data(), elements * 4, DT_COPY_HOST_TO_DEVICE),
           "upload");
        const dt_dtype_t t = element_bytes == 2 ? DT_BFLOAT16 : DT_FLOAT32;
        x = alloc(bytes_);
        z = alloc(bytes_);
        ok(dt_compute_cast(c, &flat, staging, t, x), "cast x");
        std::reverse(host.begin(), host.end());
        ok(dt_compute_memcpy(c, staging, host.data(), elements * 4, DT_COPY_HOST_TO_DEVICE),
           "upload");
        ok(dt_compute_cast(c, &flat, staging, t, z), "cast z");
        fused = alloc(bytes_);
        unfused = alloc(bytes_);
        std::vector<float> ones(size_t(channels), 1.0f), zeros(size_t(channels), 0.0f);
        for (float **v : {&scale, &shift, &mean, &invstd, &running_mean, &running_var})
            *v = static_cast<float *>(alloc(size_t(channels) * 4));
        ok(dt_compute_memcpy(c, scale, ones.data(), ones.size() * 4, DT_COPY_HOST_TO_DEVICE),
           "upload");
        ok(dt_compute_memcpy(c, shift, zeros.data(), zeros.size() * 4, DT_COPY_HOST_TO_DEVICE),
           "upload");
        ok(dt_compute_memcpy(c, running_mean, zeros.data(), zeros.size() * 4,
                             DT_COPY_HOST_TO_DEVICE),
           "upload");
        ok(dt_compute_memcpy(c, running_var, ones.data(), ones.size() * 4,
                             DT_COPY_HOST_TO_DEVICE),
           "upload");
    }
    ~Buffers()
    {
        for (void *p : owned_)
            dt_compute_free(c_, p);
    }
    Buffers(const Buffers &) = delete;
    Buffers &operator=(const Buffers &) = delete;

    bool same_outputs() const
    {
        std::vector<unsigned char> a(bytes_), b(bytes_);
        ok(dt_compute_memcpy(c_, a.data(), fused, bytes_, DT_COPY_DEVICE_TO_HOST), "download");
        ok(dt_compute_memcpy(c_, b.data(), unfused, bytes_, DT_COPY_DEVICE_TO_HOST),
           "download");
        return a == b;
    }

    void *x = nullptr, *z = nullptr, *fused = nullptr, *unfused = nullptr;
    float *scale = nullptr, *shift = nullptr, *mean = nullptr, *invstd = nullptr;
    float *running_mean = nullptr, *running_var = nullptr;

private:
    void *alloc(size_t bytes)
    {
        void *p = nullptr;
        ok(dt_compute_alloc(c_, bytes, &p), "alloc");
        owned_.push_back(p);
        return p;
    }
    dt_compute_h c_;
    size_t bytes_;
    std::vector<void *> owned_;
};

} // namespace

int main(int argc, char **argv)
{
    Options o;
    if (!parse(argc, argv, o)) {
        std::fprintf(stderr, "usage: %s [--batch N] [--rounds R] [--calls C] "
                             "[--layout nhwc|nchw] [--bf16]\n", argv[0]);
        return 2;
    }
    dt_compute_h c = nullptr;
    ok(dt_compute_create(nullptr, &c), "dt_compute_create");
    dt_compute_attr_t info{};
    info.field_mask = DT_COMPUTE_ATTR_FIELD_PLUGIN | DT_COMPUTE_ATTR_FIELD_DEVICE_NAME;
    ok(dt_compute_query(c, &info), "dt_compute_query");
    const dt_dtype_t dtype = o.bf16 ? DT_BFLOAT16 : DT_FLOAT32;
    std::printf("residual_end_bench: %s on %s, batch %lld, %s %s, median of %d alternating "
                "rounds of %d calls\n",
                info.plugin, info.device_name, static_cast<long long>(o.batch),
                o.nhwc ? "NHWC" : "NCHW",
                o.bf16 ? "bfloat16" : "float32", o.rounds, o.calls);
    std::printf("%-18s %12s %14s %8s  %s\n", "block end", "fused us", "bn + add us", "ratio",
                "same bits");
    const float eps = 1e-5f, momentum = 0.1f;
    double step_fused = 0, step_unfused = 0;
    bool all_same = true;
    for (const BlockEnd &e : kEnds) {
        const int64_t n = o.batch, ch = e.channels, hw = e.side * e.side;
        // Channels-last activations are normalised through their (N * H * W, C) view, as
        // the models do.
        const dt_tensor_desc_t d = o.nhwc ? dt_tensor_desc_2d(dtype, n * hw, ch)
                                          : dt_tensor_desc_4d(dtype, n, ch, e.side, e.side);
        Buffers b(c, size_t(n * ch * hw), o.bf16 ? 2 : 4, ch);
        auto fused = [&] {
            ok(dt_compute_batchnorm_add_relu_forward_training(
                   c, &d, b.x, b.z, b.scale, b.shift, eps, momentum, b.fused, b.mean, b.invstd,
                   b.running_mean, b.running_var),
               "batchnorm_add_relu_forward_training");
        };
        auto unfused = [&] {
            ok(dt_compute_batchnorm_forward_training(c, &d, b.x, b.scale, b.shift, eps,
                                                     momentum, b.unfused, b.mean, b.invstd,
                                                     b.running_mean, b.running_var),
               "batchnorm_forward_training");
            ok(dt_compute_add_relu(c, &d, b.unfused, b.z, b.unfused), "add_relu");
        };
        auto time_us = [&](auto &&f) {
            ok(dt_compute_synchronize(c), "synchronize");
            const auto t0 = std::chrono::steady_clock::now();
            for (int i = 0; i < o.calls; ++i)
                f();
            ok(dt_compute_synchronize(c), "synchronize");
            const std::chrono::duration<double, std::micro> t =
                std::chrono::steady_clock::now() - t0;
            return t.count() / o.calls;
        };
        time_us(fused); // warm-up: plans, pools
        time_us(unfused);
        std::vector<double> a, u;
        for (int r = 0; r < o.rounds; ++r) {
            a.push_back(time_us(fused));
            u.push_back(time_us(unfused));
        }
        const bool same = b.same_outputs();
        all_same = all_same && same;
        const double fa = median(a), fu = median(u);
        step_fused += fa * e.blocks;
        step_unfused += fu * e.blocks;
        char name[32];
        std::snprintf(name, sizeof name, "%lld x %lld^2", static_cast<long long>(ch),
                      static_cast<long long>(e.side));
        std::printf("%-18s %12.1f %14.1f %8.3f  %s\n", name, fa, fu, fu / fa,
                    same ? "yes" : "NO");
    }
    std::printf("%-18s %12.1f %14.1f %8.3f  (16 block ends of one ResNet-50 step)\n",
                "step", step_fused, step_unfused, step_unfused / step_fused);
    std::fflush(stdout);
    dt_compute_destroy(c);
    if (!all_same) {
        std::fprintf(stderr, "residual_end_bench: the fused and unfused outputs differ\n");
        return 1;
    }
    return 0;
}
