// SPDX-License-Identifier: Apache-2.0
// A manual check of the CUDA memory provider on a machine with a GPU (CI has none, so
// this is built but not registered as a test). It opens libdt-memory-cuda.so with dlopen,
// as the core does, and drives every member: where pointers live, allocations, and an
// H2D, D2D, D2H round trip on the provider's stream, the default stream and a user's
// stream, completed by polling events from another thread, as the core's engine does.
// Prints one PASS/FAIL line per check; exits 1 on any failure, 2 when it cannot start.
//
//   cuda_memory_gpu_test [path/to/libdt-memory-cuda.so]
#include <disttrain/plugin/memory.h>

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

int g_failures = 0;
std::string g_error; // the provider's last set_error message

void check(bool ok, const std::string &what)
{
    std::printf("%s %s%s%s\n", ok ? "PASS" : "FAIL", what.c_str(),
                ok || g_error.empty() ? "" : " -- ", ok ? "" : g_error.c_str());
    if (!ok)
        ++g_failures;
}

void set_error(void *, const char *message) { g_error = message; }
void log_line(void *, int, const char *, const char *message)
{
    std::printf("log: %s\n", message);
}

const dt_host_services_t kServices = {
    sizeof(dt_host_services_t), DT_HOST_SERVICES_VERSION, log_line, set_error,
    nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
};

struct Provider {
    const dt_memory_v1_t *t = nullptr;
    void *m = nullptr;

    dt_memory_pointer_info_t where(const void *p) const
    {
        dt_memory_pointer_info_t info{};
        info.struct_size = sizeof(info);
        info.abi_version = DT_MEMORY_VERSION;
        info.memory_type = -7; // must be overwritten
        info.device = -7;
        if (t->pointer_query(m, p, &info) != DTP_OK)
            info.memory_type = -8;
        return info;
    }

    // Polls event until it completes, like the core: never blocks inside the plugin.
    int32_t wait(void *event, int seconds = 10) const
    {
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
        for (;;) {
            int32_t rc = t->event_query(m, event);
            if (rc != DTP_INPROGRESS)
                return rc;
            if (std::chrono::steady_clock::now() > deadline)
                return DTP_ERR_TIMEOUT;
            std::this_thread::yield();
        }
    }
};

// The device init chose: DISTTRAIN_DEVICE, else local rank 0 modulo the count.
int instance_device()
{
    const char *v = std::getenv("DISTTRAIN_DEVICE");
    return v != nullptr && *v != '\0' ? std::atoi(v) : 0;
}

void check_where(const Provider &p, const void *ptr, int type, int device, const char *what)
{
    dt_memory_pointer_info_t info = p.where(ptr);
    check(info.memory_type == type && info.device == device,
          std::string("pointer_query: ") + what + " is " +
              (type == DTP_MEMORY_DEVICE ? "device " + std::to_string(device) : "host") +
              " (got type " + std::to_string(info.memory_type) + ", device " +
              std::to_string(info.device) + ")");
}

void pointers(const Provider &p)
{
    void *cuda_dev = nullptr, *managed = nullptr, *pinned = nullptr;
    int dev = 0;
    cudaGetDevice(&dev);
    check(cudaMalloc(&cuda_dev, 4096) == cudaSuccess, "cudaMalloc by the test");
    check_where(p, cuda_dev, DTP_MEMORY_DEVICE, dev, "cudaMalloc memory");
    check_where(p, static_cast<char *>(cuda_dev) + 100, DTP_MEMORY_DEVICE, dev,
                "an address inside cudaMalloc memory");
    std::vector<char> heap(4096);
    check_where(p, heap.data(), DTP_MEMORY_HOST, -1, "malloc memory");
    check(cudaGetLastError() == cudaSuccess,
          "pointer_query of host memory leaves no CUDA error behind");
    int on_stack = 0;
    check_where(p, &on_stack, DTP_MEMORY_HOST, -1, "stack memory");
    check_where(p, nullptr, DTP_MEMORY_HOST, -1, "NULL");
    if (cudaMallocHost(&pinned, 4096) == cudaSuccess)
        check_where(p, pinned, DTP_MEMORY_HOST, -1, "cudaMallocHost memory");
    if (cudaHostRegister(heap.data(), heap.size(), cudaHostRegisterDefault) == cudaSuccess) {
        check_where(p, heap.data(), DTP_MEMORY_HOST, -1, "cudaHostRegister'd memory");
        cudaHostUnregister(heap.data());
    }
    if (cudaMallocManaged(&managed, 4096) == cudaSuccess)
        check_where(p, managed, DTP_MEMORY_DEVICE, dev, "cudaMallocManaged memory");
    cudaFree(cuda_dev);
    cudaFree(managed);
    cudaFreeHost(pinned);
    cudaGetLastError();
}

// Host -> device -> device -> host on stream, the copies and the polling on another
// thread, which has no current device of its own (the core's engine thread).
void round_trip(const Provider &p, void *stream, const char *label)
{
    const size_t n = size_t(1) << 20;
    void *src = nullptr, *dst = nullptr, *d1 = nullptr, *d2 = nullptr, *event = nullptr;
    std::string what = std::string("round trip on ") + label;
    bool ok = p.t->host_alloc(p.m, n, &src) == DTP_OK &&
              p.t->host_alloc(p.m, n, &dst) == DTP_OK &&
              p.t->device_alloc(p.m, -1, n, &d1) == DTP_OK &&
              p.t->device_alloc(p.m, -1, n, &d2) == DTP_OK &&
              p.t->event_create(p.m, &event) == DTP_OK;
    check(ok, what + ": allocations and event");
    if (!ok)
        return;
    check(p.t->event_query(p.m, event) == DTP_OK, what + ": a new event counts as complete");
    check_where(p, d1, DTP_MEMORY_DEVICE, instance_device(), "device_alloc memory");
    check_where(p, src, DTP_MEMORY_HOST, -1, "host_alloc memory");
    for (size_t i = 0; i < n; ++i)
        static_cast<unsigned char *>(src)[i] = static_cast<unsigned char>(i * 7 + 3);
    std::memset(dst, 0, n);

    int32_t copies = DTP_ERR_INTERNAL, waited = DTP_ERR_INTERNAL;
    std::thread engine([&] {
        copies = p.t->copy_async(p.m, d1, src, n, DTP_MEMORY_COPY_HOST_TO_DEVICE, stream);
        if (copies == DTP_OK)
            copies = p.t->copy_async(p.m, d2, d1, n, DTP_MEMORY_COPY_DEVICE_TO_DEVICE, stream);
        if (copies == DTP_OK)
            copies = p.t->copy_async(p.m, dst, d2, n, DTP_MEMORY_COPY_DEVICE_TO_HOST, stream);
        if (copies == DTP_OK)
            copies = p.t->event_record(p.m, event, stream);
        if (copies == DTP_OK)
            waited = p.wait(event);
    });
    engine.join();
    check(copies == DTP_OK, what + ": copy_async H2D, D2D, D2H and event_record queue");
    check(waited == DTP_OK, what + ": event_query reaches DTP_OK");
    check(std::memcmp(src, dst, n) == 0, what + ": the data came back unchanged");

    check(p.t->event_destroy(p.m, event) == DTP_OK && p.t->device_free(p.m, d1) == DTP_OK &&
              p.t->device_free(p.m, d2) == DTP_OK && p.t->host_free(p.m, src) == DTP_OK &&
              p.t->host_free(p.m, dst) == DTP_OK,
          what + ": frees");
}

void refusals(const Provider &p)
{
    int junk = 0;
    g_error.clear();
    check(p.t->device_free(p.m, &junk) == DTP_ERR_INVALID_ARGUMENT && !g_error.empty(),
          "device_free of a foreign pointer is refused and explained");
    g_error.clear();
    check(p.t->copy_async(p.m, &junk, &junk, 4, 99, nullptr) == DTP_ERR_INVALID_ARGUMENT &&
              !g_error.empty(),
          "copy_async with a bad direction is refused and explained");
    g_error.clear();
    void *ptr = nullptr;
    check(p.t->device_alloc(p.m, 4096, 16, &ptr) == DTP_ERR_INVALID_ARGUMENT &&
              !g_error.empty(),
          "device_alloc on a GPU that does not exist is refused and explained");
}

} // namespace

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : CUDA_MEMORY_PLUGIN_PATH;
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
        std::printf("FAIL dlopen %s: %s\n", path, dlerror());
        return 2;
    }
    auto entry = reinterpret_cast<dt_plugin_negotiate_fn>(dlsym(handle, DT_PLUGIN_ENTRY_NAME));
    dt_plugin_offer_t offer{sizeof(offer), DT_PLUGIN_NEGOTIATION_VERSION, DT_MEMORY_VERSION,
                            DT_MEMORY_VERSION_1, &kServices};
    dt_plugin_answer_t answer{};
    answer.struct_size = sizeof(answer);
    answer.abi_version = DT_PLUGIN_NEGOTIATION_VERSION;
    if (entry == nullptr || entry(&offer, &answer) != DTP_OK) {
        std::printf("FAIL negotiation with %s\n", path);
        return 2;
    }
    Provider p;
    p.t = static_cast<const dt_memory_v1_t *>(answer.ops);
    dt_memory_init_args_t args{};
    args.struct_size = sizeof(args);
    args.abi_version = DT_MEMORY_VERSION;
    args.local_size = 1;
    args.services = &kServices;
    int32_t rc = p.t->init(&args, &p.m);
    check(rc == DTP_OK, "init");
    if (rc != DTP_OK)
        return 1;

    pointers(p);

    void *ours = nullptr, *left = nullptr, *left_stream = nullptr;
    check(p.t->stream_create(p.m, -1, &ours) == DTP_OK, "stream_create");
    round_trip(p, ours, "the provider's stream");
    round_trip(p, nullptr, "the default stream (NULL)");
    cudaStream_t user = nullptr;
    check(cudaStreamCreate(&user) == cudaSuccess, "cudaStreamCreate by the test");
    round_trip(p, user, "a user's cudaStream_t");
    cudaStreamDestroy(user);
    check(p.t->stream_destroy(p.m, ours) == DTP_OK, "stream_destroy");
    refusals(p);

    // finalize releases what the core did not.
    check(p.t->device_alloc(p.m, -1, 1024, &left) == DTP_OK &&
              p.t->stream_create(p.m, -1, &left_stream) == DTP_OK,
          "allocations left for finalize");
    check(p.t->finalize(p.m) == DTP_OK, "finalize releases what is left");
    dlclose(handle);

    std::printf("%s: %d failure(s)\n", g_failures == 0 ? "PASS" : "FAIL", g_failures);
    return g_failures == 0 ? 0 : 1;
}
