// SPDX-License-Identifier: Apache-2.0
#include "launch/launch_mpi.h"

#include "launch/launch_env.h"
#include "launch/launch_hosts.h"
#include "launch/launch_job.h"
#include "launch/launch_process.h"
#include "launch/launch_signals.h"
#include "launch/launch_store.h"

#include "bootstrap/auth.h"
#include "telemetry/log.h"

#include <iostream>
#include <memory>
#include <regex>

namespace dt::launch {
namespace {

// Which rank mpirun's own report of a failed job names, in Open MPI 4.1's words:
//   mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 9 (Killed).
//   mpirun has exited due to process rank 0 with PID 0 on   (no MPI_Finalize)
//   Process name: [[23946,1],3]   and, on a later line,   Exit code:    3
// Our summary line would otherwise name only mpirun, which starts every rank.
std::function<std::string(std::string_view)> mpirun_report_reader()
{
    auto named = std::make_shared<std::string>(); // "Process name"'s rank
    return [named](std::string_view line) -> std::string {
        static const std::regex killed(R"(process rank (\d+) with PID \d+ on node \S+ )"
                                       R"(exited on signal (\d+ \([^)]*\)))");
        static const std::regex improper(R"(exited due to process rank (\d+) )");
        static const std::regex name(R"(Process name: +\[\[\d+,\d+\],(\d+)\])");
        static const std::regex code(R"(Exit code: +(\d+))");
        std::match_results<std::string_view::const_iterator> m;
        auto found = [&](const std::regex &re) {
            return std::regex_search(line.begin(), line.end(), m, re);
        };
        if (found(killed))
            return "mpirun reports rank " + m[1].str() + " killed by signal " + m[2].str();
        if (found(improper))
            return "mpirun reports rank " + m[1].str() + " exiting without MPI_Finalize";
        if (found(name))
            *named = m[1].str();
        else if (!named->empty() && found(code))
            return "mpirun reports rank " + *named + " as the first to exit non-zero (code " +
                   m[1].str() + ")";
        return "";
    };
}

} // namespace

std::vector<std::string> mpirun_argv(const Options &opt, const std::string &hosts,
                                     const std::vector<std::string> &env_names)
{
    // --oversubscribe: -np counts ranks, not cores, as with the local launcher.
    // --allow-run-as-root: containers often run as root; Open MPI refuses it otherwise.
    std::vector<std::string> argv = {"mpirun", "--allow-run-as-root", "--oversubscribe",
                                     "-np", std::to_string(opt.np)};
    if (!hosts.empty()) {
        argv.push_back("-H");
        argv.push_back(hosts); // Open MPI reads host:slots lists the same way
    }
    // Open MPI's ssh starter takes the extra ssh arguments as one space-separated string.
    std::string rsh_args;
    if (opt.ssh_port > 0)
        rsh_args = "-p " + std::to_string(opt.ssh_port);
    if (!opt.ssh_identity.empty())
        rsh_args += (rsh_args.empty() ? "" : " ") + std::string("-i ") + opt.ssh_identity;
    if (!rsh_args.empty()) {
        for (const char *arg : {"--mca", "plm_rsh_args"})
            argv.push_back(arg);
        argv.push_back(rsh_args);
    }
    if (opt.tag_output)
        argv.push_back("--tag-output");
    // An explicit --bind-to is mpirun's to apply (it binds each rank to a core by default
    // with up to 2 ranks, which --bind-to none must undo); auto leaves mpirun's default.
    if (opt.bind_to != BindTo::automatic) {
        argv.push_back("--bind-to");
        argv.push_back(opt.bind_to == BindTo::none ? "none" : "core");
    }
    // -x NAME exports NAME from mpirun's environment: the token never shows in argv.
    for (const char *name : {"DISTTRAIN_STORE_ADDR", "DISTTRAIN_JOB_TOKEN",
                             "DISTTRAIN_STORE_SERVER"}) {
        argv.push_back("-x");
        argv.push_back(name);
    }
    for (const std::string &name : env_names) {
        argv.push_back("-x");
        argv.push_back(name);
    }
    argv.insert(argv.end(), opt.command.begin(), opt.command.end());
    return argv;
}

int run_with_mpirun(const Options &opt)
{
    std::vector<HostSlots> hosts = host_list(opt);
    // As the other launchers: with --oversubscribe below, mpirun would place more ranks
    // than a host's slots.
    check_slots(opt, hosts);
    bool remote = false;
    for (const HostSlots &h : hosts)
        remote = remote || !h.local;
    if (!opt.ssh_identity.empty() &&
        opt.ssh_identity.find_first_of(" \t") != std::string::npos)
        throw UsageError{"--ssh-identity with --launcher mpi cannot contain spaces (Open "
                         "MPI splits its ssh arguments at spaces): " + opt.ssh_identity};
    std::string mpirun;
    try {
        mpirun = resolve_executable("mpirun");
    } catch (const SpawnError &e) {
        std::cerr << "disttrainrun: --launcher mpi needs Open MPI's mpirun: " << e.message()
                  << "; install openmpi-bin or use --launcher local/ssh\n";
        return 127;
    }

    SignalReader signals; // before the store's thread exists, so it inherits the mask
    std::string token = bootstrap::Auth::random_token();
    LaunchStore store = start_store(remote, token);
    DT_LOG(info, "launch", "store at ", store.address, " for ", opt.np, " ranks under mpirun");

    RankLaunch l;
    l.place.rank = 0;
    l.place.host = "mpirun, all ranks";
    l.place.local = true;
    l.spec.path = mpirun;
    l.spec.env = current_environment(rank_variable_names());
    // mpirun -x NAME exports mpirun's own NAME, so -x values are set in its environment;
    // the same variables reach the ranks as with the ssh launcher (launch_env.h).
    EnvList exported = exported_values(opt.exports, l.spec.env);
    std::vector<std::string> forwarded;
    for (const auto &[name, value] : remote_settings(l.spec.env, exported))
        forwarded.push_back(name);
    for (const auto &[name, value] : exported)
        set_variable(l.spec.env, name, value);
    l.spec.env.push_back("DISTTRAIN_STORE_ADDR=" + store.address);
    l.spec.env.push_back("DISTTRAIN_JOB_TOKEN=" + token);
    l.spec.env.push_back("DISTTRAIN_STORE_SERVER=launcher");
    l.spec.inherit_stdin = true; // mpirun forwards it to rank 0
    l.spec.argv = mpirun_argv(opt, hosts.empty() ? std::string() : format_hosts(hosts),
                              forwarded);
    l.label = "mpirun";
    l.explain = mpirun_report_reader();
    // mpirun tags its ranks' lines itself (--tag-output); ours would say [0] for all.
    JobSettings settings;
    settings.timeout_s = opt.timeout_s;
    settings.grace_s = opt.grace_s;
    settings.tag_output = false;
    std::vector<RankLaunch> one;
    one.push_back(std::move(l));
    return run_job(signals, std::move(one), settings);
}

} // namespace dt::launch
