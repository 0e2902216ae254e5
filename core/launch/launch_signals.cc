// SPDX-License-Identifier: Apache-2.0
#include "launch/launch_signals.h"

#include "runtime/error.h"

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace dt::launch {

SignalReader::SignalReader()
{
    // With SIGCHLD ignored (inherited from whoever started us) the kernel reaps the ranks
    // itself: no SIGCHLD to read, no exit status, and the launcher would wait forever;
    // and the ranks would inherit it, losing their own children's statuses.
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGCHLD, &dfl, nullptr);
    sigset_t set;
    sigemptyset(&set);
    for (int s : {SIGCHLD, SIGINT, SIGTERM})
        sigaddset(&set, s);
    // Under nohup (SIGHUP ignored) a hangup must not stop the job: a blocked signal is
    // queued even when ignored, so reading it would undo what nohup asked for.
    struct sigaction hup {};
    if (sigaction(SIGHUP, nullptr, &hup) != 0 || hup.sa_handler != SIG_IGN)
        sigaddset(&set, SIGHUP);
    if (pthread_sigmask(SIG_BLOCK, &set, &old_mask_) != 0)
        throw_error(DT_ERR_INTERNAL, "disttrainrun: cannot block signals");
    fd_.reset(signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC));
    if (!fd_)
        throw_error(DT_ERR_INTERNAL, "disttrainrun: signalfd failed: ", std::strerror(errno));
    // A reader of our stdout that goes away (| head) must not kill the job.
    signal(SIGPIPE, SIG_IGN);
}

SignalReader::~SignalReader()
{
    pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
}

int SignalReader::next()
{
    signalfd_siginfo info{};
    ssize_t n = read(fd_.get(), &info, sizeof info);
    return n == static_cast<ssize_t>(sizeof info) ? static_cast<int>(info.ssi_signo) : 0;
}

} // namespace dt::launch
