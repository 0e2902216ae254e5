// SPDX-License-Identifier: Apache-2.0
// How the device transport's calls wait for their producer (routing/device_wait.h), on
// an in-memory memory provider whose events complete at a set time and an in-memory
// device transport: a plugin that takes the event queues it and the host goes on at
// once; one without wait_event (a table from before it was appended), or one that
// refuses the provider's runtime, leaves the wait to the host, which then returns only
// once the event completed; a refusal is asked once; a failure is an error naming it.
// A blocking call runs on its producer's stream where the plugin takes it
// (launch_on_stream), with no event; else an event is recorded on that stream when the
// wait needs one.
#include "plugin/loader.h"
#include "plugin/memory_provider.h"
#include "plugin/transport.h"
#include "plugin/transport_adapter.h"
#include "routing/device_wait.h"
#include "routing/staging.h"
#include "runtime/error.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

namespace dt::test {
namespace {

using Clock = std::chrono::steady_clock;

// The producer's stream of every call here: an opaque handle, never dereferenced.
void *const kStream = reinterpret_cast<void *>(0x5157);

// The provider: an event completes at the time event_record set (now + delay).
struct FakeEvent {
    Clock::time_point complete_at{};
};
inline std::chrono::milliseconds record_delay{0};
inline int queries = 0;
inline int records = 0;
inline void *recorded_on = nullptr; // the stream of the newest event_record
inline void *waiting_stream = nullptr; // the stream of the newest stream_wait_event
inline int own_stream = 0;             // the one stream_create makes (staging's own)

dt_memory_v1_t provider_ops()
{
    dt_memory_v1_t o{};
    o.struct_size = sizeof(o);
    o.abi_version = DT_MEMORY_VERSION_1;
    o.name = "fakert";
    o.init = [](const dt_memory_init_args_t *, void **) -> int32_t { return DTP_OK; };
    o.finalize = [](void *) -> int32_t { return DTP_OK; };
    o.pointer_query = [](void *, const void *, dt_memory_pointer_info_t *) -> int32_t {
        return DTP_OK;
    };
    o.host_alloc = [](void *, size_t bytes, void **p) -> int32_t {
        *p = std::malloc(bytes);
        return DTP_OK;
    };
    o.host_free = [](void *, void *p) -> int32_t { return std::free(p), DTP_OK; };
    o.copy_async = [](void *, void *, const void *, size_t, int32_t, void *) -> int32_t {
        return DTP_OK;
    };
    o.event_create = [](void *, void **e) -> int32_t { return *e = new FakeEvent, DTP_OK; };
    o.event_destroy = [](void *, void *e) -> int32_t {
        return delete static_cast<FakeEvent *>(e), DTP_OK;
    };
    o.event_record = [](void *, void *e, void *stream) -> int32_t {
        ++records;
        recorded_on = stream;
        static_cast<FakeEvent *>(e)->complete_at = Clock::now() + record_delay;
        return DTP_OK;
    };
    o.stream_create = [](void *, int32_t, void **s) -> int32_t { return *s = &own_stream, DTP_OK; };
    o.stream_destroy = [](void *, void *) -> int32_t { return DTP_OK; };
    o.stream_wait_event = [](void *, void *stream, void *) -> int32_t {
        waiting_stream = stream;
        return DTP_OK;
    };
    o.event_query = [](void *, void *e) -> int32_t {
        ++queries;
        return Clock::now() >= static_cast<FakeEvent *>(e)->complete_at ? DTP_OK
                                                                        : DTP_INPROGRESS;
    };
    return o;
}

// The device transport: what wait_event answers, and what it was handed.
inline int32_t wait_answer = DTP_OK;
inline int wait_calls = 0;
inline std::string wait_runtime;
inline void *wait_event_arg = nullptr;
inline int32_t launch_answer = DTP_OK;
inline int launch_calls = 0;
inline std::string launch_runtime;
inline void *launch_stream_arg = nullptr;

dt_transport_v3_t device_ops()
{
    dt_transport_v3_t t{};
    t.struct_size = sizeof(t);
    t.abi_version = DT_TRANSPORT_VERSION_3;
    t.name = "fakedev";
    t.init = [](const dt_transport_init_args_t *, void **) -> int32_t { return DTP_OK; };
    t.finalize = [](void *) -> int32_t { return DTP_OK; };
    t.isend = [](void *, int32_t, uint64_t, const void *, size_t,
                 dt_transport_request_t *) -> int32_t { return DTP_ERR_UNSUPPORTED; };
    t.irecv = [](void *, int32_t, uint64_t, void *, size_t,
                 dt_transport_request_t *) -> int32_t { return DTP_ERR_UNSUPPORTED; };
    t.progress = [](void *, int32_t) -> int32_t { return DTP_OK; };
    t.query = [](void *, dt_transport_caps_t *caps) -> int32_t {
        caps->native_memory = DT_TRANSPORT_MEMORY_DEVICE;
        return DTP_OK;
    };
    t.wait_event = [](void *, const char *runtime, void *event) -> int32_t {
        ++wait_calls;
        wait_runtime = runtime != nullptr ? runtime : "(null)";
        wait_event_arg = event;
        return wait_answer;
    };
    t.launch_on_stream = [](void *, const char *runtime, void *stream) -> int32_t {
        ++launch_calls;
        launch_runtime = runtime != nullptr ? runtime : "(null)";
        launch_stream_arg = stream;
        return launch_answer;
    };
    return t;
}

class DeviceWaitTest : public ::testing::Test {
protected:
    void SetUp() override
    {
        record_delay = std::chrono::milliseconds(0);
        queries = 0;
        wait_answer = DTP_OK;
        wait_calls = 0;
        wait_runtime.clear();
        wait_event_arg = nullptr;
        records = 0;
        recorded_on = nullptr;
        waiting_stream = nullptr;
        launch_answer = DTP_OK;
        launch_calls = 0;
        launch_runtime.clear();
        launch_stream_arg = nullptr;
        memory_ops_ = provider_ops();
        provider_ = std::make_unique<plugin::MemoryProvider>(
            std::make_shared<plugin::LoadedPlugin>(nullptr, "(in memory)", DT_PLUGIN_KIND_MEMORY,
                                                   DT_MEMORY_VERSION_1, "fakert", &memory_ops_),
            &memory_ops_, &instance_);
        staging_ = std::make_unique<routing::Staging>(*provider_);
        wait_ = std::make_unique<routing::DeviceWait>("fakert", *provider_, *staging_);
    }

    // A device transport over table as the core upgrades it; struct_size as given.
    std::unique_ptr<Transport> device(uint32_t struct_size)
    {
        table_ = device_ops();
        table_.struct_size = struct_size;
        upgraded_ = plugin::upgrade_transport_ops(DT_TRANSPORT_VERSION_3, &table_);
        return std::make_unique<Transport>("fakedev", "(in memory)", &upgraded_, &instance_,
                                           DT_TRANSPORT_VERSION_3);
    }

    // An event recorded now that completes after delay.
    void *ready(std::chrono::milliseconds delay)
    {
        record_delay = delay;
        void *e = nullptr;
        memory_ops_.event_create(nullptr, &e);
        memory_ops_.event_record(nullptr, e, nullptr);
        events_.emplace_back(e, [](void *p) { delete static_cast<FakeEvent *>(p); });
        return e;
    }

    // How long before() took, and whether it waited on the device.
    std::chrono::milliseconds timed(Transport &t, void *event, bool *on_device)
    {
        algo::Comm comm(t, 0, 1, 1, Clock::now() + std::chrono::seconds(10), "allreduce");
        const auto start = Clock::now();
        *on_device = wait_->before(t, kStream, event, comm, "allreduce 'x'");
        return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
    }

    int instance_ = 0;
    dt_memory_v1_t memory_ops_{};
    dt_transport_v3_t table_{}, upgraded_{};
    std::unique_ptr<plugin::MemoryProvider> provider_;
    std::unique_ptr<routing::Staging> staging_;
    std::unique_ptr<routing::DeviceWait> wait_;
    std::vector<std::unique_ptr<void, void (*)(void *)>> events_;
};

TEST_F(DeviceWaitTest, APluginThatTakesTheEventWaitsOnTheDeviceAndTheHostGoesOn)
{
    auto t = device(sizeof(dt_transport_v3_t));
    void *e = ready(std::chrono::milliseconds(300));
    bool on_device = false;
    EXPECT_LT(timed(*t, e, &on_device).count(), 200);
    EXPECT_TRUE(on_device);
    EXPECT_EQ(wait_calls, 1);
    EXPECT_EQ(wait_runtime, "fakert"); // the provider's ops-table name
    EXPECT_EQ(wait_event_arg, e);
    EXPECT_EQ(queries, 0); // the host never polled the event
    EXPECT_EQ(wait_->on_device(), 1u);
    EXPECT_EQ(wait_->on_host(), 0u);
}

TEST_F(DeviceWaitTest, APluginWithoutTheMemberLeavesTheWaitToTheHost)
{
    // Built before wait_event was appended: the table ends at batch_end.
    auto t = device(static_cast<uint32_t>(offsetof(dt_transport_v3_t, wait_event)));
    ASSERT_EQ(t->ops().wait_event, nullptr);
    void *e = ready(std::chrono::milliseconds(150));
    bool on_device = true;
    EXPECT_GE(timed(*t, e, &on_device).count(), 140); // returned once the event completed
    EXPECT_FALSE(on_device);
    EXPECT_EQ(wait_calls, 0);
    EXPECT_GT(queries, 0);
    EXPECT_EQ(wait_->on_host(), 1u);
}

TEST_F(DeviceWaitTest, ARefusedRuntimeIsWaitedForOnTheHostAndAskedOnce)
{
    wait_answer = DTP_ERR_UNSUPPORTED;
    auto t = device(sizeof(dt_transport_v3_t));
    for (int i = 0; i < 3; ++i) {
        void *e = ready(std::chrono::milliseconds(60));
        bool on_device = true;
        EXPECT_GE(timed(*t, e, &on_device).count(), 50);
        EXPECT_FALSE(on_device);
    }
    EXPECT_EQ(wait_calls, 1); // its answer holds for the runtime
    EXPECT_EQ(wait_->on_host(), 3u);
    EXPECT_EQ(wait_->on_device(), 0u);
}

TEST_F(DeviceWaitTest, AFailedWaitIsAnErrorNamingTheTransportAndTheCall)
{
    wait_answer = DTP_ERR_TRANSPORT;
    auto t = device(sizeof(dt_transport_v3_t));
    bool on_device = false;
    try {
        timed(*t, ready(std::chrono::milliseconds(0)), &on_device);
        FAIL() << "no error";
    } catch (const Error &e) {
        EXPECT_EQ(e.status(), DT_ERR_TRANSPORT);
        const std::string what = e.what();
        EXPECT_NE(what.find("allreduce 'x': device transport 'fakedev' could not queue the "
                            "wait"), std::string::npos) << what;
    }
}

TEST_F(DeviceWaitTest, ABlockingCallRunsOnItsProducersStreamWithNoEvent)
{
    auto t = device(sizeof(dt_transport_v3_t));
    EXPECT_TRUE(wait_->on_producer_stream(*t, kStream, "allreduce 'x'"));
    EXPECT_EQ(launch_calls, 1);
    EXPECT_EQ(launch_runtime, "fakert");
    EXPECT_EQ(launch_stream_arg, kStream);
    EXPECT_EQ(records, 0);
    EXPECT_EQ(wait_calls, 0);
    EXPECT_EQ(wait_->on_stream(), 1u);
    EXPECT_EQ(wait_->on_device(), 0u);
}

// Without the member, or refused, the blocking call waits for an event recorded on its
// producer's stream when the wait needs it; the refusal is asked once.
TEST_F(DeviceWaitTest, ABlockingCallThePluginCannotRunOnItsStreamWaitsForAnEventRecordedThen)
{
    auto older = device(static_cast<uint32_t>(offsetof(dt_transport_v3_t, launch_on_stream)));
    EXPECT_FALSE(wait_->on_producer_stream(*older, kStream, "allreduce 'x'"));
    EXPECT_EQ(launch_calls, 0);

    launch_answer = DTP_ERR_UNSUPPORTED;
    auto t = device(sizeof(dt_transport_v3_t));
    for (int i = 0; i < 2; ++i) {
        EXPECT_FALSE(wait_->on_producer_stream(*t, kStream, "allreduce 'x'"));
        bool on_device = false;
        timed(*t, nullptr, &on_device);
        EXPECT_TRUE(on_device);
        EXPECT_EQ(records, i + 1); // one event per call, recorded at the wait
        EXPECT_EQ(recorded_on, kStream);
        EXPECT_NE(wait_event_arg, nullptr);
    }
    EXPECT_EQ(launch_calls, 1); // its answer holds for the runtime
    EXPECT_EQ(wait_->on_stream(), 0u);
    EXPECT_EQ(wait_->on_device(), 2u);
}

TEST_F(DeviceWaitTest, AFailureToTakeTheStreamIsAnErrorNamingTheTransportAndTheCall)
{
    launch_answer = DTP_ERR_TRANSPORT;
    auto t = device(sizeof(dt_transport_v3_t));
    try {
        wait_->on_producer_stream(*t, kStream, "allreduce 'x'");
        FAIL() << "no error";
    } catch (const Error &e) {
        EXPECT_EQ(e.status(), DT_ERR_TRANSPORT);
        const std::string what = e.what();
        EXPECT_NE(what.find("allreduce 'x': device transport 'fakedev' could not take the "
                            "producer's stream"), std::string::npos) << what;
    }
}

// Staging copies a blocking call's buffers on its own stream too, behind an event recorded
// on the producer's stream when the copies are queued: on the producer's stream they could
// outlive a timed-out call and write into buffers the context has freed.
TEST_F(DeviceWaitTest, StagingCopiesABlockingCallOnItsOwnStreamBehindAnEventRecordedThen)
{
    void *copies = staging_->after(kStream, nullptr);
    EXPECT_EQ(copies, &own_stream);
    EXPECT_EQ(records, 1);
    EXPECT_EQ(recorded_on, kStream);
    EXPECT_EQ(waiting_stream, &own_stream);
}

TEST_F(DeviceWaitTest, AProviderWithoutEventsLeavesNothingToWaitFor)
{
    dt_memory_v1_t no_events = provider_ops();
    no_events.event_create = nullptr;
    no_events.event_record = nullptr;
    no_events.event_destroy = nullptr;
    no_events.event_query = nullptr;
    plugin::MemoryProvider provider(
        std::make_shared<plugin::LoadedPlugin>(nullptr, "(in memory)", DT_PLUGIN_KIND_MEMORY,
                                               DT_MEMORY_VERSION_1, "fakert", &no_events),
        &no_events, &instance_);
    routing::DeviceWait wait("fakert", provider, *staging_);
    auto t = device(sizeof(dt_transport_v3_t));
    algo::Comm comm(*t, 0, 1, 1, Clock::now() + std::chrono::seconds(10), "allreduce");
    EXPECT_FALSE(wait.before(*t, kStream, nullptr, comm, "allreduce 'x'"));
    EXPECT_EQ(wait_calls, 0);
    EXPECT_EQ(queries, 0);
}

} // namespace
} // namespace dt::test
