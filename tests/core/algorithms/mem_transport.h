/* SPDX-License-Identifier: Apache-2.0 */
// An in-memory transport for tests: N ranks of one process (one thread each) exchange
// tagged messages through a shared MemFabric, implementing dt_transport_v3_t's
// point-to-point ops. Messages between a pair with the same tag match in order; a send
// with no receive posted yet waits in the receiver's unexpected-message queue (sends
// are eager and always complete). Completions are applied by the owner's progress(),
// on its own thread, as the ABI requires.
//
// Faults for error-path tests: a receive that fails asynchronously, a post that fails at
// once with a plugin message, and abort (the rank leaves; its peers' receives from it
// fail with DTP_ERR_PEER_LOST), and a progress call that fails as a whole.
#pragma once

#include "plugin/transport.h"

#include <disttrain/plugin/transport.h>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace dt::test {

class MemFabric {
public:
    explicit MemFabric(int size);
    MemFabric(const MemFabric &) = delete;
    MemFabric &operator=(const MemFabric &) = delete;

    int size() const { return static_cast<int>(ranks_.size()); }

    // A transport for rank; the fabric must outlive it.
    std::unique_ptr<Transport> make_transport(int rank);

    // The next receive that rank posts from peer `from` fails with status (reported by
    // progress, like a connection that broke while the message was on its way).
    void fail_next_recv(int rank, int from, int32_t status);
    // The next isend/irecv call of rank returns status at once, with message passed to
    // dt::set_last_error as the host's set_error would.
    void fail_next_post(int rank, int32_t status, std::string message);

    // The next progress call of rank fails as a whole, with message.
    void fail_next_progress(int rank, int32_t status, std::string message);

    // From now on, a receive of rank that finds its message already here completes in
    // the irecv call itself, and one whose message does not fit fails there (the call
    // returns DTP_ERR_PROTOCOL, with a message), as the tcp plugin's do.
    void complete_receives_at_post(int rank);

    static const dt_transport_v3_t &ops();

private:
    struct Message {
        int src;
        uint64_t tag;
        std::vector<std::byte> data;
    };
    struct PostedRecv {
        int src;
        uint64_t tag;
        void *buf;
        size_t cap;
        dt_transport_request_t *req;
    };
    struct Completion {
        dt_transport_request_t *req;
        int32_t status;
        int32_t peer;
        size_t bytes;
    };
    struct Injected {
        int from;
        int32_t status;
    };
    struct RankState {
        std::deque<Message> unexpected;
        std::deque<PostedRecv> posted;
        std::vector<Completion> done;
        std::vector<Injected> recv_faults;
        int32_t post_fault = 0;
        std::string post_fault_message;
        int32_t progress_fault = 0;
        std::string progress_fault_message;
        bool complete_at_post = false;
        bool gone = false;
        std::condition_variable cv;
    };
    struct Endpoint {
        MemFabric *fabric;
        int rank;
    };

    static int32_t op_init(const dt_transport_init_args_t *, void **);
    static int32_t op_finalize(void *instance);
    static int32_t op_isend(void *instance, int32_t peer, uint64_t tag, const void *buf,
                            size_t len, dt_transport_request_t *req);
    static int32_t op_irecv(void *instance, int32_t peer, uint64_t tag, void *buf,
                            size_t len, dt_transport_request_t *req);
    static int32_t op_progress(void *instance, int32_t timeout_ms);
    static int32_t op_abort(void *instance);

    int32_t check_post(int rank, int peer);
    void deliver(RankState &to, PostedRecv recv, int src, const void *data, size_t len);
    static int32_t deliver_now(PostedRecv recv, int src, const std::vector<std::byte> &data);
    void leave(int rank);

    std::mutex mutex_;
    std::vector<std::unique_ptr<RankState>> ranks_;
};

} // namespace dt::test
