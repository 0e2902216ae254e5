// SPDX-License-Identifier: Apache-2.0
#include "tcp_test_host.h"

#include <dlfcn.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#ifndef TCP_PLUGIN_PATH
#error "meson passes TCP_PLUGIN_PATH, the built libdt-transport-tcp.so"
#endif

namespace tcptest {

using Clock = std::chrono::steady_clock;

void MemStore::set(const std::string &key, const std::string &value) {
    {
        std::lock_guard lock(mu_);
        kv_[key] = value;
    }
    cv_.notify_all();
}

bool MemStore::get(const std::string &key, std::string *value, int timeout_ms) {
    std::unique_lock lock(mu_);
    bool found = cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                              [&] { return kv_.count(key) != 0; });
    if (found) *value = kv_[key];
    return found;
}

std::string DirStore::path(const std::string &key) const {
    std::string name = key;
    for (char &c : name) {
        if (c == '/') c = '_';
    }
    return dir_ + "/" + name;
}

void DirStore::set(const std::string &key, const std::string &value) {
    std::string tmp = path(key) + ".tmp";
    {
        std::ofstream out(tmp, std::ios::binary);
        out << value;
    }
    std::rename(tmp.c_str(), path(key).c_str()); // readers never see half a value
}

bool DirStore::get(const std::string &key, std::string *value, int timeout_ms) {
    auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
        std::ifstream in(path(key), std::ios::binary);
        if (in) {
            std::stringstream ss;
            ss << in.rdbuf();
            *value = ss.str();
            return true;
        }
        if (Clock::now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
}

std::vector<uint8_t> hmac(const std::string &token, const void *data, size_t len) {
    std::vector<uint8_t> mac(32);
    unsigned int out_len = 0;
    HMAC(EVP_sha256(), token.data(), static_cast<int>(token.size()),
         static_cast<const unsigned char *>(data), len, mac.data(), &out_len);
    return mac;
}

FakeHost::FakeHost(std::shared_ptr<Store> store, std::string tok)
    : read_store(store), write_store(store), token(std::move(tok)) {}

std::string FakeHost::logs() const {
    std::lock_guard lock(mu_);
    return log_;
}

std::string FakeHost::last_error() const {
    std::lock_guard lock(mu_);
    return error_;
}

struct HostCallbacks {
    static FakeHost &self(void *host) { return *static_cast<FakeHost *>(host); }

    static void log(void *host, int level, const char *plugin, const char *message) {
        if (host == nullptr) return;
        static const char *names[] = {"ERROR", "WARN", "INFO", "DEBUG", "TRACE"};
        std::lock_guard lock(self(host).mu_);
        self(host).log_ += std::string("[") + names[level < 0 || level > 4 ? 4 : level] +
                           "] " + plugin + ": " + message + "\n";
    }
    static void set_error(void *host, const char *message) {
        std::lock_guard lock(self(host).mu_);
        self(host).error_ = message;
    }
    static int32_t store_set(void *host, const char *key, const void *value, size_t len) {
        self(host).write_store->set(key, std::string(static_cast<const char *>(value), len));
        return DTP_OK;
    }
    static int32_t store_get(void *host, const char *key, void *buf, size_t cap, size_t *len,
                             int32_t timeout_ms) {
        std::string v;
        try {
            if (!self(host).read_store->get(key, &v, timeout_ms < 0 ? 30000 : timeout_ms)) {
                return DTP_ERR_TIMEOUT;
            }
        } catch (const StoreGone &e) {
            set_error(host, e.what());
            return DTP_ERR_STORE;
        }
        std::memcpy(buf, v.data(), std::min(cap, v.size()));
        *len = v.size();
        return DTP_OK;
    }
    static int32_t auth_sign(void *host, const void *data, size_t len, uint8_t mac[32]) {
        auto m = hmac(self(host).token, data, len);
        std::memcpy(mac, m.data(), 32);
        return DTP_OK;
    }
    static int32_t auth_verify(void *host, const void *data, size_t len, const uint8_t mac[32]) {
        auto m = hmac(self(host).token, data, len);
        return CRYPTO_memcmp(m.data(), mac, 32) == 0 ? DTP_OK : DTP_ERR_AUTH;
    }
    static int32_t random_bytes(void *, void *buf, size_t len) {
        return RAND_bytes(static_cast<unsigned char *>(buf), static_cast<int>(len)) == 1
                   ? DTP_OK
                   : DTP_ERR_INTERNAL;
    }
};

const dt_host_services_t *FakeHost::services() {
    static const dt_host_services_t s = {
        sizeof(dt_host_services_t), DT_HOST_SERVICES_VERSION, HostCallbacks::log,
        HostCallbacks::set_error,   HostCallbacks::store_set, HostCallbacks::store_get,
        HostCallbacks::auth_sign,   HostCallbacks::auth_verify, HostCallbacks::random_bytes,
        nullptr, // store_address: ranks that share one host need no route to the store
    };
    return &s;
}

const char *plugin_path() { return TCP_PLUGIN_PATH; }

const Plugin &plugin() {
    static const Plugin p = [] {
        Plugin out;
        out.handle = dlopen(TCP_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
        if (out.handle == nullptr) throw std::runtime_error(dlerror());
        out.negotiate = reinterpret_cast<dt_plugin_negotiate_fn>(
            dlsym(out.handle, DT_PLUGIN_ENTRY_NAME));
        if (out.negotiate == nullptr) throw std::runtime_error("no entry point");
        dt_plugin_offer_t offer{sizeof(offer), DT_PLUGIN_NEGOTIATION_VERSION,
                                DT_TRANSPORT_VERSION, DT_TRANSPORT_VERSION_1,
                                FakeHost::services()};
        dt_plugin_answer_t answer{};
        answer.struct_size = sizeof(answer);
        answer.abi_version = DT_PLUGIN_NEGOTIATION_VERSION;
        if (out.negotiate(&offer, &answer) != DTP_OK) throw std::runtime_error("declined");
        out.ops = static_cast<const dt_transport_v3_t *>(answer.ops);
        return out;
    }();
    return p;
}

Instance::Instance(std::shared_ptr<Store> store, std::string token)
    : host(std::move(store), std::move(token)) {}

Instance::~Instance() { finalize(); }

int32_t Instance::init(int r, int size, int timeout_ms, int local_size) {
    rank = r;
    dt_transport_init_args_t args{};
    args.struct_size = sizeof(args);
    args.abi_version = DT_TRANSPORT_VERSION;
    args.rank = r;
    args.size = size;
    args.local_rank = r;
    args.local_size = local_size < 0 ? size : local_size;
    args.timeout_ms = timeout_ms;
    args.host = &host;
    args.services = FakeHost::services();
    return plugin().ops->init(&args, &transport);
}

int32_t Instance::finalize() {
    if (transport == nullptr) return DTP_OK;
    int32_t rc = plugin().ops->finalize(transport);
    transport = nullptr;
    return rc;
}

int32_t Instance::isend(int peer, uint64_t tag, const void *buf, size_t len,
                        dt_transport_request_t *r) {
    return plugin().ops->isend(transport, peer, tag, buf, len, r);
}

int32_t Instance::irecv(int peer, uint64_t tag, void *buf, size_t len,
                        dt_transport_request_t *r) {
    return plugin().ops->irecv(transport, peer, tag, buf, len, r);
}

int32_t Instance::wait(dt_transport_request_t *r, int timeout_ms) {
    auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    while (r->status == DTP_INPROGRESS) {
        if (Clock::now() >= deadline) return kWaitTimedOut;
        plugin().ops->progress(transport, 10);
    }
    return r->status;
}

int32_t Instance::progress(int timeout_ms) {
    return plugin().ops->progress(transport, timeout_ms);
}

void Instance::spin(int ms) {
    auto deadline = Clock::now() + std::chrono::milliseconds(ms);
    while (Clock::now() < deadline) plugin().ops->progress(transport, 1);
}

void run_ranks(int n, const std::function<void(Instance &)> &body, std::shared_ptr<Store> store,
               const std::string &token) {
    if (!store) store = std::make_shared<MemStore>();
    std::barrier meet(n);
    std::vector<std::thread> threads;
    std::vector<std::string> failures(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r) {
        threads.emplace_back([&, r] {
            Instance inst(store, token);
            int32_t rc = inst.init(r, n);
            if (rc != DTP_OK) {
                failures[static_cast<size_t>(r)] = "rank " + std::to_string(r) + " init: " +
                                                   std::to_string(rc) + " " +
                                                   inst.host.last_error();
                meet.arrive_and_drop();
                return;
            }
            body(inst);
            // Finalize only when every rank is done, so nobody loses a peer mid-test.
            meet.arrive_and_wait();
        });
    }
    for (auto &t : threads) t.join();
    for (const auto &f : failures) {
        if (!f.empty()) throw std::runtime_error(f);
    }
}

void fill(std::vector<uint8_t> &buf, uint32_t seed) {
    for (size_t i = 0; i < buf.size(); ++i) {
        buf[i] = static_cast<uint8_t>(i * 131 + seed * 7 + (i >> 9));
    }
}

bool check(const std::vector<uint8_t> &buf, size_t len, uint32_t seed) {
    for (size_t i = 0; i < len; ++i) {
        if (buf[i] != static_cast<uint8_t>(i * 131 + seed * 7 + (i >> 9))) return false;
    }
    return true;
}

ScopedEnv::ScopedEnv(const char *name, const char *value) : name_(name) {
    const char *old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    setenv(name, value, 1);
}

ScopedEnv::~ScopedEnv() {
    if (had_) setenv(name_.c_str(), old_.c_str(), 1);
    else unsetenv(name_.c_str());
}

} // namespace tcptest
