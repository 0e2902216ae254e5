// SPDX-License-Identifier: Apache-2.0
#include "launch/launch_process.h"

#include "runtime/error.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

extern char **environ;

namespace dt::launch {
namespace {

struct Pipe {
    Fd read, write;
};

Pipe make_pipe()
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        throw_error(DT_ERR_INTERNAL, "disttrainrun: pipe failed: ", std::strerror(errno));
    return {Fd(fds[0]), Fd(fds[1])};
}

void set_nonblocking(int fd)
{
    int flags = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

bool is_executable_file(const std::string &path, int &err)
{
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) {
        err = errno;
        return false;
    }
    if (S_ISDIR(st.st_mode)) {
        err = EISDIR;
        return false;
    }
    if (access(path.c_str(), X_OK) != 0) {
        err = errno;
        return false;
    }
    return true;
}

std::vector<char *> c_strings(const std::vector<std::string> &v)
{
    std::vector<char *> out;
    out.reserve(v.size() + 1);
    for (const std::string &s : v)
        out.push_back(const_cast<char *>(s.c_str()));
    out.push_back(nullptr);
    return out;
}

// Runs in the child between fork and exec: only async-signal-safe calls.
[[noreturn]] void exec_child(const SpawnSpec &spec, char *const *argv, char *const *envp,
                             int in_fd, int out_fd, int err_fd, int report_fd,
                             pid_t parent, const cpu_set_t *cpus)
{
    setpgid(0, 0);
    // Before exec, so every thread the rank starts inherits it. The CPUs come from the
    // launcher's own mask, so this cannot fail for want of permission.
    if (cpus != nullptr)
        sched_setaffinity(0, sizeof *cpus, cpus);
    // A launcher killed with SIGKILL cannot stop its ranks; the kernel does it for us.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(127);
    if (dup2(in_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0) {
        int e = errno;
        (void)!write(report_fd, &e, sizeof e);
        _exit(127);
    }
    // The launcher blocks the signals it reads through signalfd and ignores SIGPIPE;
    // the rank must start with neither. Nor with the signals the launcher forwards
    // ignored: a launcher started from a script's background job inherits SIGINT (and
    // SIGQUIT) ignored, an ignored signal stays ignored across exec, and the SIGINT it
    // forwards so that a rank may save its state would then do nothing until the grace
    // period's SIGKILL. Open MPI's launcher resets them in its children too (SIGCHLD the
    // launcher resets for itself, so the ranks inherit the default: launch_signals.cc).
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int s : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT})
        sigaction(s, &dfl, nullptr);
    execve(spec.path.c_str(), argv, envp);
    int e = errno;
    (void)!write(report_fd, &e, sizeof e);
    _exit(127);
}

} // namespace

void Fd::reset(int fd) noexcept
{
    if (fd_ >= 0)
        close(fd_);
    fd_ = fd;
}

std::string SpawnError::message() const
{
    return "cannot run '" + program + "': " + std::strerror(errnum);
}

std::string resolve_executable(const std::string &name)
{
    int err = ENOENT;
    if (name.empty())
        throw SpawnError{name, ENOENT};
    if (name.find('/') != std::string::npos) {
        if (is_executable_file(name, err))
            return name;
        throw SpawnError{name, err};
    }
    const char *path_env = getenv("PATH");
    std::string path = path_env ? path_env : "/usr/local/bin:/usr/bin:/bin";
    int first_err = ENOENT; // a candidate that exists but cannot run beats "not found"
    size_t start = 0;
    while (start <= path.size()) {
        size_t colon = path.find(':', start);
        std::string dir = path.substr(start, colon == std::string::npos ? std::string::npos
                                                                        : colon - start);
        start = colon == std::string::npos ? path.size() + 1 : colon + 1;
        std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
        if (is_executable_file(candidate, err))
            return candidate;
        if (err != ENOENT && err != ENOTDIR && first_err == ENOENT)
            first_err = err;
    }
    throw SpawnError{name, first_err};
}

std::vector<std::string> current_environment(const std::vector<std::string> &drop)
{
    std::vector<std::string> env;
    for (char **e = environ; e && *e; ++e) {
        std::string entry = *e;
        std::string name = entry.substr(0, entry.find('='));
        bool dropped = false;
        for (const std::string &d : drop)
            dropped = dropped || d == name;
        if (!dropped)
            env.push_back(std::move(entry));
    }
    return env;
}

Child spawn(const SpawnSpec &spec)
{
    Pipe out = make_pipe(), err = make_pipe(), report = make_pipe();
    Pipe in;
    if (spec.pipe_stdin) {
        in = make_pipe();
    } else {
        in.read = Fd(open("/dev/null", O_RDONLY | O_CLOEXEC));
        if (!in.read)
            throw_error(DT_ERR_INTERNAL, "disttrainrun: cannot open /dev/null: ",
                        std::strerror(errno));
    }
    std::vector<char *> argv = c_strings(spec.argv);
    std::vector<char *> envp = c_strings(spec.env);
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    for (int cpu : spec.cpus)
        if (cpu >= 0 && cpu < CPU_SETSIZE)
            CPU_SET(cpu, &cpus);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0)
        throw_error(DT_ERR_INTERNAL, "disttrainrun: fork failed: ", std::strerror(errno));
    if (pid == 0)
        exec_child(spec, argv.data(), envp.data(), in.read.get(), out.write.get(),
                   err.write.get(), report.write.get(), parent,
                   spec.cpus.empty() ? nullptr : &cpus);

    // Both sides set the group so that a signal sent right after fork finds it.
    setpgid(pid, pid);
    report.write.reset();
    int child_errno = 0;
    ssize_t n;
    do {
        n = read(report.read.get(), &child_errno, sizeof child_errno);
    } while (n < 0 && errno == EINTR);
    if (n == static_cast<ssize_t>(sizeof child_errno)) {
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        throw SpawnError{spec.argv.empty() ? spec.path : spec.argv[0], child_errno};
    }
    Child c;
    c.pid = pid;
    c.out = std::move(out.read);
    c.err = std::move(err.read);
    set_nonblocking(c.out.get());
    set_nonblocking(c.err.get());
    if (spec.pipe_stdin) {
        c.in = std::move(in.write);
        set_nonblocking(c.in.get());
    }
    return c;
}

} // namespace dt::launch
