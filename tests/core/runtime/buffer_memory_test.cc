// SPDX-License-Identifier: Apache-2.0
// How a call's dt_op_params_t becomes the memory of its buffers: defaults, bad fields
// named, device memory refused while no memory provider is loaded, DT_MEMORY_AUTO
// answered by the context's classifier when there is one (a fake here), and host or
// device memory that the classifier knows as the other refused.
#include "runtime/buffer_memory.h"

#include "runtime/error.h"

#include <gtest/gtest.h>

#include <cstring>

namespace dt {
namespace {

int host_a = 0, host_b = 0;
int device_a = 0, device_b = 0; // "device" addresses as far as the fake provider knows
int device_c = 0;

// Knows device_a and device_b as device memory on device 5, device_c on device 6.
class FakeClassifier : public MemoryClassifier {
public:
    const char *provider() const noexcept override { return "fake"; }
    PointerMemory classify(const void *p) const override
    {
        if (p == &device_a || p == &device_b)
            return {DT_MEMORY_DEVICE, 5};
        if (p == &device_c)
            return {DT_MEMORY_DEVICE, 6};
        return {};
    }
};

dt_op_params_t params_of(dt_memory_type_t type)
{
    dt_op_params_t p = {};
    p.field_mask = DT_OP_PARAM_FIELD_MEMORY_TYPE;
    p.memory_type = type;
    return p;
}

BufferMemory resolve(const dt_op_params_t *p, const void *send, const void *recv,
                     const MemoryClassifier *c = nullptr)
{
    return resolve_buffer_memory("dt_allreduce", "grad.w", p, {send, recv},
                                 {"sendbuf", "recvbuf"}, c);
}

// The error's status and message, or DT_OK and "".
std::pair<dt_status_t, std::string> error_of(const dt_op_params_t *p,
                                             const MemoryClassifier *c = nullptr)
{
    try {
        resolve(p, &host_a, &host_b, c);
        return {DT_OK, ""};
    } catch (const Error &e) {
        return {e.status(), e.what()};
    }
}

bool contains(const std::string &s, const std::string &part)
{
    return s.find(part) != std::string::npos;
}

TEST(BufferMemory, NoParamsOrZeroedParamsMeanHost)
{
    EXPECT_EQ(resolve(nullptr, &host_a, &host_b).type, DT_MEMORY_HOST);
    dt_op_params_t zero = {};
    zero.memory_type = DT_MEMORY_DEVICE; // its bit is clear: not read
    EXPECT_EQ(resolve(&zero, &host_a, &host_b).type, DT_MEMORY_HOST);
    dt_op_params_t host = params_of(DT_MEMORY_HOST);
    host.field_mask |= DT_OP_PARAM_FIELD_DEVICE | DT_OP_PARAM_FIELD_STREAM;
    host.device = 2;
    host.stream = &host_a;
    BufferMemory m = resolve(&host, &host_a, &host_b);
    EXPECT_EQ(m.type, DT_MEMORY_HOST);
    EXPECT_EQ(m.device, -1) << "device and stream mean nothing for host memory";
    EXPECT_EQ(m.stream, nullptr);
}

TEST(BufferMemory, AnUnknownMemoryTypeIsNamed)
{
    dt_op_params_t p = params_of(DT_MEMORY_HOST);
    const int bad = 7;
    std::memcpy(&p.memory_type, &bad, sizeof bad); // as a C caller may
    auto [status, message] = error_of(&p);
    EXPECT_EQ(status, DT_ERR_INVALID_ARGUMENT);
    EXPECT_TRUE(contains(message, "dt_allreduce 'grad.w': params->memory_type 7 is not a "
                                  "dt_memory_type_t"))
        << message;
}

TEST(BufferMemory, ANegativeDeviceIsNamed)
{
    dt_op_params_t p = params_of(DT_MEMORY_HOST);
    p.field_mask |= DT_OP_PARAM_FIELD_DEVICE;
    p.device = -1;
    auto [status, message] = error_of(&p);
    EXPECT_EQ(status, DT_ERR_INVALID_ARGUMENT);
    EXPECT_TRUE(contains(message, "params->device -1 is negative")) << message;
    EXPECT_NO_THROW(check_op_params("dt_barrier", nullptr, nullptr));
    EXPECT_THROW(check_op_params("dt_barrier", nullptr, &p), Error);
}

TEST(BufferMemory, DeviceMemoryWithoutAProviderIsUnsupportedAtOnce)
{
    dt_op_params_t p = params_of(DT_MEMORY_DEVICE);
    auto [status, message] = error_of(&p);
    EXPECT_EQ(status, DT_ERR_UNSUPPORTED);
    EXPECT_TRUE(contains(message, "dt_allreduce 'grad.w': sendbuf and recvbuf are device "
                                  "memory"))
        << message;
    EXPECT_TRUE(contains(message, "no memory provider is loaded: device memory needs a "
                                  "memory provider, chosen with DISTTRAIN_MEMORY (cuda"))
        << message;
}

TEST(BufferMemory, AutoIsHostWhileNoProviderIsLoaded)
{
    dt_op_params_t p = params_of(DT_MEMORY_AUTO);
    EXPECT_EQ(resolve(&p, &device_a, &device_b).type, DT_MEMORY_HOST);
}

TEST(BufferMemory, AutoAsksTheProvider)
{
    FakeClassifier fake;
    dt_op_params_t p = params_of(DT_MEMORY_AUTO);
    EXPECT_EQ(resolve(&p, &host_a, &host_b, &fake).type, DT_MEMORY_HOST);
    BufferMemory m = resolve(&p, &device_a, &device_b, &fake);
    EXPECT_EQ(m.type, DT_MEMORY_DEVICE);
    EXPECT_EQ(m.device, 5) << "the provider's device when the call names none";
    p.field_mask |= DT_OP_PARAM_FIELD_DEVICE | DT_OP_PARAM_FIELD_STREAM;
    p.device = 5;
    p.stream = &host_a;
    m = resolve(&p, &device_a, nullptr, &fake); // NULL buffers are not asked about
    EXPECT_EQ(m.device, 5);
    EXPECT_EQ(m.stream, &host_a);

    try {
        resolve(&p, &host_a, &device_b, &fake);
        ADD_FAILURE() << "mixed memories resolved";
    } catch (const Error &e) {
        EXPECT_EQ(e.status(), DT_ERR_INVALID_ARGUMENT);
        EXPECT_TRUE(contains(e.what(), "finds sendbuf in host memory but recvbuf in device"))
            << e.what();
    }
}

TEST(BufferMemory, DeviceWithAProviderPassesToTheRouter)
{
    FakeClassifier fake;
    dt_op_params_t p = params_of(DT_MEMORY_DEVICE);
    EXPECT_EQ(resolve(&p, &device_a, &device_b, &fake).type, DT_MEMORY_DEVICE);
}

// The error of resolving p for the buffers with the fake provider, or "" when it resolves.
std::string refusal(const dt_op_params_t &p, const void *send, const void *recv)
{
    FakeClassifier fake;
    try {
        resolve(&p, send, recv, &fake);
        return "";
    } catch (const Error &e) {
        EXPECT_EQ(e.status(), DT_ERR_INVALID_ARGUMENT) << e.what();
        return e.what();
    }
}

TEST(BufferMemory, HostMemoryCalledDeviceIsRefusedNamingTheBuffer)
{
    const std::string why = refusal(params_of(DT_MEMORY_DEVICE), &device_a, &host_b);
    EXPECT_TRUE(contains(why, "dt_allreduce 'grad.w': params->memory_type is "
                              "DT_MEMORY_DEVICE, but recvbuf ("))
        << why;
    EXPECT_TRUE(contains(why, ") is host memory to the fake memory provider")) << why;
    EXPECT_TRUE(contains(why, "pass DT_MEMORY_HOST for host memory, DT_MEMORY_AUTO")) << why;
}

TEST(BufferMemory, DeviceMemoryCalledHostIsRefusedNamingTheBuffer)
{
    std::string why = refusal(params_of(DT_MEMORY_HOST), &device_a, &device_b);
    EXPECT_TRUE(contains(why, "params->memory_type is DT_MEMORY_HOST, but sendbuf (")) << why;
    EXPECT_TRUE(contains(why, ") is device memory (device 5) to the fake memory provider"))
        << why;
    EXPECT_TRUE(contains(why, "pass DT_MEMORY_DEVICE for device memory")) << why;
    // Params without a memory type mean host memory, and are checked alike.
    dt_op_params_t stream_only = {};
    stream_only.field_mask = DT_OP_PARAM_FIELD_STREAM;
    why = refusal(stream_only, &host_a, &device_b);
    EXPECT_TRUE(contains(why, "params->memory_type is not set, which means DT_MEMORY_HOST, "
                              "but recvbuf ("))
        << why;
    EXPECT_EQ(refusal(params_of(DT_MEMORY_HOST), &host_a, &host_b), "");
}

TEST(BufferMemory, ADeviceOtherThanTheBuffersIsRefused)
{
    for (dt_memory_type_t type : {DT_MEMORY_DEVICE, DT_MEMORY_AUTO}) {
        dt_op_params_t p = params_of(type);
        p.field_mask |= DT_OP_PARAM_FIELD_DEVICE;
        p.device = 5;
        EXPECT_EQ(refusal(p, &device_a, &device_b), "");
        p.device = 7; // no such device, or another one: the provider finds them on 5
        const std::string why = refusal(p, &device_a, &device_b);
        EXPECT_TRUE(contains(why, "dt_allreduce 'grad.w': params->device is 7, but the fake "
                                  "memory provider finds sendbuf on device 5; pass device 5, "
                                  "or clear DT_OP_PARAM_FIELD_DEVICE"))
            << why;
    }
    // Host memory has no device: the field means nothing there.
    dt_op_params_t host = params_of(DT_MEMORY_HOST);
    host.field_mask |= DT_OP_PARAM_FIELD_DEVICE;
    host.device = 7;
    EXPECT_EQ(refusal(host, &host_a, &host_b), "");
}

TEST(BufferMemory, BuffersOnTwoDevicesAreRefused)
{
    const std::string why = refusal(params_of(DT_MEMORY_DEVICE), &device_a, &device_c);
    EXPECT_TRUE(contains(why, "the fake memory provider finds sendbuf on device 5 but recvbuf "
                              "on device 6; a call's buffers must be on one device"))
        << why;
}

TEST(BufferMemory, MessagesNameTheCall)
{
    EXPECT_EQ(call_label("dt_broadcast", nullptr), "dt_broadcast");
    EXPECT_EQ(call_label("dt_broadcast", ""), "dt_broadcast");
    EXPECT_EQ(call_label("dt_broadcast", "w"), "dt_broadcast 'w'");
}

} // namespace
} // namespace dt
