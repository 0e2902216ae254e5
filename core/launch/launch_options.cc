// SPDX-License-Identifier: Apache-2.0
#include "launch/launch_options.h"

#include "bootstrap/rank_discovery.h"
#include "disttrain/disttrain.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>

namespace dt::launch {
namespace {

// Splits "--name=value" into name and value; plain "--name" leaves value empty.
struct Arg {
    std::string name;
    std::optional<std::string> inline_value;
};

Arg split_arg(const std::string &arg)
{
    auto eq = arg.find('=');
    if (arg.rfind("--", 0) == 0 && eq != std::string::npos)
        return {arg.substr(0, eq), arg.substr(eq + 1)};
    return {arg, std::nullopt};
}

// A count of ranks (positive, at most the library's limit on a job's ranks), or of
// restarts (zero allowed).
int parse_count(const std::string &option, const std::string &value, bool zero_ok = false)
{
    const int64_t max = zero_ok ? std::numeric_limits<int>::max() : bootstrap::kMaxRanks;
    // strtol accepts leading blanks, '+' and trailing junk; a count must be digits.
    bool digits = !value.empty() && value.find_first_not_of("0123456789") == std::string::npos;
    size_t first = digits ? std::min(value.find_first_not_of('0'), value.size()) : 0;
    bool too_big = digits && (value.size() - first > 18 || std::stoll(value) > max);
    if (too_big && !zero_ok)
        throw UsageError{option + " " + value + " is more ranks than the " +
                         std::to_string(max) + " a job may have"};
    if (too_big)
        throw UsageError{option + " needs a number from 0 to " + std::to_string(max) +
                         ", got '" + value + "'"};
    int n = digits ? static_cast<int>(std::stoll(value)) : -1;
    if (n < 0 || (n == 0 && !zero_ok))
        throw UsageError{option + " needs a " + (zero_ok ? "number" : "positive number of ranks") +
                         ", got '" + value + "'"};
    return n;
}

double parse_seconds(const std::string &option, const std::string &value)
{
    char *end = nullptr;
    errno = 0;
    double s = value.empty() ? -1 : std::strtod(value.c_str(), &end);
    if (value.empty() || errno != 0 || *end != '\0' || !std::isfinite(s) || s < 0 ||
        s > 1e7)
        throw UsageError{option + " needs a number of seconds >= 0, got '" + value + "'"};
    return s;
}

LauncherKind parse_launcher(const std::string &value)
{
    if (value == "local")
        return LauncherKind::local;
    if (value == "ssh")
        return LauncherKind::ssh;
    if (value == "mpi")
        return LauncherKind::mpi;
    throw UsageError{"--launcher must be 'local', 'ssh' or 'mpi', got '" + value + "'"};
}

int parse_port(const std::string &option, const std::string &value)
{
    bool digits = !value.empty() && value.size() <= 5 &&
                  value.find_first_not_of("0123456789") == std::string::npos;
    int port = digits ? std::atoi(value.c_str()) : 0;
    if (port < 1 || port > 65535)
        throw UsageError{option + " needs a port number from 1 to 65535, got '" + value + "'"};
    return port;
}

bool is_variable_name(const std::string &name)
{
    auto alpha = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; };
    return !name.empty() && alpha(name[0]) &&
           std::all_of(name.begin(), name.end(),
                       [&](char c) { return alpha(c) || (c >= '0' && c <= '9'); });
}

ExportedVar parse_export(const std::string &option, const std::string &value)
{
    size_t eq = value.find('=');
    ExportedVar v;
    v.name = value.substr(0, eq);
    if (eq != std::string::npos)
        v.value = value.substr(eq + 1);
    if (!is_variable_name(v.name))
        throw UsageError{option + " needs VAR or VAR=VALUE with VAR a variable name "
                                  "(letters, digits, _), got '" + value + "'"};
    if (is_rank_variable(v.name))
        throw UsageError{option + " cannot set " + v.name +
                         ": disttrainrun sets it for each rank"};
    return v;
}

} // namespace

const std::vector<std::string> &rank_variable_names()
{
    // The elastic settings follow --elastic and --min-np alone, so that the library and
    // the launcher's own stop rule never disagree.
    static const std::vector<std::string> names = {
        "DISTTRAIN_RANK",         "DISTTRAIN_SIZE",       "DISTTRAIN_LOCAL_RANK",
        "DISTTRAIN_LOCAL_SIZE",   "DISTTRAIN_STORE_ADDR", "DISTTRAIN_JOB_TOKEN",
        "DISTTRAIN_STORE_SERVER", "DISTTRAIN_ELASTIC",    "DISTTRAIN_MIN_SIZE",
        "DISTTRAIN_ELASTIC_JOIN"};
    return names;
}

bool is_rank_variable(const std::string &name)
{
    const auto &names = rank_variable_names();
    return std::find(names.begin(), names.end(), name) != names.end();
}

std::string version_text()
{
    return std::string("disttrainrun (libdisttrain) ") + DT_PROJECT_VERSION + ", API " +
           std::to_string(DT_API_MAJOR) + "." + std::to_string(DT_API_MINOR);
}

std::optional<Options> parse_options(const std::vector<std::string> &args)
{
    Options opt;
    bool np_given = false;
    bool min_np_given = false;
    bool max_restarts_given = false;
    bool max_np_given = false;
    std::map<std::string, std::string> given; // single-valued option -> the name it was given as
    size_t i = 0;
    // The value of an option: inline (--grace=2) or the next argument.
    auto value_of = [&](const Arg &a) -> std::string {
        if (a.inline_value)
            return *a.inline_value;
        if (i + 1 >= args.size())
            throw UsageError{a.name + " needs a value"};
        return args[++i];
    };
    for (; i < args.size(); ++i) {
        const std::string &raw = args[i];
        if (raw == "--") {
            ++i;
            break;
        }
        if (raw.empty() || raw[0] != '-')
            break; // the rank command starts here
        Arg a = split_arg(raw);
        // A single-valued option given twice is most likely a mistake (an alias, a
        // script adding its own): taking the last one silently would hide it.
        auto once = [&](const std::string &key) {
            auto [it, fresh] = given.emplace(key, a.name);
            if (!fresh)
                throw UsageError{a.name + " is given twice" +
                                 (it->second == a.name ? "" : " (also as " + it->second + ")") +
                                 "; give it once"};
        };
        if (a.name == "-h" || a.name == "--help") {
            return std::nullopt;
        } else if (a.name == "--version" && !a.inline_value) {
            opt.show_version = true;
            return opt;
        } else if (a.name == "-np" || a.name == "-n" || a.name == "--np") {
            once("-np");
            opt.np = parse_count(a.name, value_of(a));
            np_given = true;
        } else if (a.name == "-H" || a.name == "--hosts") {
            once("-H");
            opt.hosts = value_of(a);
            if (opt.hosts.empty())
                throw UsageError{a.name + " needs a list like host1:4,host2:4"};
        } else if (a.name == "--hostfile" || a.name == "-hostfile") {
            once("--hostfile");
            opt.hostfile = value_of(a);
            if (opt.hostfile.empty())
                throw UsageError{a.name + " needs the path of a hostfile"};
        } else if (a.name == "-x") {
            opt.exports.push_back(parse_export(a.name, value_of(a)));
        } else if (a.name == "--ssh-port") {
            once(a.name);
            opt.ssh_port = parse_port(a.name, value_of(a));
        } else if (a.name == "--ssh-identity") {
            once(a.name);
            opt.ssh_identity = value_of(a);
            if (opt.ssh_identity.empty())
                throw UsageError{a.name + " needs the path of a private key file"};
        } else if (a.name == "--launcher") {
            once(a.name);
            opt.launcher = parse_launcher(value_of(a));
        } else if (a.name == "--timeout") {
            once(a.name);
            opt.timeout_s = parse_seconds(a.name, value_of(a));
        } else if (a.name == "--grace") {
            once(a.name);
            opt.grace_s = parse_seconds(a.name, value_of(a));
        } else if (a.name == "--elastic" && !a.inline_value) {
            opt.elastic = true;
        } else if (a.name == "--max-restarts") {
            once(a.name);
            opt.max_restarts = parse_count(a.name, value_of(a), true);
            max_restarts_given = true;
        } else if (a.name == "--max-np") {
            once(a.name);
            opt.max_np = parse_count(a.name, value_of(a));
            max_np_given = true;
        } else if (a.name == "--host-discovery-script") {
            once(a.name);
            opt.discovery_script = value_of(a);
            if (opt.discovery_script.empty())
                throw UsageError{a.name + " needs the path of an executable that prints "
                                          "host:slots lines"};
        } else if (a.name == "--min-np") {
            once(a.name);
            opt.min_np = parse_count(a.name, value_of(a));
            min_np_given = true;
        } else if (a.name == "--bind-to") {
            once(a.name);
            opt.bind_to = parse_bind_to(value_of(a));
        } else if (a.name == "--tag-output" && !a.inline_value) {
            opt.tag_output = true;
        } else if (a.name == "--no-tag-output" && !a.inline_value) {
            opt.tag_output = false;
        } else {
            throw UsageError{"unknown option '" + raw +
                             "'; options go before the command (or put the command after --)"};
        }
    }
    opt.command.assign(args.begin() + static_cast<std::ptrdiff_t>(std::min(i, args.size())),
                       args.end());
    if (!opt.hosts.empty() && !opt.hostfile.empty())
        throw UsageError{"-H and --hostfile both give the hosts; use one of them"};
    if (!np_given)
        throw UsageError{"-np is required: the number of ranks to start, e.g. -np 4"};
    if (opt.elastic && opt.launcher == LauncherKind::mpi)
        throw UsageError{"--elastic needs ranks that disttrainrun starts itself (--launcher "
                         "local or ssh): mpirun ends the whole job when a rank dies"};
    if (min_np_given && !opt.elastic)
        throw UsageError{"--min-np is for elastic jobs: add --elastic"};
    if (max_restarts_given && !opt.elastic)
        throw UsageError{"--max-restarts is for elastic jobs: add --elastic"};
    if (opt.min_np > opt.np)
        throw UsageError{"--min-np " + std::to_string(opt.min_np) + " is more than -np " +
                         std::to_string(opt.np)};
    if (max_np_given && !opt.elastic)
        throw UsageError{"--max-np is for elastic jobs: add --elastic"};
    if (!opt.discovery_script.empty() && !opt.elastic)
        throw UsageError{"--host-discovery-script is for elastic jobs: add --elastic"};
    if (!opt.discovery_script.empty() && (!opt.hosts.empty() || !opt.hostfile.empty()))
        throw UsageError{"--host-discovery-script gives the hosts: drop -H and --hostfile"};
    if (!opt.discovery_script.empty() && !max_np_given)
        throw UsageError{"--host-discovery-script needs --max-np B: the most ranks the job "
                         "may grow to"};
    if (max_np_given && opt.max_np < opt.min_np)
        throw UsageError{"--max-np " + std::to_string(opt.max_np) + " is less than --min-np " +
                         std::to_string(opt.min_np)};
    if (max_np_given && opt.np > opt.max_np)
        throw UsageError{"-np " + std::to_string(opt.np) + " is more than --max-np " +
                         std::to_string(opt.max_np) + "; start at most --max-np ranks"};
    if (!max_np_given)
        opt.max_np = opt.np;
    if (opt.command.empty())
        throw UsageError{"no command given: put the program each rank runs after the "
                         "options, e.g. disttrainrun -np 2 ./train"};
    return opt;
}

const char *usage() noexcept
{
    return "usage: disttrainrun -np N [-H host:slots,... | --hostfile FILE]\n"
           "                    [-x VAR[=VALUE]]... [--launcher local|ssh|mpi]\n"
           "                    [--ssh-port PORT] [--ssh-identity FILE]\n"
           "                    [--timeout S] [--grace S] [--tag-output|--no-tag-output]\n"
           "                    [--bind-to core|none|auto] [--elastic [--min-np A]\n"
           "                    [--max-restarts N] [--max-np B]\n"
           "                    [--host-discovery-script S]]\n"
           "                    [--version]\n"
           "                    [--] command [args...]\n"
           "\n"
           "Starts N ranks of command, serves their rendezvous store and prefixes each\n"
           "output line with the rank, e.g. \"[1] loss 0.3\".\n"
           "\n"
           "  -np N, -n N, --np N\n"
           "                   number of ranks (required, at most 1048576)\n"
           "  -H LIST          hosts and slots, e.g. node1:4,node2:4 (default localhost:N);\n"
           "                   ranks fill each host's slots in order\n"
           "  --hostfile FILE  hosts and slots from a file instead of -H (also -hostfile):\n"
           "                   one host a line, as \"node1 slots=4\" (Open MPI) or\n"
           "                   \"node1:4\" (Horovod), a host alone meaning one slot; #\n"
           "                   starts a comment, blank lines are skipped\n"
           "  -x VAR[=VALUE]   give every rank VAR, with our value or VALUE (repeatable);\n"
           "                   local ranks inherit our environment anyway, ranks started\n"
           "                   through ssh get only DISTTRAIN_*, OMP_NUM_THREADS, NCCL_*,\n"
           "                   UCX_* and the -x variables (so -x PYTHONPATH,\n"
           "                   -x LD_LIBRARY_PATH where the remote hosts need ours);\n"
           "                   a VAR unset here is skipped with a warning\n"
           "  --launcher K     local: start every rank here; ssh: start every rank\n"
           "                   through ssh (default: local slots here, others via ssh);\n"
           "                   mpi: mpirun starts the ranks (-np, the hosts and the\n"
           "                   store's address and token passed with mpirun -x)\n"
           "  --ssh-port PORT  port of the remote hosts' sshd (ssh -p)\n"
           "  --ssh-identity FILE\n"
           "                   private key ssh logs in with (ssh -i)\n"
           "  --timeout S      stop the job after S seconds (default 0: no limit)\n"
           "  --grace S        seconds between SIGTERM (with SIGCONT, for stopped ranks)\n"
           "                   and SIGKILL when stopping ranks (default 5)\n"
           "  --no-tag-output  pass rank output through without the [rank] prefix\n"
           "  --bind-to B      core: each local rank gets an equal share of the cores\n"
           "                   disttrainrun may use (an error if there are fewer cores\n"
           "                   than ranks); none: ranks share every CPU; auto (default):\n"
           "                   core when the ranks fit, else none (--launcher mpi:\n"
           "                   core and none go to mpirun, auto is mpirun's default)\n"
           "  --elastic        a rank that dies does not stop the job: the others get\n"
           "                   DT_ERR_PEER_LOST and re-form without it\n"
           "                   (dt_context_reform); ranks get DISTTRAIN_ELASTIC=1\n"
           "  --min-np A       elastic: stop the job when fewer than A ranks run\n"
           "                   (default 1); ranks get DISTTRAIN_MIN_SIZE=A\n"
           "  --max-restarts N elastic: start a replacement for each rank that dies, N\n"
           "                   in all (default 0); it joins when the ranks next call\n"
           "                   dt_context_poll_joiners and re-form\n"
           "  --max-np B       elastic: the most ranks that run at once (default -np);\n"
           "                   replacements start only below it\n"
           "  --host-discovery-script S\n"
           "                   elastic, with --max-np: S prints the hosts that may run\n"
           "                   ranks, one \"host:slots\" a line (as Horovod's); it runs\n"
           "                   before the job (placing the first -np ranks) and every\n"
           "                   second during it (5 s limit a run). Free slots get new\n"
           "                   ranks, up to --max-np running in all, which join at the\n"
           "                   ranks' next dt_context_poll_joiners. A host that drops\n"
           "                   out of the list gets no new ranks, but its running ranks\n"
           "                   are left alone (a host really gone loses them by itself\n"
           "                   and the others re-form). A failed run is reported with\n"
           "                   its stderr and the last list is kept\n"
           "  --version        print the version of disttrainrun and libdisttrain\n"
           "\n"
           "When a rank fails, the others are stopped and the last lines say why: the\n"
           "ranks that exited with an error on their own (the exit status is the first\n"
           "one's), each other rank that died by a signal of its own (a crash), and the\n"
           "ranks disttrainrun itself ended by a signal while stopping the job. When the\n"
           "job ends, what a rank left running in its process group gets SIGTERM, then\n"
           "SIGKILL after the grace period.\n"
           "\n"
           "Input: rank 0 reads disttrainrun's stdin, as with mpirun (a file or pipe; a\n"
           "terminal is not passed on), when it runs here or under --launcher mpi (mpirun\n"
           "forwards it); a rank 0 started through ssh, and every other rank, reads\n"
           "/dev/null.\n"
           "\n"
           "Remote hosts need passwordless ssh (ssh -o BatchMode=yes host true) and the\n"
           "same working directory. DISTTRAIN_STORE_ADDR=host[:port] sets the address\n"
           "ranks use to reach the store.\n";
}

} // namespace dt::launch
