// SPDX-License-Identifier: Apache-2.0
#include "launch/launch_limits.h"

#include <sys/resource.h>

#include <cerrno>

namespace dt::launch {
namespace {

// Descriptors the launcher holds for each rank: its stdout and stderr pipes and its
// connection to the store (and a stdin pipe for ranks started through ssh); and those
// open only while a rank starts (the pipes' other ends and the exec report pipe).
constexpr long fds_per_rank = 3;
constexpr long fds_while_starting = 8;

// " (now N, at most M without root)": the current limit on resource, "" when unlimited.
std::string limit_now(int resource)
{
    rlimit lim{};
    if (getrlimit(resource, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY)
        return {};
    std::string text = " (now " + std::to_string(lim.rlim_cur);
    if (lim.rlim_max != RLIM_INFINITY && lim.rlim_max != lim.rlim_cur)
        text += ", at most " + std::to_string(lim.rlim_max) + " without root";
    return text + ")";
}

} // namespace

std::string limit_advice(const SpawnError &e, long fds_at_start, size_t ranks,
                         size_t with_stdin)
{
    if (e.call.empty())
        return {};
    if (e.errnum == EMFILE) {
        const long need = fds_at_start + fds_while_starting +
                          fds_per_rank * long(ranks) + long(with_stdin);
        return "; disttrainrun needs about " + std::to_string(need) + " open files for " +
               std::to_string(ranks) + " rank(s), " + std::to_string(fds_per_rank) +
               " a rank: raise its limit" + limit_now(RLIMIT_NOFILE) + " with ulimit -n " +
               std::to_string(need) + " or more, or start fewer ranks";
    }
    if (e.errnum == ENFILE)
        return "; this machine's limit on open files was reached (sysctl fs.file-max)";
    if (e.errnum == EAGAIN && e.call == "fork")
        return "; the limit on processes was reached: raise it" + limit_now(RLIMIT_NPROC) +
               " with ulimit -u, or start fewer ranks";
    return {};
}

} // namespace dt::launch
