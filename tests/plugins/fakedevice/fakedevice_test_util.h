/* SPDX-License-Identifier: Apache-2.0 */
// Opens the fake provider the way a user's own GPU runtime sits in the process: dlopen of
// the same file the context loads (so the same library and the same device memory), its
// negotiation, and one initialised instance.
#pragma once

#include <disttrain/plugin/memory.h>
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>

namespace fakedevice::test {

class Provider {
public:
    Provider()
    {
        const char *path = std::getenv("DISTTRAIN_FAKE_DEVICE_PLUGIN");
        if (path == nullptr)
            throw std::runtime_error("DISTTRAIN_FAKE_DEVICE_PLUGIN is not set; run with meson test");
        handle_ = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (handle_ == nullptr)
            throw std::runtime_error(dlerror());
        auto entry = reinterpret_cast<dt_plugin_negotiate_fn>(dlsym(handle_, DT_PLUGIN_ENTRY_NAME));
        dt_plugin_offer_t offer{sizeof(offer), DT_PLUGIN_NEGOTIATION_VERSION,
                                DT_MEMORY_VERSION, DT_MEMORY_VERSION_1, nullptr};
        dt_plugin_answer_t answer{};
        answer.struct_size = sizeof(answer);
        answer.abi_version = DT_PLUGIN_NEGOTIATION_VERSION;
        if (entry == nullptr || entry(&offer, &answer) != DTP_OK ||
            answer.kind != DT_PLUGIN_KIND_MEMORY)
            throw std::runtime_error("the fake provider did not negotiate");
        ops_ = static_cast<const dt_memory_v1_t *>(answer.ops);
        dt_memory_init_args_t args{};
        args.struct_size = sizeof(args);
        args.abi_version = DT_MEMORY_VERSION;
        args.local_size = 1;
        if (ops_->init(&args, &m_) != DTP_OK)
            throw std::runtime_error("the fake provider did not initialise");
    }
    ~Provider()
    {
        ops_->finalize(m_);
        dlclose(handle_);
    }
    Provider(const Provider &) = delete;
    Provider &operator=(const Provider &) = delete;

    const dt_memory_v1_t &ops() const { return *ops_; }
    void *m() const { return m_; }

    void *device_alloc(size_t bytes) const
    {
        void *p = nullptr;
        EXPECT_EQ(ops_->device_alloc(m_, 0, bytes, &p), DTP_OK);
        return p;
    }

    // Blocking copies between host and device memory on the default stream, as a user's
    // runtime would write inputs and read results.
    void copy(void *dst, const void *src, size_t bytes, int32_t direction) const
    {
        void *event = nullptr;
        ASSERT_EQ(ops_->event_create(m_, &event), DTP_OK);
        ASSERT_EQ(ops_->copy_async(m_, dst, src, bytes, direction, nullptr), DTP_OK);
        ASSERT_EQ(ops_->event_record(m_, event, nullptr), DTP_OK);
        int32_t rc;
        while ((rc = ops_->event_query(m_, event)) == DTP_INPROGRESS)
            std::this_thread::yield();
        EXPECT_EQ(rc, DTP_OK);
        ops_->event_destroy(m_, event);
    }

private:
    void *handle_ = nullptr;
    const dt_memory_v1_t *ops_ = nullptr;
    void *m_ = nullptr;
};

} // namespace fakedevice::test
