/* SPDX-License-Identifier: Apache-2.0 */
// The processes of the peers on this host, watched through pidfds. UCX's shared-memory
// transports never see a peer die: only UCX's keepalive does, once per
// UCX_KEEPALIVE_INTERVAL (20 s by default), and only while something calls progress. The
// kernel marks a pidfd readable the moment its process exits (an unreaped zombie
// included), so progress can poll these beside the worker's event fd and fail a dead
// peer's requests within a millisecond, as a reset TCP connection would.
#pragma once

#include <poll.h>

#include <string>
#include <vector>

namespace dt::ucx {

class Liveness {
public:
    Liveness() = default;
    ~Liveness();
    Liveness(const Liveness &) = delete;
    Liveness &operator=(const Liveness &) = delete;

    // This process as peers should watch it: "<pid namespace dev:inode>/<pid>", or ""
    // when the namespace cannot be read (then nobody watches it; keepalive still does).
    static std::string self();
    // Watches peer's process if `theirs` (its self()) is another process of this pid
    // namespace: a pid means nothing across namespaces, and ranks that are threads of one
    // process (the plugin's own tests) share a pid. Call it only for a peer on this host.
    void watch(int peer, const std::string &theirs);
    // Peers whose process has exited since the last call; each is reported once and no
    // longer watched. Does not block.
    std::vector<int> exited();
    // Descriptors to poll (POLLIN) while sleeping; a readable one means call exited().
    const std::vector<pollfd> &fds() const { return fds_; }

private:
    std::vector<pollfd> fds_;
    std::vector<int> peers_; // peers_[i] is the rank whose pidfd is fds_[i].fd
};

} // namespace dt::ucx
