/* SPDX-License-Identifier: Apache-2.0 */
// The services the core lends plugins (plugin/common.h): logging, the rendezvous store,
// the job token's HMAC and random bytes. One HostBridge per context; its address is the
// opaque `host` pointer plugins pass back.
#pragma once

#include "bootstrap/auth.h"
#include "bootstrap/store.h"

#include <disttrain/plugin/common.h>

#include <chrono>
#include <optional>
#include <string>

namespace dt {

class HostBridge {
public:
    // store may be null until the context has connected; key_prefix keeps the keys of
    // this context and plugin apart from everything else in the store.
    HostBridge(bootstrap::StoreClient *store, const bootstrap::Auth *auth,
               std::string key_prefix, std::chrono::milliseconds timeout);

    // The process-wide services table (the functions find the bridge through `host`).
    static const dt_host_services_t *services();

    void *host() { return this; }

    bootstrap::StoreClient *store;
    const bootstrap::Auth *auth;
    std::string key_prefix;
    std::chrono::milliseconds timeout;
    // While a transport is being chosen (runtime/transport_choice.h): a store_get also
    // gives up when this key appears or the deadline passes. Empty: a plain wait.
    std::string abandon_key;
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
    // The reason in that key, once a store_get has given up on it: kept, since the store
    // may be gone by the time the core explains the plugin's failure.
    std::optional<std::string> given_up;
};

} // namespace dt
