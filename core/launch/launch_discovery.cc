// SPDX-License-Identifier: Apache-2.0
#include "launch/launch_discovery.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace dt::launch {
namespace {

// What one run may print: a list of hosts, not a log.
constexpr size_t output_limit = 1 << 20;

std::string one_line(std::string text)
{
    while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
        text.pop_back();
    std::replace(text.begin(), text.end(), '\n', ' ');
    if (text.size() > 500)
        text = text.substr(0, 500) + "...";
    return text;
}

std::string seconds_text(std::chrono::steady_clock::duration d)
{
    double s = std::chrono::duration<double>(d).count();
    std::string text = std::to_string(s);
    text.erase(text.find_last_not_of('0') + 1);
    if (text.back() == '.')
        text.pop_back();
    return text;
}

} // namespace

std::vector<HostSlots> parse_discovery_output(const std::string &text)
{
    if (text.find_first_not_of(" \t\r\n") == std::string::npos)
        return {};
    return parse_hostfile_text(text, "the output of --host-discovery-script");
}

HostDiscovery::HostDiscovery(std::string script, Clock::duration interval,
                             Clock::duration limit)
    : script_(std::move(script)), interval_(interval), limit_(limit),
      next_run_(Clock::now() + interval)
{
}

HostDiscovery::~HostDiscovery() { stop(); }

void HostDiscovery::start()
{
    SpawnSpec spec;
    spec.path = script_;
    spec.argv = {script_};
    spec.env = current_environment({});
    Child c = spawn(spec); // SpawnError: step() reports it as a failed run
    pid_ = c.pid;
    out_ = std::move(c.out);
    err_ = std::move(c.err);
    out_text_.clear();
    err_text_.clear();
    killed_ = false;
    started_ = Clock::now();
}

void HostDiscovery::add_fds(std::vector<pollfd> &fds) const
{
    for (const Fd *fd : {&out_, &err_})
        if (*fd)
            fds.push_back({fd->get(), POLLIN, 0});
}

void HostDiscovery::read(Fd &fd, std::string &into, const std::vector<pollfd> *fds)
{
    if (!fd)
        return;
    if (fds) {
        bool ready = false;
        for (const pollfd &p : *fds)
            ready = ready || (p.fd == fd.get() && p.revents != 0);
        if (!ready)
            return;
    }
    char buf[4096];
    for (;;) {
        ssize_t n = ::read(fd.get(), buf, sizeof buf);
        if (n > 0) {
            if (into.size() < output_limit)
                into.append(buf, static_cast<size_t>(n));
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        fd.reset(); // end of file, or an error: nothing more will come
        return;
    }
}

std::optional<DiscoveryResult> HostDiscovery::finish(int status)
{
    pid_ = -1;
    out_.reset();
    err_.reset();
    next_run_ = Clock::now() + interval_;
    DiscoveryResult r;
    std::string said = one_line(err_text_);
    std::string tail = said.empty() ? "" : ": " + said;
    if (killed_) {
        r.error = "took more than " + seconds_text(limit_) + " s and was killed" + tail;
    } else if (WIFSIGNALED(status)) {
        r.error = "was killed by signal " + std::to_string(WTERMSIG(status)) + tail;
    } else if (WEXITSTATUS(status) != 0) {
        r.error = "exited with code " + std::to_string(WEXITSTATUS(status)) + tail;
    } else {
        try {
            r.hosts = parse_discovery_output(out_text_);
            r.ok = true;
        } catch (const UsageError &e) {
            r.error = "printed something else than host:slots lines: " + e.message;
        }
    }
    if (!r.ok)
        r.error = "--host-discovery-script " + script_ + " " + r.error;
    return r;
}

std::optional<DiscoveryResult> HostDiscovery::step(const std::vector<pollfd> &fds)
{
    if (pid_ < 0) {
        if (stopped_ || Clock::now() < next_run_)
            return std::nullopt;
        try {
            start();
        } catch (const SpawnError &e) {
            // Out of processes or descriptors: a failed run, tried again at the next.
            next_run_ = Clock::now() + interval_;
            DiscoveryResult r;
            r.error = "--host-discovery-script " + script_ + ": " + e.message();
            return r;
        }
        return std::nullopt;
    }
    read(out_, out_text_, &fds);
    read(err_, err_text_, &fds);
    if (!killed_ && Clock::now() - started_ >= limit_) {
        killed_ = true;
        kill(-pid_, SIGKILL); // its whole process group: a shell's children too
    }
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) != pid_)
        return std::nullopt;
    // Exited: what is still in the pipes comes now (a child of the script that keeps
    // them open must not hold up the launcher).
    read(out_, out_text_, nullptr);
    read(err_, err_text_, nullptr);
    kill(-pid_, SIGKILL);
    return finish(status);
}

HostDiscovery::Clock::time_point HostDiscovery::next_wakeup() const
{
    if (pid_ >= 0)
        return killed_ ? Clock::now() + std::chrono::milliseconds(10) : started_ + limit_;
    return stopped_ ? Clock::time_point::max() : next_run_;
}

void HostDiscovery::stop()
{
    stopped_ = true;
    if (pid_ < 0)
        return;
    kill(-pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
    out_.reset();
    err_.reset();
}

DiscoveryResult HostDiscovery::run_now()
{
    next_run_ = Clock::now();
    for (;;) {
        std::vector<pollfd> fds;
        add_fds(fds);
        auto wake = next_wakeup();
        auto ms = std::chrono::ceil<std::chrono::milliseconds>(wake - Clock::now()).count();
        // A script that closed its pipes is reaped by polling: wake up now and then.
        int timeout = pid_ < 0 ? 0 : static_cast<int>(std::clamp<int64_t>(ms, 0, 20));
        poll(fds.data(), fds.size(), timeout);
        if (auto r = step(fds))
            return *r;
    }
}

} // namespace dt::launch
