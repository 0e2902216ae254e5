/* SPDX-License-Identifier: Apache-2.0 */
// A loaded, initialised transport: the plugin's ops (upgraded to the current table by the
// adapters in this folder) and its instance. Owned by the context; used only from the
// engine thread (the plugin ABI promises plugins one caller at a time). What it accepts
// (memory types, control traffic) is asked of the plugin once, here, and kept.
#pragma once

#include "plugin/transport_caps.h"

#include <disttrain/plugin/transport.h>

#include <memory>
#include <string>

namespace dt {

class Transport {
public:
    // Takes ownership of instance; finalize is called on destruction. Asks the plugin
    // what it accepts (ops->query, which the adapters never leave NULL); when that
    // throws, the instance is finalized first.
    Transport(std::string name, std::string path, const dt_transport_v3_t *ops,
              void *instance, uint32_t plugin_ops_version);
    ~Transport();
    Transport(const Transport &) = delete;
    Transport &operator=(const Transport &) = delete;

    const std::string &name() const { return name_; }
    const std::string &path() const { return path_; } // file it was loaded from
    const dt_transport_v3_t &ops() const { return *ops_; }
    void *instance() const { return instance_; }
    uint32_t plugin_ops_version() const { return plugin_ops_version_; }

    // The plugin's answer to its query, read at construction.
    const TransportCaps &caps() const { return caps_; }
    // Whether buffers of memory type m may be handed to the point-to-point ops (native
    // false) or to the native collectives (native true).
    bool accepts(TransportMemory m, bool native) const { return caps_.accepts(m, native); }
    // Whether it can carry the engine's control traffic (negotiation, barriers).
    bool carries_control() const { return caps_.control; }

    // Fails pending requests and tells peers we leave (abort, or finalize when the
    // plugin has no abort). Idempotent.
    void abort();
    // Leaves on purpose: finalize now (pending requests fail, connections close once
    // the peers could read what we sent); the destructor then has nothing left to do.
    void finalize();

    // Keeps `owner` (the loaded plugin that ops and instance live in) alive until this
    // Transport is destroyed, after finalize has run.
    void keep_alive(std::shared_ptr<const void> owner) { owner_ = std::move(owner); }

private:
    std::string name_;
    std::string path_;
    const dt_transport_v3_t *ops_;
    void *instance_;
    uint32_t plugin_ops_version_;
    TransportCaps caps_;
    bool finalized_ = false;
    std::shared_ptr<const void> owner_; // destroyed after ~Transport's finalize
};

} // namespace dt
