// SPDX-License-Identifier: Apache-2.0
#include "launch/launch_process.h"

#include "launch/launch_text.h"
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

std::string program_of(const SpawnSpec &spec)
{
    return spec.argv.empty() ? spec.path : spec.argv[0];
}

Pipe make_pipe(const SpawnSpec &spec)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        throw SpawnError{program_of(spec), errno, "pipe", {}};
    return {Fd(fds[0]), Fd(fds[1])};
}

// The exec of path failed with ENOENT although path exists: the kernel could not find
// the interpreter its #! line names. Says which, and why when the line ends in '\r' (the
// script was saved with Windows line endings). For a program, that its dynamic loader is
// missing. Empty when path is neither.
std::string interpreter_hint(const std::string &path)
{
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return {};
    char buf[256];
    ssize_t n;
    do {
        n = read(fd, buf, sizeof buf);
    } while (n < 0 && errno == EINTR);
    close(fd);
    if (n >= 4 && std::memcmp(buf, "\x7f" "ELF", 4) == 0)
        return "the program exists, but not the dynamic loader it names (was it built for "
               "another system?)";
    if (n < 2 || buf[0] != '#' || buf[1] != '!')
        return {};
    std::string line(buf + 2, static_cast<size_t>(n) - 2);
    line = line.substr(0, line.find('\n'));
    // As the kernel reads it: blanks, then the interpreter up to the next blank.
    size_t start = line.find_first_not_of(" \t");
    if (start == std::string::npos)
        return "its #! line names no interpreter";
    std::string interp = line.substr(start, line.find_first_of(" \t", start) - start);
    std::string text = "its #! line names the interpreter '" + visible(interp) + "'";
    if (!line.empty() && line.back() == '\r')
        return text + ": the line ends in a carriage return (\\r), so the script has "
                      "Windows (CRLF) line endings; convert it with dos2unix " + path +
                      " or sed -i 's/\\r$//' " + path;
    struct stat st {};
    if (stat(interp.c_str(), &st) != 0)
        return text + ", which does not exist";
    return text + ", which exists but could not be started (is its own interpreter or "
                  "loader missing?)";
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
    if (!call.empty())
        return "cannot start '" + program + "': " + call + " failed: " + std::strerror(errnum);
    return "cannot run '" + program + "': " + std::strerror(errnum) +
           (hint.empty() ? "" : "; " + hint);
}

std::string resolve_executable(const std::string &name)
{
    int err = ENOENT;
    if (name.empty())
        throw SpawnError{name, ENOENT, {}, {}};
    if (name.find('/') != std::string::npos) {
        if (is_executable_file(name, err))
            return name;
        throw SpawnError{name, err, {}, {}};
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
    throw SpawnError{name, first_err, {}, {}};
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
    Pipe out = make_pipe(spec), err = make_pipe(spec), report = make_pipe(spec);
    Pipe in;
    if (spec.pipe_stdin) {
        in = make_pipe(spec);
    } else if (spec.inherit_stdin && !isatty(0) && fcntl(0, F_GETFD) >= 0) {
        in.read = Fd(fcntl(0, F_DUPFD_CLOEXEC, 3));
        if (!in.read)
            throw SpawnError{program_of(spec), errno, "dup stdin", {}};
    } else {
        in.read = Fd(open("/dev/null", O_RDONLY | O_CLOEXEC));
        if (!in.read)
            throw SpawnError{program_of(spec), errno, "open /dev/null", {}};
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
        throw SpawnError{program_of(spec), errno, "fork", {}};
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
        SpawnError e{program_of(spec), child_errno, {}, {}};
        if (child_errno == ENOENT && access(spec.path.c_str(), F_OK) == 0)
            e.hint = interpreter_hint(spec.path);
        throw e;
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
