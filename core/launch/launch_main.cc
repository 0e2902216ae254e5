// SPDX-License-Identifier: Apache-2.0
// disttrainrun: starts the ranks of a job on this machine and over ssh, serves their
// rendezvous store, tags their output and stops them all when one fails.
#include "launch/launch_discovery.h"
#include "launch/launch_env.h"
#include "launch/launch_hosts.h"
#include "launch/launch_job.h"
#include "launch/launch_mpi.h"
#include "launch/launch_options.h"
#include "launch/launch_signals.h"
#include "launch/launch_ssh.h"
#include "launch/launch_store.h"

#include "bootstrap/auth.h"
#include "runtime/death_notices.h"
#include "runtime/join_notice.h"
#include "runtime/env.h"
#include "runtime/error.h"
#include "telemetry/log.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <iostream>
#include <memory>
#include <utility>

namespace dt::launch {
namespace {

// Exit codes for problems found before any rank starts.
constexpr int exit_usage = 2;
constexpr int exit_setup = 1;
constexpr int exit_cannot_run = 127;

// --host-discovery-script: how often it runs during the job, and how long a run may take.
constexpr auto discovery_interval = std::chrono::seconds(1);
constexpr auto discovery_limit = std::chrono::seconds(5);


EnvList rank_env(const Placement &p, int size, const std::string &store_addr,
                 const Options &opt, bool replacement)
{
    // A joiner's rank and size are placeholders (the re-form that lets it in numbers it),
    // but they must be valid: a new rank's number may be past -np.
    size = std::max({size, p.rank + 1, p.local_size});
    EnvList env = {{"DISTTRAIN_RANK", std::to_string(p.rank)},
            {"DISTTRAIN_SIZE", std::to_string(size)},
            {"DISTTRAIN_LOCAL_RANK", std::to_string(p.local_rank)},
            {"DISTTRAIN_LOCAL_SIZE", std::to_string(p.local_size)},
            {"DISTTRAIN_STORE_ADDR", store_addr},
            // The library must connect to our store rather than serve one on rank 0.
            {"DISTTRAIN_STORE_SERVER", "launcher"}};
    if (opt.elastic) {
        env.push_back({"DISTTRAIN_ELASTIC", "1"});
        env.push_back({"DISTTRAIN_MIN_SIZE", std::to_string(opt.min_np)});
        env.push_back({"DISTTRAIN_LAUNCH_ID",
                       std::to_string(p.launch_id < 0 ? p.rank : p.launch_id)});
        if (replacement)
            env.push_back({"DISTTRAIN_ELASTIC_JOIN", "1"});
    }
    return env;
}

// The discovery script failed before the job: nothing was started.
struct DiscoveryFailed {
    std::string message;
};

// The script must be there and executable before anything starts.
std::string check_discovery_script(const std::string &script)
{
    try {
        return resolve_executable(script);
    } catch (const SpawnError &e) {
        throw UsageError{"--host-discovery-script: " + e.message() +
                         " (it must be an executable file, e.g. chmod +x " + script + ")"};
    }
}

// The hosts the script lists now, which place the first -np ranks.
std::vector<HostSlots> first_hosts(HostDiscovery &discovery, const Options &opt)
{
    DiscoveryResult r = discovery.run_now();
    if (!r.ok)
        throw DiscoveryFailed{r.error};
    long slots = 0;
    for (const HostSlots &h : r.hosts)
        slots += h.slots;
    if (slots < opt.np)
        throw DiscoveryFailed{"--host-discovery-script " + opt.discovery_script + " lists " +
                              std::to_string(slots) + " slot(s) (" +
                              (r.hosts.empty() ? std::string("no host") : format_hosts(r.hosts)) +
                              "), fewer than the -np " + std::to_string(opt.np) +
                              " ranks to start; lower -np or list more slots"};
    return r.hosts;
}

std::string current_dir()
{
    char buf[PATH_MAX];
    if (!getcwd(buf, sizeof buf))
        throw_error(DT_ERR_INTERNAL, "cannot read the current directory: ",
                    std::strerror(errno));
    return buf;
}

std::vector<RankLaunch> build_launches(const Options &opt,
                                       const std::vector<Placement> &placements,
                                       const std::string &local_exe,
                                       const std::string &ssh_path,
                                       const std::string &store_addr,
                                       const std::string &token,
                                       const std::vector<std::vector<int>> &cpu_plan,
                                       bool replacements = false)
{
    std::vector<RankLaunch> launches;
    size_t local_index = 0; // the plan covers the ranks started here, in order
    std::vector<std::string> inherited = current_environment(rank_variable_names());
    // -x values reach local ranks through their inherited environment and remote ranks
    // with the settings forwarded by default (launch_env.h).
    EnvList exported = exported_values(opt.exports, inherited);
    EnvList forwarded = remote_settings(inherited, exported);
    for (const auto &[name, value] : exported)
        set_variable(inherited, name, value);
    SshOptions ssh{opt.ssh_port, opt.ssh_identity};
    std::string cwd = current_dir();
    for (const Placement &p : placements) {
        RankLaunch l;
        l.place = p;
        EnvList env = rank_env(p, opt.np, store_addr, opt, replacements);
        if (p.local) {
            l.spec.path = local_exe;
            l.spec.argv = opt.command;
            l.spec.env = inherited;
            for (const auto &[name, value] : env)
                l.spec.env.push_back(name + "=" + value);
            l.spec.env.push_back("DISTTRAIN_JOB_TOKEN=" + token);
            // As with mpirun: rank 0 reads what is piped to us; a replacement does not.
            l.spec.inherit_stdin = p.rank == 0 && !replacements;
            if (local_index < cpu_plan.size()) {
                l.spec.cpus = cpu_plan[local_index];
                std::string list;
                for (int cpu : l.spec.cpus) {
                    if (!list.empty())
                        list += ',';
                    list += std::to_string(cpu);
                }
                DT_LOG(debug, "launch", "rank ", p.rank, " bound to CPUs ", list);
            }
            ++local_index;
        } else {
            EnvList remote = forwarded;
            remote.insert(remote.end(), env.begin(), env.end());
            l.spec = remote_spawn_spec(ssh_path, ssh, p.host, cwd, remote, opt.command);
            l.stdin_data = token + "\n";
        }
        launches.push_back(std::move(l));
    }
    return launches;
}

int run(const std::vector<std::string> &args)
{
    std::optional<Options> parsed;
    std::optional<HostDiscovery> discovery;
    std::vector<HostSlots> discovered;
    std::vector<Placement> placements;
    std::vector<std::vector<int>> cpu_plan;
    std::string binding_note;
    try {
        parsed = parse_options(args);
        if (!parsed) {
            std::cout << usage();
            return 0;
        }
        if (parsed->show_version) {
            std::cout << version_text() << "\n";
            return 0;
        }
        // ssh only warns about a key it cannot read and goes on with the default keys.
        if (!parsed->ssh_identity.empty() && access(parsed->ssh_identity.c_str(), R_OK) != 0)
            throw UsageError{"--ssh-identity " + parsed->ssh_identity +
                             ": cannot read it: " + std::strerror(errno)};
        for (const std::string &warning : unset_export_warnings(parsed->exports))
            std::cerr << "disttrainrun: " << warning << "\n";
        if (parsed->launcher == LauncherKind::mpi) {
            log::init_from_env();
            return run_with_mpirun(*parsed);
        }
        if (!parsed->discovery_script.empty()) {
            discovery.emplace(check_discovery_script(parsed->discovery_script),
                              discovery_interval, discovery_limit);
            discovered = first_hosts(*discovery, *parsed);
            parsed->hosts = format_hosts(discovered);
        }
        placements = place_ranks(*parsed);
        int local_ranks = static_cast<int>(std::count_if(
            placements.begin(), placements.end(), [](const Placement &p) { return p.local; }));
        cpu_plan = plan_binding(parsed->bind_to, local_ranks, &binding_note);
    } catch (const UsageError &e) {
        std::cerr << "disttrainrun: " << e.message << " (see disttrainrun --help)\n";
        return exit_usage;
    } catch (const DiscoveryFailed &e) {
        std::cerr << "disttrainrun: " << e.message << "\n";
        return exit_setup;
    }
    const Options &opt = *parsed;
    log::init_from_env();
    if (!binding_note.empty())
        DT_LOG(info, "launch", binding_note);

    std::string local_exe, ssh_path;
    std::vector<std::string> ssh_hosts;
    bool remote_hosts = false;
    for (const Placement &p : placements) {
        if (p.local)
            continue;
        remote_hosts = remote_hosts || !is_local_host(p.host);
        if (std::find(ssh_hosts.begin(), ssh_hosts.end(), p.host) == ssh_hosts.end())
            ssh_hosts.push_back(p.host);
    }
    // Everything that can be checked is checked before any rank starts.
    try {
        if (ssh_hosts.size() < placements.size())
            local_exe = resolve_executable(opt.command.front());
        if (!ssh_hosts.empty())
            ssh_path = resolve_executable("ssh");
    } catch (const SpawnError &e) {
        std::cerr << "disttrainrun: " << e.message() << "\n";
        return exit_cannot_run;
    }
    if (!ssh_hosts.empty()) {
        SshOptions ssh{opt.ssh_port, opt.ssh_identity};
        auto unreachable = check_hosts(ssh_path, ssh, ssh_hosts);
        for (const UnreachableHost &u : unreachable)
            std::cerr << unreachable_message(u, ssh) << "\n";
        if (!unreachable.empty())
            return exit_setup;
    }

    SignalReader signals; // before the store's thread exists, so it inherits the mask
    std::string token = bootstrap::Auth::random_token();
    // Ranks the discovery script adds on other hosts must reach the store too: it listens
    // beyond loopback from the start where this machine has an address for them.
    bool reachable = remote_hosts;
    if (discovery && !remote_hosts) {
        reachable = non_loopback_ipv4().has_value() || env::get("DISTTRAIN_STORE_ADDR");
        if (!reachable)
            DT_LOG(warn, "launch", "no non-loopback IPv4 address: ranks that "
                   "--host-discovery-script adds on other hosts could not reach the store; "
                   "set DISTTRAIN_STORE_ADDR to an address of this machine they can reach");
    }
    LaunchStore store = start_store(reachable, token);
    DT_LOG(info, "launch", "store at ", store.address, " for ", opt.np, " ranks");
    JobSettings settings;
    settings.timeout_s = opt.timeout_s;
    settings.grace_s = opt.grace_s;
    settings.tag_output = opt.tag_output;
    settings.elastic = opt.elastic;
    settings.min_np = opt.min_np;
    settings.max_restarts = opt.max_restarts;
    settings.max_np = opt.max_np;
    settings.launcher = opt.launcher;
    settings.discovery = discovery ? &*discovery : nullptr;
    settings.hosts = discovered;
    // Elastic: every death goes into the store at once, so the survivors' re-form waits
    // for no latecomer and drops a member that dies while it connects.
    std::unique_ptr<bootstrap::StoreClient> notices_store;
    std::unique_ptr<DeathPublisher> deaths;
    if (opt.elastic) {
        notices_store = std::make_unique<bootstrap::StoreClient>(
            store.address, bootstrap::Auth(token), std::chrono::seconds(10));
        deaths = std::make_unique<DeathPublisher>(*notices_store);
        settings.on_death = [&deaths](int64_t launch_id) {
            try {
                deaths->publish(launch_id);
            } catch (const Error &e) {
                // The ranks then settle and time out as without notices.
                DT_LOG(warn, "launch", "could not publish the death of launch id ",
                       launch_id, " in the store: ", e.what());
            }
        };
    }
    // Not elastic: the store tells whether a rank that exited had joined the job.
    std::unique_ptr<bootstrap::StoreClient> probe_store;
    if (!opt.elastic) {
        probe_store = std::make_unique<bootstrap::StoreClient>(
            store.address, bootstrap::Auth(token), std::chrono::seconds(10));
        // A store that fails to answer counts as "joined": no failure is made up from it.
        auto guarded = [&probe_store](auto ask) {
            try {
                return ask(*probe_store);
            } catch (const Error &e) {
                DT_LOG(warn, "launch", "could not ask the store which ranks joined: ",
                       e.what());
                return true;
            }
        };
        settings.joined = [guarded](int rank) {
            return guarded([rank](bootstrap::StoreClient &c) { return has_joined(c, rank); });
        };
        settings.any_joined = [guarded] {
            return guarded([](bootstrap::StoreClient &c) { return joined_count(c) > 0; });
        };
        settings.exited_unjoined = [guarded](int rank, int code) {
            guarded([rank, code](bootstrap::StoreClient &c) {
                announce_exit(c, rank, code);
                return true;
            });
        };
    }
    if (opt.elastic) {
        // A new host from the discovery script may be the first remote one: ssh is then
        // looked up when it is needed, and a missing ssh fails that rank's start.
        // Not found: the start then fails with the reason (SpawnError in run_job).
        auto lookup = [](const std::string &name) {
            try {
                return resolve_executable(name);
            } catch (const SpawnError &) {
                return name;
            }
        };
        settings.joiner = [&, lookup, local_exe, ssh_path](const Placement &p) mutable {
            if (!p.local && ssh_path.empty())
                ssh_path = lookup("ssh");
            if (p.local && local_exe.empty())
                local_exe = lookup(opt.command.front());
            // A replacement gets the cores of the rank it replaces; a new rank on a free
            // slot is not bound (the plan covered the first ranks only).
            std::vector<std::vector<int>> cores;
            if (p.local && p.rank < static_cast<int>(placements.size())) {
                size_t local_index = 0;
                for (int k = 0; k < p.rank; ++k)
                    local_index += placements[static_cast<size_t>(k)].local ? 1 : 0;
                if (local_index < cpu_plan.size())
                    cores.push_back(cpu_plan[local_index]);
            }
            return build_launches(opt, {p}, local_exe, ssh_path, store.address, token, cores,
                                  true)
                .front();
        };
    }
    return run_job(signals,
                   build_launches(opt, placements, local_exe, ssh_path, store.address, token,
                                  cpu_plan),
                   settings);
}

} // namespace
} // namespace dt::launch

int main(int argc, char **argv)
{
    std::vector<std::string> args(argv + 1, argv + argc);
    try {
        return dt::launch::run(args);
    } catch (const dt::Error &e) {
        std::string msg = e.what();
        if (msg.rfind("disttrainrun: ", 0) != 0)
            msg = "disttrainrun: " + msg;
        std::cerr << msg << "\n";
        return 1;
    } catch (const std::exception &e) {
        std::cerr << "disttrainrun: internal error: " << e.what() << "\n";
        return 1;
    }
}
