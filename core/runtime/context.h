/* SPDX-License-Identifier: Apache-2.0 */
// A context: this process's membership of a job. Creating one discovers the rank,
// connects to (or serves) the rendezvous store, loads and initialises the transport and
// starts the engine; destroying it undoes each step in reverse.
#pragma once

#include "bootstrap/auth.h"
#include "bootstrap/store.h"
#include "plugin/memory_provider.h"
#include "plugin/transport.h"
#include "routing/router.h"
#include "runtime/config.h"
#include "runtime/context_naming.h"
#include "runtime/elastic_membership.h"
#include "runtime/engine.h"
#include "runtime/host_services.h"
#include "runtime/memory_classifier.h"
#include "shm/attach.h"

#include <disttrain/disttrain.h>

#include <atomic>
#include <memory>
#include <optional>

namespace dt {

class TransportChoice;

class Context {
public:
    // api_minor: the DT_API_MINOR the caller of dt_context_create was compiled against.
    explicit Context(const dt_context_params_t *params, int api_minor = DT_API_MINOR);
    ~Context();
    Context(const Context &) = delete;
    Context &operator=(const Context &) = delete;

    int rank() const { return cfg_.ranks.rank; }
    int size() const { return cfg_.ranks.size; }
    int local_rank() const { return cfg_.ranks.local_rank; }
    int local_size() const { return cfg_.ranks.local_size; }
    const std::string &transport_name() const
    {
        static const std::string none = "none (the job could not re-form)";
        return transport_ ? transport_->name() : none;
    }

    // Queues op on the engine; the returned operation completes asynchronously.
    std::shared_ptr<Operation> submit(OpDesc desc);
    void abort();
    // Elastic jobs: after a peer was lost, meets the ranks that are left (and any new
    // ones) in the store, renumbers them and connects them afresh (elastic_membership.h).
    // Operations of the old membership must have completed. When the new membership
    // cannot connect (a member died after it arrived), its ranks meet again without it,
    // a few times at most. Throws as elastic_rendezvous does, DT_ERR_INVALID_STATE when
    // the job is not elastic.
    void reform();
    // How many times the job re-formed: groups of an earlier epoch are gone.
    uint64_t epoch() const { return epoch_; }
    // Elastic jobs: on rank 0, the new processes waiting to join; 0 elsewhere (the C API
    // shares rank 0's answer).
    int64_t waiting_joiners();
    // The error that broke the context (a lost peer, a time-out, an abort), if any.
    std::optional<std::pair<dt_status_t, std::string>> error() const;

    // The memory provider's pointer query (DISTTRAIN_MEMORY), or null when none is
    // loaded: DT_MEMORY_AUTO then means host, and DT_MEMORY_DEVICE is refused.
    const MemoryClassifier *memory_classifier() const noexcept { return memory_.get(); }
    const plugin::MemoryProvider *memory_provider() const noexcept { return memory_.get(); }

    // Makes a group's members known to the engine. False when another group already
    // has this id (ids are hashes: see ContextView::create_group).
    bool register_group(uint32_t id, std::vector<int> members);

private:
    // This context's part of the store: its slot's root, under "job/<id>/" with
    // DISTTRAIN_JOB_ID.
    std::string context_root() const;
    void open_store();
    void announce_joined(); // tells the launcher this rank joined (join_notice.h)
    bool announced_ = false; // so this context is the launcher's whole job
    void check_agreement();
    // Rank 0: the connections its store refused for another token, for the message
    // naming a rank that never arrived ("" when none).
    std::string token_refusals() const;
    // Rank 0 serving the store: where it listens, for the same message, since a store the
    // other hosts cannot reach looks to rank 0 like ranks that never started.
    std::string store_listening() const;
    // Added to the message naming a rank that never met this one in check_agreement: how
    // contexts pair up across ranks, since that rank may wait in another context.
    std::string pairing_hint() const;
    void open_transport();
    // What to add to the error of a transport that failed to start (own): the reason
    // the first rank gave it up for, or why the store failed under it. Leaves this
    // rank's own reason for the others when it is the first.
    std::string start_failure_cause(TransportChoice &choice, const std::string &name,
                                    const std::string &own);
    void open_device_transport(); // DISTTRAIN_DEVICE_TRANSPORT, beside transport_
    void open_device_transport_auto(); // ... =auto (device_transport_auto.cc)
    // A transport plugin's init arguments, its host services through bridge.
    dt_transport_init_args_t transport_args(HostBridge &bridge) const;
    void open_memory();
    // Elastic membership (elastic_membership.h).
    std::string elastic_root() const { return cat(context_root(), "/elastic/"); }
    ElasticRendezvous rendezvous_for(int old_rank); // also restarts deadline_
    void adopt(const ElasticMembership &m, int old_rank);
    void join_running_job();
    // Meets the others and connects the membership that closes; when a member dies first,
    // meets again without it (a few times at most). r.me.old_rank -1: as a joiner.
    void form_membership(ElasticRendezvous r);
    // One meeting in the store: the next re-form (a joiner: the next that lets it in).
    void meet(ElasticRendezvous &r);
    // A re-form that failed: the context refuses every later call with e's reason.
    void fail_reform(const Error &e);
    // Everything that talks to peers, built for the current rank and size.
    void connect_peers();
    void disconnect_peers();
    // Elastic: reads the launcher's death notices, when it publishes them.
    void watch_deaths();
    // The keys that make every member's connection set-up give up (transport_choice.h).
    std::vector<std::string> abandon_keys() const;
    std::string shm_abandon_key() const; // the one shared memory's set-up watches
    // What is left of DISTTRAIN_TIMEOUT for creating this context (0: no limit).
    std::chrono::milliseconds time_left() const;

    ContextConfig cfg_;
    bool shared_store_ = false; // the ranks meet in one store (not private ones)
    std::optional<ContextSlot> slot_; // set first thing: its name or number
    uint64_t epoch_ = 0;
    // Set when a re-form failed and left no engine: what every later call fails with.
    std::optional<std::pair<dt_status_t, std::string>> unformed_;
    // This membership's store namespace: context_root() + "/", and context_root() +
    // ".<epoch>/" once re-formed.
    std::string ns_;
    std::chrono::steady_clock::time_point deadline_; // of the whole creation
    std::unique_ptr<bootstrap::Auth> auth_;
    std::unique_ptr<bootstrap::StoreServer> store_server_;
    std::unique_ptr<bootstrap::StoreClient> store_;
    // Elastic, where the launcher publishes deaths (death_notices.h); null elsewhere.
    std::unique_ptr<DeathNotices> deaths_;
    // The member death watch's own client and notices (member_death_watch.h).
    std::unique_ptr<bootstrap::StoreClient> watch_store_;
    std::unique_ptr<DeathNotices> watch_deaths_;
    std::vector<int64_t> member_ids_; // with deaths_: each rank's launch id
    std::unique_ptr<HostBridge> host_;
    std::unique_ptr<Transport> transport_;
    std::unique_ptr<HostBridge> device_host_;        // the device transport's services
    std::unique_ptr<Transport> device_transport_;    // null: device memory is staged
    std::unique_ptr<shm::Domain> shm_; // null: no shared memory (core/shm/attach.h)
    std::unique_ptr<HostBridge> memory_host_; // the memory provider's services
    std::unique_ptr<plugin::MemoryProvider> memory_; // null: DISTTRAIN_MEMORY=none
    std::unique_ptr<routing::Router> router_;
    // DISTTRAIN_TIMELINE: opened once, so that one file holds the process's whole history
    // across re-forms; each membership's engine writes to it. Null: no timeline.
    std::unique_ptr<Timeline> timeline_;
    std::unique_ptr<Engine> engine_;
};

} // namespace dt
