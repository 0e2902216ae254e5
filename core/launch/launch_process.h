/* SPDX-License-Identifier: Apache-2.0 */
// Starting one child process: fork/exec into its own process group (so a signal reaches
// the rank's whole tree), with stdout/stderr (and optionally stdin) on pipes, and with
// exec failures reported to the parent instead of surfacing as a mysterious exit 127.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace dt::launch {

// An owned file descriptor.
class Fd {
public:
    Fd() = default;
    explicit Fd(int fd) : fd_(fd) {}
    ~Fd() { reset(); }
    Fd(Fd &&o) noexcept : fd_(o.release()) {}
    Fd &operator=(Fd &&o) noexcept
    {
        if (this != &o)
            reset(o.release());
        return *this;
    }
    Fd(const Fd &) = delete;
    Fd &operator=(const Fd &) = delete;

    int get() const noexcept { return fd_; }
    explicit operator bool() const noexcept { return fd_ >= 0; }
    int release() noexcept
    {
        int fd = fd_;
        fd_ = -1;
        return fd;
    }
    void reset(int fd = -1) noexcept;

private:
    int fd_ = -1;
};

// The child could not be started; errnum says why. call is empty when the exec itself
// failed, else what failed before it ("pipe", "fork", "open /dev/null": the launcher ran
// out of processes or descriptors).
struct SpawnError {
    std::string program;
    int errnum = 0;
    std::string call;
    // An exec that failed with ENOENT for a file that exists: what its #! line names
    // ("its #! line names the interpreter '/nonexistent/sh', which ..."), else empty.
    std::string hint;
    // "cannot run 'prog': No such file or directory[; hint]", or for call
    // "cannot start 'prog': pipe failed: Too many open files".
    std::string message() const;
};

// Finds name the way execvp would (a name with '/' is used as is, otherwise each PATH
// entry is tried). Throws SpawnError (ENOENT, EACCES, ...) when it is not executable.
std::string resolve_executable(const std::string &name);

struct SpawnSpec {
    std::string path;               // resolved executable (resolve_executable)
    std::vector<std::string> argv;  // argv[0] included
    std::vector<std::string> env;   // the whole environment, "NAME=value"
    bool pipe_stdin = false;        // false: stdin is /dev/null (or ours, inherit_stdin)
    // Rank 0 of a local job (or mpirun), as mpirun gives rank 0 its stdin: our own stdin,
    // unless that is a terminal: the child runs in a process group of its own, which a
    // read from the terminal would stop (SIGTTIN). /dev/null then, as for the others.
    bool inherit_stdin = false;
    std::vector<int> cpus;          // the child's CPU affinity; empty: inherited
};

struct Child {
    pid_t pid = -1;
    Fd out;  // read end of the child's stdout
    Fd err;  // read end of the child's stderr
    Fd in;   // write end of the child's stdin (pipe_stdin only)
};

// Starts the child in a new process group (pgid == pid) that is killed if this process
// dies. The returned descriptors are close-on-exec and non-blocking. Throws SpawnError
// when the exec fails (the child is reaped) and when a pipe, /dev/null or fork cannot be
// had (with call set; nothing was started then).
Child spawn(const SpawnSpec &spec);

// The current environment as "NAME=value" strings, minus the variables in drop.
std::vector<std::string> current_environment(const std::vector<std::string> &drop);

} // namespace dt::launch
