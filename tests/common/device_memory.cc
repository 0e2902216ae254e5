// SPDX-License-Identifier: Apache-2.0
#include "device_memory.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace dt::testing {

namespace {

// Messages the provider sends through the host services: shown on stderr.
void set_error(void *, const char *message)
{
    std::fprintf(stderr, "memory provider: %s\n", message);
}

std::string env(const char *name)
{
    const char *v = std::getenv(name);
    return v != nullptr ? v : "";
}

void check(int32_t rc, const char *what)
{
    if (rc != DTP_OK)
        throw std::runtime_error(std::string("memory provider ") + what + " failed (" +
                                 std::to_string(rc) + ")");
}

} // namespace

DeviceMemory::DeviceMemory() : name_(env("DISTTRAIN_MEMORY"))
{
    if (name_.empty() || name_ == "none")
        throw std::runtime_error("--device needs DISTTRAIN_MEMORY to name a memory provider");
    const std::string file = "libdt-memory-" + name_ + ".so";
    std::stringstream folders(env("DISTTRAIN_PLUGIN_PATH"));
    std::string folder;
    while (handle_ == nullptr && std::getline(folders, folder, ':'))
        if (!folder.empty())
            handle_ = dlopen((folder + "/" + file).c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr)
        throw std::runtime_error(file + " is in no folder of DISTTRAIN_PLUGIN_PATH");
    auto entry = reinterpret_cast<dt_plugin_negotiate_fn>(dlsym(handle_, DT_PLUGIN_ENTRY_NAME));
    dt_plugin_offer_t offer{sizeof(offer), DT_PLUGIN_NEGOTIATION_VERSION, DT_MEMORY_VERSION,
                            DT_MEMORY_VERSION_1, nullptr};
    dt_plugin_answer_t answer{};
    answer.struct_size = sizeof(answer);
    answer.abi_version = DT_PLUGIN_NEGOTIATION_VERSION;
    if (entry == nullptr || entry(&offer, &answer) != DTP_OK ||
        answer.kind != DT_PLUGIN_KIND_MEMORY)
        throw std::runtime_error(file + " did not negotiate as a memory provider");
    ops_ = static_cast<const dt_memory_v1_t *>(answer.ops);
    static dt_host_services_t services{};
    services.struct_size = sizeof(services);
    services.abi_version = DT_HOST_SERVICES_VERSION;
    services.set_error = set_error;
    dt_memory_init_args_t args{};
    args.struct_size = sizeof(args);
    args.abi_version = DT_MEMORY_VERSION;
    args.local_rank = std::atoi(env("DISTTRAIN_LOCAL_RANK").c_str());
    args.local_size = 1;
    args.services = &services;
    check(ops_->init(&args, &m_), "init");
    check(ops_->event_create(m_, &event_), "event_create");
}

DeviceMemory::~DeviceMemory()
{
    ops_->event_destroy(m_, event_);
    ops_->finalize(m_);
    dlclose(handle_);
}

void *DeviceMemory::alloc(size_t bytes) const
{
    void *p = nullptr;
    check(ops_->device_alloc(m_, -1, bytes, &p), "device_alloc");
    return p;
}

void DeviceMemory::free(void *ptr) const
{
    if (ptr != nullptr)
        check(ops_->device_free(m_, ptr), "device_free");
}

void DeviceMemory::to_device(void *dst, const void *src, size_t bytes) const
{
    copy(dst, src, bytes, DTP_MEMORY_COPY_HOST_TO_DEVICE);
}

void DeviceMemory::to_host(void *dst, const void *src, size_t bytes) const
{
    copy(dst, src, bytes, DTP_MEMORY_COPY_DEVICE_TO_HOST);
}

void *DeviceMemory::stream_create() const
{
    void *stream = nullptr;
    check(ops_->stream_create(m_, -1, &stream), "stream_create");
    return stream;
}

void DeviceMemory::stream_destroy(void *stream) const
{
    check(ops_->stream_destroy(m_, stream), "stream_destroy");
}

void DeviceMemory::to_device_async(void *dst, const void *src, size_t bytes, void *stream) const
{
    check(ops_->copy_async(m_, dst, src, bytes, DTP_MEMORY_COPY_HOST_TO_DEVICE, stream),
          "copy_async");
}

void DeviceMemory::copy(void *dst, const void *src, size_t bytes, int32_t direction) const
{
    check(ops_->copy_async(m_, dst, src, bytes, direction, nullptr), "copy_async");
    check(ops_->event_record(m_, event_, nullptr), "event_record");
    int32_t rc;
    while ((rc = ops_->event_query(m_, event_)) == DTP_INPROGRESS)
        std::this_thread::yield();
    check(rc, "event_query");
}

} // namespace dt::testing
