/* SPDX-License-Identifier: Apache-2.0 */
// One transport instance: this rank's duplicates of MPI_COMM_WORLD (one per tag class and
// one for native collectives) and every MPI request in flight for the core's requests.
// The core calls it from one thread at a time (plugin ABI), so it has no locks.
#pragma once

#include "mpi_host.h"
#include "mpi_tags.h"

#include <disttrain/plugin/transport.h>

#include <mpi.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

namespace dt::mpi {

class Context {
public:
    // Initialises or joins MPI, checks that MPI's rank and size are the ones the core
    // found, and duplicates the communicators. Throws MpiError.
    explicit Context(const dt_transport_init_args_t &args);
    // finalize: fails what is pending with DTP_ERR_ABORTED and frees the communicators.
    ~Context();
    Context(const Context &) = delete;
    Context &operator=(const Context &) = delete;

    const Host &host() const { return host_; }

    int32_t isend(int32_t peer, uint64_t tag, const void *buf, size_t len,
                  dt_transport_request_t *req);
    int32_t irecv(int32_t peer, uint64_t tag, void *buf, size_t len,
                  dt_transport_request_t *req);
    // MPI_Testsome over every request in flight, repeated (yielding the CPU in between)
    // until one completes or timeout_ms passes (0: once; < 0: until one completes).
    int32_t progress(int32_t timeout_ms);
    // The core's abort: cancels what MPI can cancel, fails every pending request with
    // DTP_ERR_ABORTED, and marks this process's MPI as failed (mpi_runtime.h).
    void abort();
    // A clean finalize: gives the sends still in flight up to `limit` to complete (see
    // mpi_context.cc).
    void finish_sends(std::chrono::milliseconds limit);

    // Native collectives (mpi_collectives.cc). Each returns DTP_INPROGRESS (the request
    // completes through progress), or DTP_ERR_UNSUPPORTED when MPI cannot take this call
    // (the core then runs its own algorithm), or throws.
    int32_t allreduce(const void *sendbuf, void *recvbuf, size_t count, int32_t dtype,
                      int32_t op, dt_transport_request_t *req);
    int32_t broadcast(void *buf, size_t count, int32_t dtype, int32_t root,
                      dt_transport_request_t *req);
    int32_t allgather(const void *sendbuf, void *recvbuf, size_t sendcount, int32_t dtype,
                      dt_transport_request_t *req);
    int32_t reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                           int32_t dtype, int32_t op, dt_transport_request_t *req);
    int32_t alltoall(const void *sendbuf, void *recvbuf, size_t count, int32_t dtype,
                     dt_transport_request_t *req);
    int32_t barrier(dt_transport_request_t *req);

private:
    enum class Kind { send, recv, collective };
    // One core request and the MPI requests that carry it. A message longer than the
    // chunk size travels as several MPI messages (MPI counts are ints): the sender posts
    // every chunk at once; the receiver posts one chunk at a time, since it learns where
    // the message ends only from a chunk shorter than the chunk size.
    struct Pending {
        Kind kind;
        dt_transport_request_t *req;
        std::vector<MPI_Request> mpi;
        size_t done_bytes = 0; // bytes received so far, or the send's length
        int32_t error = DTP_OK;
        std::string why;            // the message of error, handed to the core on completion
        const char *what = nullptr; // collectives: the MPI call, for messages
        // Receives only.
        char *buf = nullptr;
        size_t cap = 0;
        TagSpace::Mapped where{};
        int peer = -1;
        bool chunked = false; // cap >= chunk size: posted chunk by chunk
        bool posted = false;  // false: waiting behind a chunked receive (same key)
    };
    using Key = std::tuple<MPI_Comm, int, int>; // communicator, peer, MPI tag

    void check_args(int32_t peer, const void *buf, size_t len,
                    const dt_transport_request_t *req) const;
    int32_t start_collective(MPI_Request r, const char *what, dt_transport_request_t *req,
                             size_t bytes);
    void post_recv_chunk(Pending &p);
    void on_complete(Pending &p, size_t index, const MPI_Status &st);
    bool finished(const Pending &p) const;
    void release_key(const Pending &p);
    int testsome();
    void fail(Pending &p, int32_t status, const std::string &why);
    // Fails what is pending with DTP_ERR_ABORTED, cancelling what MPI can cancel.
    void drop_pending();

    // Registers this instance with the process's MPI for as long as it lives (first
    // member after host_, so a constructor that throws later still releases it).
    struct MpiHold {
        explicit MpiHold(const Host &host);
        ~MpiHold();
        MpiHold(const MpiHold &) = delete;
        MpiHold &operator=(const MpiHold &) = delete;
    };

    Host host_;
    MpiHold hold_;
    int rank_;
    int size_;
    size_t chunk_;
    std::unique_ptr<TagSpace> tags_;
    std::vector<std::unique_ptr<Pending>> pending_;
    // Receives on a key whose chunked receive is in progress, in posting order, so that
    // they cannot match the chunks still to come.
    std::map<Key, std::deque<Pending *>> blocked_;
    bool aborted_ = false;
    // Scratch of testsome, kept to avoid allocating on every progress call.
    std::vector<MPI_Request> reqs_;
    std::vector<std::pair<Pending *, size_t>> owners_;
    std::vector<int> indices_;
    std::vector<MPI_Status> statuses_;
};

} // namespace dt::mpi
