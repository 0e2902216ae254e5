// SPDX-License-Identifier: Apache-2.0
// The fake-device compute plugin through the public API: DISTTRAIN_COMPUTE=fakedevice
// gives a context that says GPU and names the fake memory provider, whose memory the CPU
// cannot touch, whose operations give the oneDNN plugin's results bit for bit, and whose
// pointers the memory provider knows (one arena in the process).
#include "fakedevice_test_util.h"

#include <disttrain/compute.h>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace fakedevice::test {
namespace {

// A compute context; plugin NULL takes DISTTRAIN_COMPUTE (fakedevice, set by meson).
class Compute {
public:
    explicit Compute(const char *plugin)
    {
        dt_compute_params_t p{};
        p.field_mask = DT_COMPUTE_PARAM_FIELD_THREADS;
        p.threads = 1; // the same primitives on both sides, whatever the machine
        if (plugin != nullptr) {
            p.field_mask |= DT_COMPUTE_PARAM_FIELD_PLUGIN;
            p.plugin = plugin;
        }
        EXPECT_EQ(dt_compute_create(&p, &h_), DT_OK) << dt_last_error();
    }
    ~Compute()
    {
        for (void *p : owned_)
            EXPECT_EQ(dt_compute_free(h_, p), DT_OK) << dt_last_error();
        dt_compute_destroy(h_);
    }
    Compute(const Compute &) = delete;
    Compute &operator=(const Compute &) = delete;

    dt_compute_h get() const { return h_; }

    void *alloc(size_t bytes)
    {
        void *p = nullptr;
        EXPECT_EQ(dt_compute_alloc(h_, bytes, &p), DT_OK) << dt_last_error();
        owned_.push_back(p);
        return p;
    }
    template <typename T>
    T *upload(const std::vector<T> &host)
    {
        auto *p = static_cast<T *>(alloc(host.size() * sizeof(T)));
        EXPECT_EQ(dt_compute_memcpy(h_, p, host.data(), host.size() * sizeof(T),
                                    DT_COPY_HOST_TO_DEVICE), DT_OK) << dt_last_error();
        return p;
    }
    template <typename T>
    std::vector<T> download(const void *p, size_t n)
    {
        std::vector<T> host(n);
        EXPECT_EQ(dt_compute_memcpy(h_, host.data(), p, n * sizeof(T), DT_COPY_DEVICE_TO_HOST),
                  DT_OK) << dt_last_error();
        return host;
    }

private:
    dt_compute_h h_ = nullptr;
    std::vector<void *> owned_;
};

std::vector<float> random_floats(size_t n, uint32_t seed)
{
    std::mt19937 gen(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> out(n);
    for (auto &v : out)
        v = dist(gen);
    return out;
}

// Everything one small training step computes, downloaded to the host.
struct Results {
    std::vector<float> logits, relu, probs, dlogits, w, momentum;
    float loss = 0;
    int64_t correct = 0;
};

// matmul, ReLU, softmax cross-entropy forward and backward, two momentum SGD steps: the
// ops a training step of the mlp runs, with the labels in context memory.
Results step(Compute &c)
{
    constexpr int64_t m = 33, n = 17, k = 29;
    const std::vector<float> a = random_floats(m * k, 1), b = random_floats(k * n, 2);
    std::vector<int32_t> labels(m);
    for (int64_t i = 0; i < m; ++i)
        labels[i] = static_cast<int32_t>((i * 7) % n);
    float *da = c.upload(a), *db = c.upload(b);
    int32_t *dlabels = c.upload(labels);
    auto *out = static_cast<float *>(c.alloc(m * n * sizeof(float)));
    auto *act = static_cast<float *>(c.alloc(m * n * sizeof(float)));
    auto *probs = static_cast<float *>(c.alloc(m * n * sizeof(float)));
    auto *dlogits = static_cast<float *>(c.alloc(m * n * sizeof(float)));
    const dt_tensor_desc_t d = dt_tensor_desc_2d(DT_FLOAT32, m, n);

    Results r;
    EXPECT_EQ(dt_compute_matmul(c.get(), DT_FLOAT32, DT_FLOAT32, 0, 0, m, n, k, 1.0f, da, db,
                                0.0f, out), DT_OK) << dt_last_error();
    EXPECT_EQ(dt_compute_relu_forward(c.get(), &d, out, act), DT_OK) << dt_last_error();
    EXPECT_EQ(dt_compute_softmax_cross_entropy_forward(c.get(), &d, act, dlabels, probs,
                                                       &r.loss, &r.correct), DT_OK)
        << dt_last_error();
    EXPECT_EQ(dt_compute_softmax_cross_entropy_backward(c.get(), &d, probs, dlabels,
                                                        1.0f / m, dlogits), DT_OK)
        << dt_last_error();

    float *w = c.upload(b);
    float *mom = c.upload(std::vector<float>(k * n, 0.0f));
    const float *grad = c.upload(random_floats(k * n, 3));
    const dt_sgd_params_t sgd{0.1f, 0.9f, 1e-4f, 0};
    for (int i = 0; i < 2; ++i)
        EXPECT_EQ(dt_compute_sgd_update(c.get(), &sgd, k * n, w, grad, mom), DT_OK)
            << dt_last_error();
    EXPECT_EQ(dt_compute_synchronize(c.get()), DT_OK) << dt_last_error();

    r.logits = c.download<float>(out, m * n);
    r.relu = c.download<float>(act, m * n);
    r.probs = c.download<float>(probs, m * n);
    r.dlogits = c.download<float>(dlogits, m * n);
    r.w = c.download<float>(w, k * n);
    r.momentum = c.download<float>(mom, k * n);
    return r;
}

bool same_bits(const std::vector<float> &x, const std::vector<float> &y)
{
    return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

TEST(FakeCompute, QuerySaysGpuOnTheFakeMemoryProvider)
{
    Compute c(nullptr);
    dt_compute_attr_t attr{};
    attr.field_mask = DT_COMPUTE_ATTR_FIELD_PLUGIN | DT_COMPUTE_ATTR_FIELD_DEVICE_KIND |
                      DT_COMPUTE_ATTR_FIELD_DEVICE_NAME | DT_COMPUTE_ATTR_FIELD_THREADS |
                      DT_COMPUTE_ATTR_FIELD_STREAM | DT_COMPUTE_ATTR_FIELD_MEMORY_PROVIDER;
    attr.stream = &attr; // must be overwritten with NULL
    ASSERT_EQ(dt_compute_query(c.get(), &attr), DT_OK) << dt_last_error();
    EXPECT_STREQ(attr.plugin, "fakedevice");
    EXPECT_EQ(attr.device_kind, DT_COMPUTE_DEVICE_GPU);
    ASSERT_NE(attr.device_name, nullptr);
    EXPECT_EQ(std::string(attr.device_name).rfind("fake device (oneDNN on cpu", 0), 0u)
        << attr.device_name;
    EXPECT_EQ(attr.threads, 1);
    EXPECT_EQ(attr.stream, nullptr); // every op blocks
    ASSERT_NE(attr.memory_provider, nullptr);
    EXPECT_STREQ(attr.memory_provider, "fakedevice");
}

TEST(FakeCompute, OpsGiveTheOnednnResultsBitForBit)
{
    Compute fake(nullptr), onednn("onednn");
    const Results x = step(fake), y = step(onednn);
    EXPECT_TRUE(same_bits(x.logits, y.logits));
    EXPECT_TRUE(same_bits(x.relu, y.relu));
    EXPECT_TRUE(same_bits(x.probs, y.probs));
    EXPECT_TRUE(same_bits(x.dlogits, y.dlogits));
    EXPECT_TRUE(same_bits(x.w, y.w));
    EXPECT_TRUE(same_bits(x.momentum, y.momentum));
    EXPECT_EQ(std::memcmp(&x.loss, &y.loss, sizeof(float)), 0) << x.loss << " " << y.loss;
    EXPECT_EQ(x.correct, y.correct);
    EXPECT_GT(x.correct, 0); // ReLU of random logits: some rows hit, so the check is real
}

// Batch norm + ReLU (training, inference, backward), add + ReLU, ReLU's gradient of a
// sum and batch norm + shortcut add + ReLU (training, inference) of one tensor shape,
// downloaded to the host.
struct FusedResults {
    std::vector<float> y, mean, invstd, running_mean, running_var, y_eval, dx, dscale, dshift,
        sum, dsum, y_add, y_add_eval;
};

FusedResults fused_ops(Compute &c, const dt_tensor_desc_t &d, int64_t channels, uint32_t seed)
{
    size_t n = 1;
    for (int i = 0; i < d.ndims; ++i)
        n *= size_t(d.dims[i]);
    const size_t ch = size_t(channels);
    const float *x = c.upload(random_floats(n, seed));
    const float *dy = c.upload(random_floats(n, seed + 1));
    const float *scale = c.upload(std::vector<float>(ch, 1.25f));
    const float *shift = c.upload(random_floats(ch, seed + 2));
    float *rm = c.upload(std::vector<float>(ch, 0.0f));
    float *rv = c.upload(std::vector<float>(ch, 1.0f));
    auto *y = static_cast<float *>(c.alloc(n * sizeof(float)));
    auto *y_eval = static_cast<float *>(c.alloc(n * sizeof(float)));
    auto *dx = static_cast<float *>(c.alloc(n * sizeof(float)));
    auto *sum = static_cast<float *>(c.alloc(n * sizeof(float)));
    auto *dsum = static_cast<float *>(c.alloc(n * sizeof(float)));
    auto *y_add = static_cast<float *>(c.alloc(n * sizeof(float)));
    auto *y_add_eval = static_cast<float *>(c.alloc(n * sizeof(float)));
    auto *mean2 = static_cast<float *>(c.alloc(ch * sizeof(float)));
    auto *invstd2 = static_cast<float *>(c.alloc(ch * sizeof(float)));
    auto *mean = static_cast<float *>(c.alloc(ch * sizeof(float)));
    auto *invstd = static_cast<float *>(c.alloc(ch * sizeof(float)));
    auto *dscale = static_cast<float *>(c.alloc(ch * sizeof(float)));
    auto *dshift = static_cast<float *>(c.alloc(ch * sizeof(float)));

    EXPECT_EQ(dt_compute_batchnorm_relu_forward_training(c.get(), &d, x, scale, shift, 1e-5f,
                                                         0.1f, y, mean, invstd, rm, rv),
              DT_OK) << dt_last_error();
    EXPECT_EQ(dt_compute_batchnorm_relu_forward_inference(c.get(), &d, x, scale, shift, rm, rv,
                                                          1e-5f, y_eval),
              DT_OK) << dt_last_error();
    EXPECT_EQ(dt_compute_batchnorm_relu_backward(c.get(), &d, x, y, dy, scale, mean, invstd,
                                                 1e-5f, dx, dscale, dshift),
              DT_OK) << dt_last_error();
    EXPECT_EQ(dt_compute_add_relu(c.get(), &d, x, dy, sum), DT_OK) << dt_last_error();
    EXPECT_EQ(dt_compute_relu_backward_sum(c.get(), &d, y, x, dy, dsum), DT_OK)
        << dt_last_error();
    EXPECT_EQ(dt_compute_batchnorm_add_relu_forward_training(c.get(), &d, x, dy, scale, shift,
                                                             1e-5f, 0.1f, y_add, mean2, invstd2,
                                                             nullptr, nullptr),
              DT_OK) << dt_last_error();
    EXPECT_EQ(dt_compute_batchnorm_add_relu_forward_inference(c.get(), &d, x, dy, scale, shift,
                                                              rm, rv, 1e-5f, y_add_eval),
              DT_OK) << dt_last_error();
    EXPECT_EQ(dt_compute_synchronize(c.get()), DT_OK) << dt_last_error();

    FusedResults r;
    r.y = c.download<float>(y, n);
    r.mean = c.download<float>(mean, ch);
    r.invstd = c.download<float>(invstd, ch);
    r.running_mean = c.download<float>(rm, ch);
    r.running_var = c.download<float>(rv, ch);
    r.y_eval = c.download<float>(y_eval, n);
    r.dx = c.download<float>(dx, n);
    r.dscale = c.download<float>(dscale, ch);
    r.dshift = c.download<float>(dshift, ch);
    r.sum = c.download<float>(sum, n);
    r.dsum = c.download<float>(dsum, n);
    r.y_add = c.download<float>(y_add, n);
    r.y_add_eval = c.download<float>(y_add_eval, n);
    return r;
}

// The fake device offers no fused ops, so the core runs the unfused sequence on its
// memory (a host access would crash) with a scratch buffer it allocates there; the
// oneDNN plugin fuses. Both must give the same bits. The second, larger shape makes the
// scratch buffer grow.
TEST(FakeCompute, FusedReluOpsComposedOnTheDeviceMatchTheOnednnFusion)
{
    Compute fake(nullptr), onednn("onednn");
    const dt_tensor_desc_t shapes[] = {dt_tensor_desc_2d(DT_FLOAT32, 40, 32),
                                       dt_tensor_desc_4d(DT_FLOAT32, 2, 6, 7, 5)};
    uint32_t seed = 20;
    for (const auto &d : shapes) {
        SCOPED_TRACE(d.ndims == 2 ? "channels-last rows" : "NCHW");
        const FusedResults a = fused_ops(fake, d, d.dims[1], seed);
        const FusedResults b = fused_ops(onednn, d, d.dims[1], seed);
        seed += 10;
        EXPECT_TRUE(same_bits(a.y, b.y));
        EXPECT_TRUE(same_bits(a.mean, b.mean));
        EXPECT_TRUE(same_bits(a.invstd, b.invstd));
        EXPECT_TRUE(same_bits(a.running_mean, b.running_mean));
        EXPECT_TRUE(same_bits(a.running_var, b.running_var));
        EXPECT_TRUE(same_bits(a.y_eval, b.y_eval));
        EXPECT_TRUE(same_bits(a.dx, b.dx));
        EXPECT_TRUE(same_bits(a.dscale, b.dscale));
        EXPECT_TRUE(same_bits(a.dshift, b.dshift));
        EXPECT_TRUE(same_bits(a.sum, b.sum));
        EXPECT_TRUE(same_bits(a.y_add, b.y_add));
        EXPECT_TRUE(same_bits(a.y_add_eval, b.y_add_eval));
        EXPECT_TRUE(same_bits(a.dsum, b.dsum));
        // ReLU did something: some outputs are 0, some are not.
        const auto zeros = std::count(a.y.begin(), a.y.end(), 0.0f);
        EXPECT_GT(zeros, 0);
        EXPECT_LT(size_t(zeros), a.y.size());
    }
}

// A plugin built before the fused ops answers a shorter table; beyond its end the fake
// plugin placed members that abort, so the core must compose from what the table holds.
TEST(FakeCompute, AShorterTableGetsTheFusedOpsComposed)
{
    setenv("DISTTRAIN_FAKE_DEVICE_TABLE", "short", 1);
    Compute fake(nullptr);
    unsetenv("DISTTRAIN_FAKE_DEVICE_TABLE");
    Compute onednn("onednn");
    const dt_tensor_desc_t d = dt_tensor_desc_2d(DT_FLOAT32, 24, 16);
    const FusedResults a = fused_ops(fake, d, 16, 50), b = fused_ops(onednn, d, 16, 50);
    EXPECT_TRUE(same_bits(a.y, b.y));
    EXPECT_TRUE(same_bits(a.y_eval, b.y_eval));
    EXPECT_TRUE(same_bits(a.dx, b.dx));
    EXPECT_TRUE(same_bits(a.dscale, b.dscale));
    EXPECT_TRUE(same_bits(a.sum, b.sum));
    EXPECT_TRUE(same_bits(a.dsum, b.dsum));
    EXPECT_TRUE(same_bits(a.y_add, b.y_add));
    EXPECT_TRUE(same_bits(a.y_add_eval, b.y_add_eval));
}

TEST(FakeComputeDeathTest, ACpuReadOfItsMemoryCrashes)
{
    GTEST_FLAG_SET(death_test_style, "threadsafe"); // oneDNN may have started threads
    Compute c(nullptr);
    auto *p = static_cast<volatile const float *>(c.alloc(64 * sizeof(float)));
    EXPECT_EXIT({ float v = *p; (void)v; }, ::testing::KilledBySignal(SIGSEGV), "");
}

TEST(FakeCompute, CopiesMustMatchTheirKind)
{
    Compute c(nullptr);
    void *dev = c.alloc(64);
    std::vector<char> host(64, 1), other(64, 2);
    EXPECT_EQ(dt_compute_memcpy(c.get(), host.data(), other.data(), 64, DT_COPY_HOST_TO_DEVICE),
              DT_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(dt_last_error()).find("host to device"), std::string::npos)
        << dt_last_error();
    EXPECT_EQ(dt_compute_memcpy(c.get(), dev, host.data(), 64, DT_COPY_DEVICE_TO_HOST),
              DT_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(dt_compute_memcpy(c.get(), dev, host.data(), 64, DT_COPY_HOST_TO_HOST),
              DT_ERR_INVALID_ARGUMENT);
    // The four kinds that are right.
    EXPECT_EQ(dt_compute_memcpy(c.get(), other.data(), host.data(), 64, DT_COPY_HOST_TO_HOST),
              DT_OK);
    EXPECT_EQ(dt_compute_memcpy(c.get(), dev, host.data(), 64, DT_COPY_HOST_TO_DEVICE), DT_OK);
    void *dev2 = c.alloc(64);
    EXPECT_EQ(dt_compute_memcpy(c.get(), dev2, dev, 64, DT_COPY_DEVICE_TO_DEVICE), DT_OK);
    std::vector<char> back(64, 0);
    EXPECT_EQ(dt_compute_memcpy(c.get(), back.data(), dev2, 64, DT_COPY_DEVICE_TO_HOST), DT_OK);
    EXPECT_EQ(back, host);
}

TEST(FakeCompute, TheMemoryProviderSharesItsMemory)
{
    Compute c(nullptr);
    Provider provider; // the library the core loads for DISTTRAIN_MEMORY=fakedevice
    const dt_memory_v1_t &ops = provider.ops();

    // Compute memory is device memory to the provider, and its copies read it.
    const std::vector<float> values = random_floats(256, 4);
    float *mine = c.upload(values);
    dt_memory_pointer_info_t info{};
    info.struct_size = sizeof(info);
    ASSERT_EQ(ops.pointer_query(provider.m(), mine, &info), DTP_OK);
    EXPECT_EQ(info.memory_type, DTP_MEMORY_DEVICE);
    std::vector<float> seen(values.size(), 0.0f);
    void *event = nullptr;
    ASSERT_EQ(ops.event_create(provider.m(), &event), DTP_OK);
    ASSERT_EQ(ops.copy_async(provider.m(), seen.data(), mine, values.size() * sizeof(float),
                             DTP_MEMORY_COPY_DEVICE_TO_HOST, nullptr), DTP_OK);
    ASSERT_EQ(ops.event_record(provider.m(), event, nullptr), DTP_OK);
    while (ops.event_query(provider.m(), event) == DTP_INPROGRESS) {
    }
    EXPECT_TRUE(same_bits(seen, values));
    EXPECT_EQ(ops.event_destroy(provider.m(), event), DTP_OK);

    // Provider memory is device memory to the compute context.
    void *theirs = provider.device_alloc(values.size() * sizeof(float));
    ASSERT_EQ(dt_compute_memcpy(c.get(), theirs, mine, values.size() * sizeof(float),
                                DT_COPY_DEVICE_TO_DEVICE), DT_OK) << dt_last_error();
    EXPECT_TRUE(same_bits(c.download<float>(theirs, values.size()), values));
    EXPECT_EQ(ops.device_free(provider.m(), theirs), DTP_OK);
}

// A plugin that answered compute ops version 1 (as one built before version 2) reads no
// layout and no mixed dtypes: the core refuses channels-last and bfloat16-with-float32
// convolutions for it, naming the version and the fix, and still runs plain NCHW.
TEST(FakeCompute, AVersionOnePluginGetsNoLayoutAndNoMixedDtypes)
{
    setenv("DISTTRAIN_FAKE_DEVICE_OPS_VERSION", "1", 1);
    Compute c(nullptr);
    unsetenv("DISTTRAIN_FAKE_DEVICE_OPS_VERSION");
    const float *x = c.upload(random_floats(2 * 4 * 6 * 6, 7));
    const float *w = c.upload(random_floats(8 * 4 * 3 * 3, 8));
    auto *y = static_cast<float *>(c.alloc(2 * 8 * 4 * 4 * sizeof(float)));
    const dt_tensor_desc_t wd = dt_tensor_desc_4d(DT_FLOAT32, 8, 4, 3, 3);
    dt_conv_params_t p{};
    const dt_tensor_desc_t xd = dt_tensor_desc_4d(DT_FLOAT32, 2, 4, 6, 6);
    const dt_tensor_desc_t yd = dt_tensor_desc_4d(DT_FLOAT32, 2, 8, 4, 4);
    EXPECT_EQ(dt_compute_conv_forward(c.get(), &p, &xd, x, &wd, w, nullptr, nullptr, &yd, y),
              DT_OK) << dt_last_error();

    p.field_mask = DT_CONV_PARAM_FIELD_LAYOUT;
    p.layout = DT_LAYOUT_NHWC;
    const dt_tensor_desc_t xl = dt_tensor_desc_4d(DT_FLOAT32, 2, 6, 6, 4);
    const dt_tensor_desc_t yl = dt_tensor_desc_4d(DT_FLOAT32, 2, 4, 4, 8);
    EXPECT_EQ(dt_compute_conv_forward(c.get(), &p, &xl, x, &wd, w, nullptr, nullptr, &yl, y),
              DT_ERR_UNSUPPORTED);
    std::string why = dt_last_error();
    EXPECT_NE(why.find("compute ops version 1"), std::string::npos) << why;
    EXPECT_NE(why.find("DISTTRAIN_LAYOUT=nchw"), std::string::npos) << why;
    auto *dx = static_cast<float *>(c.alloc(2 * 4 * 6 * 6 * sizeof(float)));
    auto *dw = static_cast<float *>(c.alloc(8 * 4 * 3 * 3 * sizeof(float)));
    EXPECT_EQ(dt_compute_conv_backward_data(c.get(), &p, &wd, w, &yl, y, &xl, dx),
              DT_ERR_UNSUPPORTED);
    EXPECT_NE(std::string(dt_last_error()).find("channels-last"), std::string::npos)
        << dt_last_error();
    EXPECT_EQ(dt_compute_conv_backward_weights(c.get(), &p, &xl, x, &yl, y, &wd, dw, nullptr,
                                               nullptr), DT_ERR_UNSUPPORTED);
    EXPECT_NE(std::string(dt_last_error()).find("channels-last"), std::string::npos)
        << dt_last_error();

    dt_pool_params_t pp{};
    pp.field_mask =
        DT_POOL_PARAM_FIELD_KIND | DT_POOL_PARAM_FIELD_KERNEL | DT_POOL_PARAM_FIELD_LAYOUT;
    pp.kind = DT_POOL_MAX;
    pp.kernel[0] = pp.kernel[1] = 2;
    pp.layout = DT_LAYOUT_NHWC;
    const dt_tensor_desc_t pl = dt_tensor_desc_4d(DT_FLOAT32, 2, 3, 3, 4);
    EXPECT_EQ(dt_compute_pool_forward(c.get(), &pp, &xl, x, &pl, y, nullptr), DT_ERR_UNSUPPORTED);
    EXPECT_NE(std::string(dt_last_error()).find("channels-last"), std::string::npos)
        << dt_last_error();

    dt_conv_params_t plain{};
    const dt_tensor_desc_t x16 = dt_tensor_desc_4d(DT_BFLOAT16, 2, 4, 6, 6);
    const dt_tensor_desc_t y16 = dt_tensor_desc_4d(DT_BFLOAT16, 2, 8, 4, 4);
    EXPECT_EQ(dt_compute_conv_forward(c.get(), &plain, &x16, x, &wd, w, nullptr, nullptr, &y16,
                                      y), DT_ERR_UNSUPPORTED);
    why = dt_last_error();
    EXPECT_NE(why.find("bfloat16 activations beside float32 weights"), std::string::npos) << why;
}

} // namespace
} // namespace fakedevice::test
