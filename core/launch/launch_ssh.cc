// SPDX-License-Identifier: Apache-2.0
#include "launch/launch_ssh.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace dt::launch {
namespace {

// The reachability check gives up on a host that neither answers nor fails in this time
// (ConnectTimeout covers only the TCP connect, not a stuck authentication).
constexpr auto check_limit = std::chrono::seconds(20);

struct Probe {
    std::string host;
    Child child;
    std::string err;
    bool done_reading = false;
};

std::string one_line(std::string s)
{
    for (char &c : s)
        if (c == '\n' || c == '\r')
            c = ' ';
    size_t end = s.find_last_not_of(' ');
    s.erase(end == std::string::npos ? 0 : end + 1);
    size_t start = s.find_first_not_of(' ');
    return start == std::string::npos ? std::string() : s.substr(start);
}

// Reads what the probes print until every one has closed its pipes or time runs out.
void drain(std::vector<Probe> &probes)
{
    auto deadline = std::chrono::steady_clock::now() + check_limit;
    for (;;) {
        std::vector<pollfd> fds;
        std::vector<Probe *> owners;
        for (Probe &p : probes)
            if (!p.done_reading) {
                fds.push_back({p.child.err.get(), POLLIN, 0});
                owners.push_back(&p);
            }
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (fds.empty() || left.count() <= 0)
            return;
        int n = poll(fds.data(), fds.size(), static_cast<int>(left.count()));
        if (n < 0 && errno != EINTR)
            return;
        for (size_t i = 0; i < fds.size(); ++i) {
            if (!fds[i].revents)
                continue;
            char buf[4096];
            ssize_t got = read(fds[i].fd, buf, sizeof buf);
            if (got > 0 && owners[i]->err.size() < 4096)
                owners[i]->err.append(buf, static_cast<size_t>(got));
            else if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR))
                owners[i]->done_reading = true;
        }
    }
}

} // namespace

std::string shell_quote(const std::string &s)
{
    std::string out = "'";
    for (char c : s) {
        if (c == '\'')
            out += "'\\''";
        else
            out += c;
    }
    return out + "'";
}

std::vector<std::string> ssh_options(const SshOptions &ssh)
{
    std::vector<std::string> args = {"-o", "BatchMode=yes"};
    if (ssh.port > 0) {
        args.push_back("-p");
        args.push_back(std::to_string(ssh.port));
    }
    if (!ssh.identity.empty()) {
        args.push_back("-i");
        args.push_back(ssh.identity);
    }
    return args;
}

std::vector<UnreachableHost> check_hosts(const std::string &ssh_path, const SshOptions &ssh,
                                         const std::vector<std::string> &hosts)
{
    std::vector<Probe> probes;
    std::vector<UnreachableHost> failed;
    for (const std::string &host : hosts) {
        SpawnSpec spec;
        spec.path = ssh_path;
        spec.argv = {"ssh"};
        for (std::string &arg : ssh_options(ssh))
            spec.argv.push_back(std::move(arg));
        for (const char *arg : {"-o", "ConnectTimeout=5"})
            spec.argv.push_back(arg);
        spec.argv.push_back(host);
        spec.argv.push_back("true");
        spec.env = current_environment({});
        try {
            probes.push_back({host, spawn(spec), {}, false});
        } catch (const SpawnError &e) {
            failed.push_back({host, e.message()});
        }
    }
    drain(probes);
    for (Probe &p : probes) {
        int status = 0;
        if (!p.done_reading)
            kill(-p.child.pid, SIGKILL);
        while (waitpid(p.child.pid, &status, 0) < 0 && errno == EINTR) {
        }
        if (!p.done_reading) {
            failed.push_back({p.host, "ssh did not finish within 20 s"});
        } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            std::string why = one_line(p.err);
            if (why.empty())
                why = WIFEXITED(status)
                          ? "ssh exited with code " + std::to_string(WEXITSTATUS(status))
                          : std::string("ssh was killed by signal ") +
                                std::to_string(WTERMSIG(status));
            failed.push_back({p.host, why});
        }
    }
    // Report in the order of -H, whatever order the probes ended in.
    std::vector<UnreachableHost> ordered;
    for (const std::string &host : hosts)
        for (const UnreachableHost &u : failed)
            if (u.host == host)
                ordered.push_back(u);
    return ordered;
}

std::string unreachable_message(const UnreachableHost &u, const SshOptions &ssh)
{
    std::string by_hand = "ssh";
    for (const std::string &arg : ssh_options(ssh))
        by_hand += " " + (arg.find_first_of(" '\"\\$") == std::string::npos ? arg
                                                                            : shell_quote(arg));
    return "disttrainrun: cannot reach host '" + u.host + "' over ssh: " + u.reason +
           "; check that passwordless ssh works (" + by_hand + " " + u.host + " true)";
}

SpawnSpec remote_spawn_spec(const std::string &ssh_path, const SshOptions &ssh,
                            const std::string &host,
                            const std::string &cwd,
                            const std::vector<std::pair<std::string, std::string>> &env,
                            const std::vector<std::string> &command)
{
    std::string run = "env";
    for (const auto &[name, value] : env) {
        run += ' ';
        run += shell_quote(name + "=" + value);
    }
    for (const std::string &arg : command) {
        run += ' ';
        run += shell_quote(arg);
    }
    // Runs under the remote login shell as `sh -c SCRIPT`. The rank runs in the
    // background so that a watcher can wait for our end of ssh to go away (stdin EOF,
    // kept on fd 3 because background jobs get /dev/null) and then stop it.
    std::string script =
        "IFS= read -r DISTTRAIN_JOB_TOKEN || exit 255\n"
        "export DISTTRAIN_JOB_TOKEN\n"
        "cd " + shell_quote(cwd) + " || exit 127\n"
        "exec 3<&0\n" +
        run + " </dev/null 3<&- &\n"
        "dt_rank=$!\n"
        "(cat <&3 >/dev/null 2>&1; kill -TERM $dt_rank 2>/dev/null) >/dev/null 2>&1 &\n"
        "exec 3<&- 2>/dev/null\n" // dash would print "Terminated" for a stopped rank
        "wait $dt_rank\n";
    SpawnSpec spec;
    spec.path = ssh_path;
    spec.argv = {"ssh"};
    for (std::string &arg : ssh_options(ssh))
        spec.argv.push_back(std::move(arg));
    spec.argv.push_back(host);
    spec.argv.push_back("sh -c " + shell_quote(script));
    spec.env = current_environment({});
    spec.pipe_stdin = true;
    return spec;
}

} // namespace dt::launch
