/* SPDX-License-Identifier: Apache-2.0 */
// Test doubles for the tcp transport plugin: what the core would lend it (store, HMAC
// with the job token, randomness, log), and helpers to load the built .so and run one
// plugin instance per rank.
#pragma once

#include <disttrain/plugin/common.h>
#include <disttrain/plugin/transport.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace tcptest {

// Thrown by a Store that has gone away (the rank serving it failed): the host answers
// the plugin's read with DTP_ERR_STORE, as the core does.
struct StoreGone : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The rendezvous store.
class Store {
public:
    virtual ~Store() = default;
    virtual void set(const std::string &key, const std::string &value) = 0;
    // Waits up to timeout_ms for key; false when it did not appear.
    virtual bool get(const std::string &key, std::string *value, int timeout_ms) = 0;
};

// In one process: a map and a condition variable.
class MemStore : public Store {
public:
    void set(const std::string &key, const std::string &value) override;
    bool get(const std::string &key, std::string *value, int timeout_ms) override;

private:
    std::mutex mu_;
    std::condition_variable cv_;
    std::map<std::string, std::string> kv_;
};

// Across processes (the benchmark forks): one file per key in a folder.
class DirStore : public Store {
public:
    explicit DirStore(std::string dir) : dir_(std::move(dir)) {}
    void set(const std::string &key, const std::string &value) override;
    bool get(const std::string &key, std::string *value, int timeout_ms) override;

private:
    std::string path(const std::string &key) const;
    std::string dir_;
};

// One rank's host: the `host` pointer handed to the plugin.
class FakeHost {
public:
    FakeHost(std::shared_ptr<Store> store, std::string token);

    static const dt_host_services_t *services();

    // What the plugin logged and the last error it set.
    std::string logs() const;
    std::string last_error() const;

    std::shared_ptr<Store> read_store;
    std::shared_ptr<Store> write_store; // differs from read_store for an impostor
    std::string token;

private:
    friend struct HostCallbacks;
    mutable std::mutex mu_;
    std::string log_;
    std::string error_;
};

// HMAC-SHA256(token, data): what a test playing a peer signs with.
std::vector<uint8_t> hmac(const std::string &token, const void *data, size_t len);

// The plugin under test, dlopened once from TCP_PLUGIN_PATH.
struct Plugin {
    void *handle = nullptr;
    dt_plugin_negotiate_fn negotiate = nullptr;
    const dt_transport_v3_t *ops = nullptr;
};
const Plugin &plugin();
const char *plugin_path();

// One transport instance of one rank.
class Instance {
public:
    Instance(std::shared_ptr<Store> store, std::string token);
    ~Instance();
    Instance(const Instance &) = delete;
    Instance &operator=(const Instance &) = delete;

    int32_t init(int rank, int size, int timeout_ms = 30000, int local_size = -1);
    int32_t finalize();
    int32_t isend(int peer, uint64_t tag, const void *buf, size_t len, dt_transport_request_t *r);
    int32_t irecv(int peer, uint64_t tag, void *buf, size_t len, dt_transport_request_t *r);
    // Drives progress until r completes; returns its status (or -9999 after timeout_ms).
    int32_t wait(dt_transport_request_t *r, int timeout_ms = 60000);
    // Drives progress for about ms milliseconds.
    void spin(int ms);
    // One progress call.
    int32_t progress(int timeout_ms);

    FakeHost host;
    void *transport = nullptr;
    int rank = -1;
};

constexpr int32_t kWaitTimedOut = -9999;

// Runs body(instance) for ranks 0..n-1, each in its own thread with its own instance
// (same store and token), after a successful init; all ranks meet before finalize.
void run_ranks(int n, const std::function<void(Instance &)> &body,
               std::shared_ptr<Store> store = nullptr, const std::string &token = "job-token");

// Deterministic test data: byte i of message `seed`.
void fill(std::vector<uint8_t> &buf, uint32_t seed);
bool check(const std::vector<uint8_t> &buf, size_t len, uint32_t seed);

// Sets an environment variable for one scope (set before any rank thread starts).
class ScopedEnv {
public:
    ScopedEnv(const char *name, const char *value);
    ~ScopedEnv();

private:
    std::string name_;
    std::string old_;
    bool had_;
};

} // namespace tcptest
