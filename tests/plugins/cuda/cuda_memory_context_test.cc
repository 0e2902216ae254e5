// SPDX-License-Identifier: Apache-2.0
// The CUDA memory provider through the public API, on any machine: a one-rank context
// with DISTTRAIN_MEMORY=cuda loads it from DISTTRAIN_PLUGIN_PATH. Without a GPU (the CI
// machines) dt_context_create must fail with the provider's own "no GPU" reason and the
// variable's name; with one, it must succeed. Which case applies is asked of the plugin
// itself, opened with dlopen the way the core opens it. The test runs a second time on
// the mock CUDA runtime (cuda_memory_mock), which has GPUs.
#include <disttrain/disttrain.h>
#include <disttrain/plugin/memory.h>
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

bool has(const std::string &text, const std::string &what)
{
    return text.find(what) != std::string::npos;
}

// Sets an environment variable for the scope.
struct Env {
    Env(const char *name, const char *value) : name_(name) { setenv(name, value, 1); }
    ~Env() { unsetenv(name_); }
    const char *name_;
};

// The last set_error message of a directly opened instance.
std::string g_error;
void set_error(void *, const char *message) { g_error = message; }

const dt_host_services_t kServices = {
    sizeof(dt_host_services_t), DT_HOST_SERVICES_VERSION, nullptr, set_error,
    nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
};

class Plugin {
public:
    Plugin()
    {
        const char *path = std::getenv("DISTTRAIN_CUDA_MEMORY_PLUGIN");
        if (path == nullptr)
            return;
        handle_ = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (handle_ != nullptr)
            entry_ = reinterpret_cast<dt_plugin_negotiate_fn>(
                dlsym(handle_, DT_PLUGIN_ENTRY_NAME));
    }
    ~Plugin()
    {
        if (handle_ != nullptr)
            dlclose(handle_);
    }
    Plugin(const Plugin &) = delete;
    Plugin &operator=(const Plugin &) = delete;

    dt_plugin_negotiate_fn entry() const { return entry_; }

    // Negotiates as the core would and returns the ops table, or NULL.
    const dt_memory_v1_t *ops(uint32_t max_version = DT_MEMORY_VERSION,
                              dt_plugin_answer_t *out = nullptr) const
    {
        dt_plugin_offer_t offer{sizeof(offer), DT_PLUGIN_NEGOTIATION_VERSION, max_version,
                                DT_MEMORY_VERSION_1, &kServices};
        dt_plugin_answer_t answer{};
        answer.struct_size = sizeof(answer);
        answer.abi_version = DT_PLUGIN_NEGOTIATION_VERSION;
        int32_t rc = entry_(&offer, &answer);
        if (out != nullptr)
            *out = answer;
        return rc == DTP_OK ? static_cast<const dt_memory_v1_t *>(answer.ops) : nullptr;
    }

    // init's status on this machine (DTP_OK where there is a GPU), its message in g_error.
    int32_t init_status() const
    {
        const dt_memory_v1_t *t = ops();
        dt_memory_init_args_t args{};
        args.struct_size = sizeof(args);
        args.abi_version = DT_MEMORY_VERSION;
        args.local_size = 1;
        args.services = &kServices;
        g_error.clear();
        void *m = nullptr;
        int32_t rc = t->init(&args, &m);
        if (rc == DTP_OK)
            t->finalize(m);
        return rc;
    }

private:
    void *handle_ = nullptr;
    dt_plugin_negotiate_fn entry_ = nullptr;
};

class CudaMemory : public ::testing::Test {
protected:
    void SetUp() override
    {
        if (std::getenv("DISTTRAIN_CUDA_MEMORY_PLUGIN") == nullptr)
            GTEST_SKIP() << "no CUDA runtime: DISTTRAIN_CUDA_MEMORY_PLUGIN is not set "
                            "(run with meson test)";
        ASSERT_NE(plugin_.entry(), nullptr) << dlerror();
    }
    Plugin plugin_;
};

TEST_F(CudaMemory, NegotiatesAsTheCudaMemoryProvider)
{
    dt_plugin_answer_t answer{};
    const dt_memory_v1_t *t = plugin_.ops(DT_MEMORY_VERSION, &answer);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(answer.kind, DT_PLUGIN_KIND_MEMORY);
    EXPECT_STREQ(answer.name, "cuda");
    EXPECT_EQ(answer.ops_version, DT_MEMORY_VERSION_1);
    EXPECT_EQ(t->struct_size, sizeof(dt_memory_v1_t));
    // Every member is there: the provider supports all of version 1.
    EXPECT_TRUE(t->init && t->finalize && t->pointer_query && t->device_alloc &&
                t->device_free && t->host_alloc && t->host_free && t->stream_create &&
                t->stream_destroy && t->copy_async && t->event_create &&
                t->event_destroy && t->event_record && t->event_query);
}

TEST_F(CudaMemory, DeclinesACoreThatSpeaksNoVersionOne)
{
    dt_plugin_answer_t answer{};
    EXPECT_EQ(plugin_.ops(0, &answer), nullptr);
    ASSERT_NE(answer.decline_reason, nullptr);
    EXPECT_TRUE(has(answer.decline_reason, "version 1")) << answer.decline_reason;
}

TEST_F(CudaMemory, InitWithoutAGpuIsUnsupportedAndSaysWhy)
{
    int32_t rc = plugin_.init_status();
    if (rc == DTP_OK)
        GTEST_SKIP() << "this machine has a GPU";
    EXPECT_EQ(rc, DTP_ERR_UNSUPPORTED) << g_error;
    EXPECT_TRUE(has(g_error, "no GPU")) << g_error;
    EXPECT_TRUE(has(g_error, "cudaGetDeviceCount")) << g_error;
}

TEST_F(CudaMemory, ContextCreateLoadsItThroughDisttrainMemory)
{
    const bool gpu = plugin_.init_status() == DTP_OK;
    Env memory("DISTTRAIN_MEMORY", "cuda");
    dt_context_h ctx = nullptr;
    dt_status_t rc = dt_context_create(nullptr, &ctx);
    std::string why = dt_last_error();
    if (gpu) {
        ASSERT_EQ(rc, DT_OK) << why;
        dt_context_destroy(ctx);
        return;
    }
    std::printf("dt_context_create without a GPU: %s\n", why.c_str()); // for the log
    EXPECT_EQ(rc, DT_ERR_UNSUPPORTED) << why;
    EXPECT_EQ(ctx, nullptr);
    EXPECT_TRUE(has(why, "DISTTRAIN_MEMORY='cuda'")) << why;
    EXPECT_TRUE(has(why, "no GPU")) << why;
    EXPECT_TRUE(has(why, "cudaGetDeviceCount failed")) << why;
}

// Digits only, as the nccl transport and the core read it: spaces, a sign or a base
// prefix are refused alike (the mock's four GPUs would make " 1" a GPU).
TEST_F(CudaMemory, AMalformedDisttrainDeviceIsAConfigError)
{
    if (plugin_.init_status() != DTP_OK)
        GTEST_SKIP() << "needs a GPU: without one init stops at 'no GPU' first";
    for (const char *bad : {"gpu1", " 1", "+1", "1 ", "1x", "0x1", "-1", "99999999999"}) {
        Env device("DISTTRAIN_DEVICE", bad);
        EXPECT_EQ(plugin_.init_status(), DTP_ERR_INVALID_CONFIG) << bad << ": " << g_error;
        EXPECT_TRUE(has(g_error, std::string("DISTTRAIN_DEVICE='") + bad + "' is not a GPU "
                                 "ordinal: write the GPU's number in digits only"))
            << g_error;
    }
    Env device("DISTTRAIN_DEVICE", "0");
    EXPECT_EQ(plugin_.init_status(), DTP_OK) << g_error;
}

} // namespace
