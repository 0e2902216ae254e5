#include "launch/launch_options.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

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

int parse_count(const std::string &option, const std::string &value)
{
    // strtol accepts leading blanks, '+' and trailing junk; a rank count must be digits.
    bool digits = !value.empty() && value.size() <= 9 &&
                  value.find_first_not_of("0123456789") == std::string::npos;
    int n = digits ? std::atoi(value.c_str()) : 0;
    if (n <= 0)
        throw UsageError{option + " needs a positive number of ranks, got '" + value + "'"};
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

} // namespace

std::optional<Options> parse_options(const std::vector<std::string> &args)
{
    Options opt;
    bool np_given = false;
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
        if (a.name == "-h" || a.name == "--help") {
            return std::nullopt;
        } else if (a.name == "-np" || a.name == "-n" || a.name == "--np") {
            opt.np = parse_count(a.name, value_of(a));
            np_given = true;
        } else if (a.name == "-H" || a.name == "--hosts") {
            opt.hosts = value_of(a);
            if (opt.hosts.empty())
                throw UsageError{a.name + " needs a list like host1:4,host2:4"};
        } else if (a.name == "--launcher") {
            opt.launcher = parse_launcher(value_of(a));
        } else if (a.name == "--timeout") {
            opt.timeout_s = parse_seconds(a.name, value_of(a));
        } else if (a.name == "--grace") {
            opt.grace_s = parse_seconds(a.name, value_of(a));
        } else if (a.name == "--bind-to") {
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
    if (!np_given)
        throw UsageError{"-np is required: the number of ranks to start, e.g. -np 4"};
    if (opt.command.empty())
        throw UsageError{"no command given: put the program each rank runs after the "
                         "options, e.g. disttrainrun -np 2 ./train"};
    return opt;
}

const char *usage() noexcept
{
    return "usage: disttrainrun -np N [-H host:slots,...] [--launcher local|ssh|mpi]\n"
           "                    [--timeout S] [--grace S] [--tag-output|--no-tag-output]\n"
           "                    [--bind-to core|none|auto]\n"
           "                    [--] command [args...]\n"
           "\n"
           "Starts N ranks of command, serves their rendezvous store and prefixes each\n"
           "output line with the rank, e.g. \"[1] loss 0.3\".\n"
           "\n"
           "  -np N            number of ranks (required)\n"
           "  -H LIST          hosts and slots, e.g. node1:4,node2:4 (default localhost:N);\n"
           "                   ranks fill each host's slots in order\n"
           "  --launcher K     local: start every rank here; ssh: start every rank\n"
           "                   through ssh (default: local slots here, others via ssh);\n"
           "                   mpi: mpirun starts the ranks (-np, -H and the store's\n"
           "                   address and token passed with mpirun -x)\n"
           "  --timeout S      stop the job after S seconds (default 0: no limit)\n"
           "  --grace S        seconds between SIGTERM (with SIGCONT, for stopped ranks)\n"
           "                   and SIGKILL when stopping ranks (default 5)\n"
           "  --no-tag-output  pass rank output through without the [rank] prefix\n"
           "  --bind-to B      core: each local rank gets an equal share of the cores\n"
           "                   disttrainrun may use (an error if there are fewer cores\n"
           "                   than ranks); none: ranks share every CPU; auto (default):\n"
           "                   core when the ranks fit, else none\n"
           "\n"
           "When a rank fails, the others are stopped and the last lines say why: the\n"
           "first failure, each other rank that died by a signal of its own (a crash),\n"
           "and the ranks disttrainrun itself ended by a signal while stopping the job.\n"
           "\n"
           "Remote hosts need passwordless ssh (ssh -o BatchMode=yes host true) and the\n"
           "same working directory. DISTTRAIN_STORE_ADDR=host[:port] sets the address\n"
           "ranks use to reach the store.\n";
}

} // namespace dt::launch
