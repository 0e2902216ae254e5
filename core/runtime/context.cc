// SPDX-License-Identifier: Apache-2.0
#include "runtime/context.h"

#include "plugin/loader.h"
#include "plugin/memory_provider.h"
#include "runtime/elastic_membership.h"
#include "runtime/env.h"
#include "runtime/error.h"
#include "runtime/job_agreement.h"
#include "runtime/join_notice.h"
#include "runtime/member_death_watch.h"
#include "runtime/transport_choice.h"
#include "telemetry/log.h"

#include <cerrno>
#include <cstring>
#include <unistd.h>
#include <optional>

namespace dt {

namespace {

// A context has peers to meet in the job's store unless it is a process of its own (size
// 1 and not elastic: an elastic job of one grows when a replacement joins) or every rank
// serves itself a private store (bare mpirun, whose transport wires the ranks up).
bool meets_in_shared_store(const ContextConfig &cfg)
{
    if (cfg.private_store)
        return false;
    return cfg.ranks.size > 1 || (cfg.elastic && !cfg.store_addr.empty());
}

// How many memberships one re-form tries when members die while the new one connects
// (each try is bounded by DISTTRAIN_TIMEOUT).
constexpr int kReformAttempts = 3;

// "auto" means the production transports that are installed, fastest first. Only those
// that carry the engine's control traffic: nccl is device-only and runs beside one of
// these once device memory is routed to it, never as the context's transport.
std::vector<std::string> expand_auto(const std::vector<std::string> &names)
{
    static const char *const kPreference[] = {"ucx", "mpi", "tcp"};
    std::vector<std::string> out;
    for (const auto &name : names) {
        if (name != "auto") {
            out.push_back(name);
            continue;
        }
        auto found = plugin::available("transport");
        for (const char *preferred : kPreference)
            for (const auto &f : found)
                if (f == preferred)
                    out.push_back(f);
        if (out.empty())
            out.push_back("tcp"); // so the not-found error lists the folders searched
    }
    return out;
}

// Rank 0's store at the address a user or a launcher chose: a port it cannot listen on
// (most often one another job holds) is named with where it came from and what to change
// there, since the store's own advice (a free port, or port 0) may not be the user's to
// follow (a torchrun user sets MASTER_PORT, not the store's port).
std::unique_ptr<bootstrap::StoreServer> serve_store(const std::string &bind,
                                                    const bootstrap::Auth &auth,
                                                    const ContextConfig &cfg)
{
    try {
        return std::make_unique<bootstrap::StoreServer>(bind, auth);
    } catch (const Error &e) {
        if (e.status() != DT_ERR_CONNECT)
            throw;
        std::string what = e.what();
        what = what.substr(0, what.find("; choose a free port"));
        if (what.find(std::strerror(EADDRINUSE)) == std::string::npos)
            throw_error(e.status(), what, "; this address is ", cfg.store_from,
                        ", where rank 0 serves the store: it must be an address of rank "
                        "0's host, at a port this process may listen on");
        throw_error(e.status(), what, "; this address is ", cfg.store_from,
                    ", and another job may hold its port: ", cfg.store_port_hint);
    }
}

bool ends_with(const std::string &s, const std::string &tail)
{
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::string host_name()
{
    char name[256] = {};
    if (gethostname(name, sizeof name - 1) != 0)
        return "localhost";
    return name;
}

} // namespace

Context::Context(const dt_context_params_t *params, int api_minor)
{
    log::init_from_env();
    cfg_ = read_config(params, api_minor);
    // One DISTTRAIN_TIMEOUT bounds the whole creation, however many transports it tries.
    deadline_ = cfg_.timeout.count() > 0 ? std::chrono::steady_clock::now() + cfg_.timeout
                                         : std::chrono::steady_clock::time_point::max();
    log::set_rank(cfg_.ranks.size > 1 ? cfg_.ranks.rank : -1);
    shared_store_ = meets_in_shared_store(cfg_);
    slot_.emplace(cfg_.name, shared_store_); // how its ranks find each other (context_naming.h)
    ns_ = cat(context_root(), "/");
    DT_LOG(info, "context", "rank ", rank(), " of ", size(), " (from ", cfg_.ranks.source,
           "), local rank ", local_rank(), " of ", local_size());
    timeline_ = Timeline::open_from_env(rank(), cfg_.elastic_join, cfg_.launch_id);
    open_store();
    watch_deaths();
    if (cfg_.elastic_join) {
        open_memory();
        join_running_job();
        slot_->created();
        return;
    }
    check_agreement(); // before anything waits on the other ranks
    open_memory(); // before the transport, so a wrong provider fails before peers connect
    connect_peers();
    slot_->created();
}

void Context::watch_deaths()
{
    if (!cfg_.elastic || !shared_store_ || cfg_.launch_id < 0)
        return;
    deaths_ = std::make_unique<DeathNotices>(*store_);
    // The launcher names the first ranks by their rank: that is how the others know this
    // rank's launch id before any re-form has told them.
    if (!deaths_->vouched() || (!cfg_.elastic_join && cfg_.launch_id != rank())) {
        deaths_.reset();
        return;
    }
    DT_LOG(debug, "context", "the launcher publishes deaths: re-forms wait for no "
           "latecomers (launch id ", cfg_.launch_id, ")");
    // Connected now, not at each re-form, which would wait for it.
    watch_store_ = std::make_unique<bootstrap::StoreClient>(
        store_->address(), *auth_,
        cfg_.timeout.count() > 0 ? cfg_.timeout : std::chrono::hours(24 * 365),
        cfg_.store_from, "the launcher");
    watch_deaths_ = std::make_unique<DeathNotices>(*watch_store_);
    if (!cfg_.elastic_join)
        for (int r = 0; r < size(); ++r)
            member_ids_.push_back(r);
}

std::string Context::shm_abandon_key() const { return cat(ns_, "shm/abandoned"); }

std::vector<std::string> Context::abandon_keys() const
{
    std::vector<std::string> keys{shm_abandon_key()};
    for (const auto &name : expand_auto(cfg_.transports))
        keys.push_back(TransportChoice::abandon_key_in(ns_, name));
    return keys;
}

ElasticRendezvous Context::rendezvous_for(int old_rank)
{
    deadline_ = cfg_.timeout.count() > 0 ? std::chrono::steady_clock::now() + cfg_.timeout
                                         : std::chrono::steady_clock::time_point::max();
    ElasticRendezvous r;
    r.root = elastic_root();
    r.me = {old_rank, host_name(), cfg_.launch_id};
    r.old_size = size();
    r.min_size = cfg_.min_size;
    r.settle = cfg_.elastic_settle;
    r.deadline = deadline_;
    r.deaths = deaths_.get();
    r.old_ids = member_ids_;
    return r;
}

void Context::adopt(const ElasticMembership &m, int old_rank)
{
    cfg_.ranks.rank = m.rank;
    cfg_.ranks.size = m.size;
    cfg_.ranks.local_rank = m.local_rank;
    cfg_.ranks.local_size = m.local_size;
    cfg_.ranks.local_known = true;
    member_ids_.clear();
    for (const ElasticMember &member : m.members)
        member_ids_.push_back(member.launch_id);
    ns_ = cat(context_root(), ".", epoch_, "/");
    log::set_rank(m.size > 1 ? m.rank : -1);
    if (timeline_)
        timeline_->marker(old_rank >= 0 ? "REFORM" : "JOIN", Timeline::Clock::now(),
                          cat(R"("epoch":)", epoch_, R"(,"rank":)", m.rank, R"(,"size":)",
                              m.size));
    if (old_rank >= 0)
        DT_LOG(info, "context", "re-formed (epoch ", epoch_, "): rank ", old_rank,
               " is now rank ", m.rank, " of ", m.size, ", local rank ", m.local_rank, " of ",
               m.local_size);
    else
        DT_LOG(info, "context", "joined the running job (epoch ", epoch_, ") as rank ", m.rank,
               " of ", m.size, ", local rank ", m.local_rank, " of ", m.local_size);
}

void Context::join_running_job()
{
    DT_LOG(info, "context", "joining a running elastic job: waiting for its ranks to let "
           "this one in (at their next step boundary)");
    form_membership(rendezvous_for(-1));
}

void Context::meet(ElasticRendezvous &r)
{
    if (r.me.old_rank < 0) {
        auto [m, epoch] = elastic_join(*store_, r);
        epoch_ = epoch;
        adopt(m, -1);
        return;
    }
    r.epoch = ++epoch_;
    adopt(elastic_rendezvous(*store_, r), r.me.old_rank);
}

int64_t Context::waiting_joiners()
{
    if (!cfg_.elastic || rank() != 0)
        return 0;
    return dt::waiting_joiners(*store_, elastic_root(), deaths_.get());
}

void Context::connect_peers()
{
    open_transport();
    open_device_transport();
    shm_ = shm::attach(*store_, *transport_,
                       {rank(), size(), local_rank(), local_size(), cfg_.ranks.local_known,
                        cat(ns_, "shm/"), cfg_.timeout,
                        deaths_ && epoch_ > 0 ? shm_abandon_key() : std::string()},
                       cfg_.policy.shm);
    router_ = std::make_unique<routing::Router>(cfg_.policy, *transport_,
                                                device_transport_.get(), shm_.get(),
                                                memory_.get(), size());
    engine_ = std::make_unique<Engine>(*transport_, cfg_, *router_, timeline_.get());
}

void Context::disconnect_peers()
{
    engine_.reset();
    router_.reset();
    shm_.reset(); // after the engine's last collective, before its transport goes
    device_transport_.reset();
    device_host_.reset();
    transport_.reset();
    host_.reset();
}

void Context::reform()
{
    if (!cfg_.elastic)
        throw_error(DT_ERR_INVALID_STATE, "dt_context_reform: this job is not elastic; set "
                    "DISTTRAIN_ELASTIC=1 on every rank (disttrainrun --elastic does)");
    if (!engine_)
        throw_error(unformed_->first, "dt_context_reform: ", unformed_->second);
    ElasticRendezvous r = rendezvous_for(rank());
    r.lost = engine_->stop(); // who this membership saw lost, before it goes
    disconnect_peers();
    form_membership(std::move(r));
}

void Context::form_membership(ElasticRendezvous r)
{
    for (int attempt = 1;; ++attempt) {
        try {
            meet(r);
        } catch (const Error &e) {
            // A rank died after it arrived and before the membership closed (it may have
            // been the one closing it): the same ranks meet again in the next epoch.
            if (e.status() == DT_ERR_PEER_LOST && attempt < kReformAttempts) {
                DT_LOG(warn, "context", e.what(), ": meeting again");
                continue;
            }
            fail_reform(e); // too few ranks, or this one came too late: meeting again won't help
            throw;
        }
        // Where the launcher publishes deaths, a member's death makes every member's
        // set-up give up at once; elsewhere the others notice within DISTTRAIN_TIMEOUT.
        std::unique_ptr<MemberDeathWatch> watch;
        if (deaths_)
            watch = std::make_unique<MemberDeathWatch>(*watch_store_, *watch_deaths_,
                                                       member_ids_, abandon_keys());
        try {
            connect_peers();
            return;
        } catch (const Error &e) {
            std::optional<std::string> died = watch ? watch->fired() : std::nullopt;
            watch.reset();
            disconnect_peers();
            Error why = died ? Error(DT_ERR_PEER_LOST, *died) : e;
            if (attempt >= kReformAttempts) {
                fail_reform(why);
                throw why;
            }
            // A member died after it arrived, while the new membership connected: the
            // others all fail to connect, and meet again without it, a joiner just let in
            // as a member like the rest. Where the launcher publishes deaths that meeting
            // knows who is gone; elsewhere it closes once arrivals have settled.
            DT_LOG(warn, "context", "the re-formed job (epoch ", epoch_, ", ", size(),
                   " ranks) could not connect, a member may have died: meeting again (",
                   why.what(), ")");
            int members = size();
            r = rendezvous_for(rank());
            r.old_size = members;
        }
    }
}

void Context::fail_reform(const Error &e)
{
    // No membership is left to run anything: every later call fails with this.
    disconnect_peers();
    unformed_.emplace(e.status(), cat("the job could not re-form: ", e.what(),
                                      "; destroy the context"));
}

Context::~Context()
{
    disconnect_peers();
    memory_.reset(); // nothing queued can still use its streams: the engine is gone
    memory_host_.reset();
    watch_deaths_.reset();
    watch_store_.reset();
    deaths_.reset();
    store_.reset();
    store_server_.reset();
}

std::string Context::context_root() const
{
    if (!shared_store_ || cfg_.job_id.empty())
        return slot_->root();
    return cat("job/", cfg_.job_id, "/", slot_->root());
}

void Context::open_store()
{
    // A context with no peers to meet still gets a private in-process store, so plugins
    // see the same services in every job.
    bool local_only = !shared_store_;
    std::string token = cfg_.job_token.empty() ? bootstrap::Auth::random_token()
                                               : cfg_.job_token;
    auth_ = std::make_unique<bootstrap::Auth>(token);
    std::string addr = cfg_.store_addr;
    if (local_only) {
        store_server_ = std::make_unique<bootstrap::StoreServer>("127.0.0.1:0", *auth_);
        addr = store_server_->address();
    } else if (cfg_.store_server) {
        // Rank 0 already listens: its address had to exist before it was published.
        store_server_ = std::move(cfg_.store_server);
        DT_LOG(info, "context", "rank 0 serves the rendezvous store at ",
               store_server_->address(), " (", cfg_.store_from, ")");
    } else if (!cfg_.launcher_serves_store && rank() == 0) {
        const std::string &bind = cfg_.store_bind.empty() ? addr : cfg_.store_bind;
        store_server_ = serve_store(bind, *auth_, cfg_);
        DT_LOG(info, "context", "rank 0 serves the rendezvous store at ",
               store_server_->address(), " (", cfg_.store_from, ")");
    }
    auto timeout = cfg_.timeout.count() > 0 ? cfg_.timeout : std::chrono::hours(24 * 365);
    // Named in the error a rank gets when the store closes under it.
    std::string served_by = local_only ? "" : cfg_.launcher_serves_store ? "the launcher"
                                                                         : "rank 0";
    try {
        store_ = std::make_unique<bootstrap::StoreClient>(addr, *auth_, timeout,
                                                          cfg_.store_from, served_by);
    } catch (const Error &e) {
        // A derived token is the same on every rank of this job, so a store that refuses
        // it is not this job's: most often another job or program holds the port. Telling
        // the user to make the tokens match would send them after the wrong cause.
        if (e.status() != DT_ERR_AUTH || !cfg_.token_derived)
            throw;
        throw_error(DT_ERR_AUTH, "the rendezvous store at ", addr, " (", cfg_.store_from,
                    ") refused this job's token, which every rank of the job derives the "
                    "same from ", cfg_.token_from, ": most likely another job or program "
                    "listens on that port; ", cfg_.store_port_hint);
    }
    announce_joined();
}

void Context::announce_joined()
{
    // Only a context of the launcher's whole job: a rank of the job that takes no part in
    // a smaller context has not failed to join it (join_notice.h).
    if (!shared_store_ || !cfg_.launcher_serves_store || cfg_.elastic)
        return;
    if (rank() != env::get_int("DISTTRAIN_RANK", -1, -1, INT32_MAX) ||
        size() != env::get_int("DISTTRAIN_SIZE", -1, -1, INT32_MAX))
        return;
    dt::announce_joined(*store_, rank());
    announced_ = true;
}

void Context::check_agreement()
{
    if (!shared_store_ || size() == 1)
        return;
    JobSettings mine;
    mine.size = size();
    mine.transports = cfg_.transports;
    mine.ordered = cfg_.ordered;
    mine.api_major = DT_API_MAJOR;
    mine.api_minor = DT_API_MINOR;
    check_job_agreement(*store_, ns_, rank(), mine, time_left(),
                        [this] { return token_refusals() + store_listening(); },
                        pairing_hint(), announced_);
}

std::string Context::pairing_hint() const
{
    if (!cfg_.name.empty())
        return cat("; every rank must create a context named '", cfg_.name,
                   "' (dt_context_params_t.name) for them to meet");
    return "; a rank that created a different number of contexts before this one reaches "
           "dt_context_create under another context and waits there: unnamed contexts "
           "pair up in the order each rank creates them (single-process ones aside), so "
           "create them in the same order on every rank, or give each a name "
           "(dt_context_params_t.name)";
}

std::string Context::token_refusals() const
{
    if (!store_server_)
        return {}; // the launcher serves the store, and logs what it refuses
    bootstrap::StoreServer::TokenRefusals refused = store_server_->token_refusals();
    if (refused.count == 0)
        return {};
    // The token is proved before any rank number is sent, so which rank it was is unknown.
    return cat("; meanwhile the store this rank serves refused ", refused.count,
               refused.count == 1 ? " connection" : " connections",
               " that proved another job token (the last from ", refused.last_peer,
               "): a rank started with another ", cfg_.token_from,
               " cannot join, so give every rank the same one");
}

std::string Context::store_listening() const
{
    if (!store_server_)
        return {};
    const std::string &at = cfg_.store_bind.empty() ? store_server_->address() : cfg_.store_bind;
    return cat("; this rank serves the store at ", at, " for ", cfg_.store_from, "='",
               cfg_.store_addr, "'");
}

std::chrono::milliseconds Context::time_left() const
{
    if (deadline_ == std::chrono::steady_clock::time_point::max())
        return std::chrono::milliseconds(0); // no limit
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline_ - std::chrono::steady_clock::now());
    return std::max(left, std::chrono::milliseconds(1));
}

dt_transport_init_args_t Context::transport_args(HostBridge &bridge) const
{
    dt_transport_init_args_t args{};
    args.struct_size = sizeof(args);
    args.abi_version = DT_TRANSPORT_VERSION;
    args.rank = rank();
    args.size = size();
    args.local_rank = local_rank();
    args.local_size = local_size();
    args.timeout_ms = static_cast<int32_t>(
        std::min<int64_t>(cfg_.timeout.count(), INT32_MAX));
    args.host = bridge.host();
    args.services = HostBridge::services();
    return args;
}

void Context::open_transport()
{
    host_ = std::make_unique<HostBridge>(store_.get(), auth_.get(), "", cfg_.timeout);
    std::vector<std::string> names = expand_auto(cfg_.transports);
    std::optional<TransportChoice> choice;
    if (shared_store_ && size() > 1) {
        choice.emplace(*store_, ns_, rank(), size(), deadline_);
        names = choice->candidates(names);
    }

    std::string failures;
    std::vector<dt_status_t> statuses; // each candidate's failure, in the order tried
    for (const auto &name : names) {
        // Each transport gets its own keys, so one that fails half-way cannot confuse
        // the next in the list.
        host_->key_prefix = cat(ns_, name, "/");
        host_->given_up.reset();
        dt_transport_init_args_t args = transport_args(*host_);
        args.timeout_ms = static_cast<int32_t>(std::min<int64_t>(time_left().count(), INT32_MAX));
        if (choice) {
            host_->abandon_key = choice->abandon_key(name);
            host_->deadline = deadline_;
        }
        try {
            transport_ = plugin::open_transport({name}, args, HostBridge::services());
            if (choice)
                choice->confirm_started(name);
            host_->abandon_key.clear();
            DT_LOG(info, "context", "using transport '", name, "' from ",
                   transport_->path());
            return;
        } catch (const Error &e) {
            transport_.reset();
            std::string why = e.what();
            if (choice)
                why += start_failure_cause(*choice, name, why);
            if (cfg_.transports.size() == 1 && cfg_.transports[0] != "auto") {
                if (why == e.what())
                    throw; // one explicit choice: its own error says it best
                throw Error(e.status(), why);
            }
            DT_LOG(warn, "context", "transport '", name, "' unavailable, trying the next: ",
                   why);
            failures += cat("\n  ", name, ": ", why);
            statuses.push_back(e.status());
            if (e.status() == DT_ERR_TIMEOUT)
                break; // DISTTRAIN_TIMEOUT is spent: the next would have no time at all
            if (store_->lost())
                break; // without the store no transport can find its peers
        }
    }
    host_->abandon_key.clear();
    throw_error(no_transport_status(statuses), "no transport could be started (tried in the "
                "order of DISTTRAIN_TRANSPORT):", failures);
}

std::string Context::start_failure_cause(TransportChoice &choice, const std::string &name,
                                         const std::string &own)
{
    // A plugin that lost its peers says what it missed; the rank that gave up first says
    // why, which is what the user needs. The notice the plugin's wait already read is
    // not read again: the store may have gone since (its rank failed and exited).
    std::optional<std::string> first = host_->given_up;
    if (!first) {
        if (auto lost = store_->lost()) {
            // Nobody can read a notice now, and each try to leave one would wait for the
            // store again.
            return own.find(*lost) == std::string::npos ? cat(" (", *lost, ")") : "";
        }
        try {
            first = choice.abandoned(name);
            if (!first) {
                choice.abandon(name, own);
                return "";
            }
        } catch (const Error &store_error) {
            // The store is gone: the peers will hear of it through their own waits.
            return cat(" (", store_error.what(), ")");
        }
    }
    return ends_with(*first, own) ? "" : cat(" (", *first, ")");
}

void Context::open_device_transport()
{
    if (cfg_.device_transport == "none")
        return;
    if (cfg_.device_transport == "auto") {
        open_device_transport_auto();
        return;
    }
    if (memory_ == nullptr)
        throw_error(DT_ERR_INVALID_CONFIG, "DISTTRAIN_DEVICE_TRANSPORT='",
                    cfg_.device_transport, "' needs a memory provider, which says where "
                    "device buffers live and when their producer has finished: set "
                    "DISTTRAIN_MEMORY (e.g. cuda)");
    const std::string &name = cfg_.device_transport;
    device_host_ = std::make_unique<HostBridge>(store_.get(), auth_.get(),
                                                cat(ns_, "device/", name, "/"),
                                                cfg_.timeout);
    const dt_transport_init_args_t args = transport_args(*device_host_);
    try {
        device_transport_ = plugin::open_device_transport(name, args, HostBridge::services());
    } catch (const Error &e) {
        throw_error(e.status(), "DISTTRAIN_DEVICE_TRANSPORT='", name, "': ", e.what());
    }
    DT_LOG(info, "context", "device memory goes over transport '", name, "' from ",
           device_transport_->path());
}

void Context::open_memory()
{
    if (cfg_.memory == "none")
        return;
    memory_host_ = std::make_unique<HostBridge>(store_.get(), auth_.get(),
                                                cat(context_root(), "/memory/", cfg_.memory, "/"),
                                                cfg_.timeout);
    dt_memory_init_args_t args{};
    args.struct_size = sizeof(args);
    args.abi_version = DT_MEMORY_VERSION;
    args.local_rank = local_rank();
    args.local_size = local_size();
    args.host = memory_host_->host();
    args.services = HostBridge::services();
    memory_ = plugin::open_memory(cfg_.memory, cfg_.memory_from, args, HostBridge::services());
}

std::shared_ptr<Operation> Context::submit(OpDesc desc)
{
    auto op = std::make_shared<Operation>(std::move(desc));
    if (!engine_)
        op->complete(unformed_->first, unformed_->second);
    else
        engine_->submit(op);
    return op;
}

void Context::abort()
{
    if (engine_)
        engine_->abort();
}

bool Context::register_group(uint32_t id, std::vector<int> members)
{
    if (!engine_)
        throw_error(unformed_->first, unformed_->second);
    return engine_->register_group(id, std::move(members));
}

std::optional<std::pair<dt_status_t, std::string>> Context::error() const
{
    if (!engine_)
        return unformed_;
    return engine_->error();
}

} // namespace dt
