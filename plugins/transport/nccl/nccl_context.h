/* SPDX-License-Identifier: Apache-2.0 */
// One transport instance: the NCCL communicator of this rank, the plugin's own
// non-blocking CUDA stream every collective is queued on, and the collectives in flight.
// The core calls it from one thread at a time (plugin ABI), so it has no locks.
//
// A collective's life: queued (waiting for the communicator: with a non-blocking
// communicator NCCL may still be enqueueing the previous call, ncclInProgress, and no
// other NCCL call may start meanwhile), then enqueueing (NCCL accepted it and answered
// ncclInProgress), then running (an event recorded on the stream after it), then done
// when cudaEventQuery says so. Nothing here waits for the GPU.
#pragma once

#include "nccl_host.h"
#include "nccl_library.h"

#include <disttrain/plugin/transport.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace dt::nccl {

class Context {
public:
    // Loads the libraries, votes through the store on whether every rank can run NCCL,
    // shares rank 0's unique id and creates the communicator, all within
    // args.timeout_ms. Throws NcclError (DTP_ERR_UNSUPPORTED when a rank cannot run
    // NCCL, DTP_ERR_TIMEOUT when the communicator did not come up in time).
    explicit Context(const dt_transport_init_args_t &args);
    // finalize: fails what is pending with DTP_ERR_ABORTED and releases the communicator.
    ~Context();
    Context(const Context &) = delete;
    Context &operator=(const Context &) = delete;

    const Host &host() const { return host_; }

    // Point-to-point is not offered (the query answers p2p_memory 0): DTP_ERR_UNSUPPORTED.
    int32_t isend(int32_t peer, uint64_t tag, const void *buf, size_t len,
                  dt_transport_request_t *req);
    int32_t irecv(int32_t peer, uint64_t tag, void *buf, size_t len,
                  dt_transport_request_t *req);
    // Checks the communicator's asynchronous error, starts queued collectives and
    // completes those whose event has passed; polls for up to timeout_ms (0: once; < 0:
    // no limit) until one completes, and returns at once when nothing is pending.
    // DTP_ERR_TRANSPORT when NCCL failed the communicator.
    int32_t progress(int32_t timeout_ms);
    // Fails every pending request with DTP_ERR_ABORTED and aborts the communicator.
    void abort();
    // A clean finalize: ncclCommFinalize, polled up to `limit`, then ncclCommDestroy.
    void finish(std::chrono::milliseconds limit);

    // Native collectives on device memory (nccl_collectives.cc). Each returns
    // DTP_INPROGRESS (the request completes through progress), or DTP_ERR_UNSUPPORTED
    // for a dtype or operator NCCL lacks, or throws.
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

    // A child communicator of a subset of the ranks (ncclCommSplit; nccl_split.cc): the
    // ranks of `color` with rank `key` of `child_size`, or none for a negative color.
    // DTP_ERR_UNSUPPORTED when the loaded NCCL has no ncclCommSplit. Throws NcclError.
    int32_t split(int32_t color, int32_t key, int32_t child_size, int32_t timeout_ms,
                  void **child);
    // Collectives submitted between the two are held, then launched inside one
    // ncclGroupStart/ncclGroupEnd and complete together.
    int32_t batch_begin();
    int32_t batch_end();
    // Makes the plugin's stream wait on the GPU for event, a CUDA event when runtime is
    // "cuda" (nccl_wait.cc): every collective launched afterwards waits for it.
    // DTP_ERR_UNSUPPORTED for another runtime's events or with DISTTRAIN_NCCL_HOST_WAIT=1.
    int32_t wait_event(const char *runtime, void *event);
    // Runs the next collective called on `stream`, a cudaStream_t of the caller's when
    // runtime is "cuda" (nccl_wait.cc): NCCL launches it there and its completion event
    // is recorded there. A stream of another GPU than the communicator's cannot take
    // NCCL's kernels: the plugin's stream then waits for it instead.
    // DTP_ERR_UNSUPPORTED for another runtime's streams or with DISTTRAIN_NCCL_HOST_WAIT=1.
    int32_t launch_on_stream(const char *runtime, void *stream);

private:
    enum class State { queued, enqueueing, running };
    struct Op {
        dt_transport_request_t *req;
        const char *what; // the NCCL call, for messages
        size_t bytes;
        cudaStream_t stream;  // where it is launched and its completion recorded
        std::function<ncclResult_t(cudaStream_t)> launch;
        State state = State::queued;
        cudaEvent_t event = nullptr;
        unsigned batch = 0;  // 0: alone; else launched with the others of its batch
        bool sealed = true;  // false while its batch is still open (no batch_end yet)
    };

    // Makes the instance's device current on the calling thread for one scope.
    class OnDevice {
    public:
        explicit OnDevice(const Context &c);
        ~OnDevice();

    private:
        const CudaApi &cuda_;
        int previous_ = -1;
    };

    // init, step by step (nccl_init.cc).
    std::string local_verdict(const dt_transport_init_args_t &args);
    std::string gpu_verdict();
    void vote(const std::string &mine);
    ncclUniqueId share_unique_id();
    void create_comm(const ncclUniqueId &id);
    int32_t remaining_ms() const;
    // Reads DISTTRAIN_NCCL_HOST_WAIT into host_wait_; "" or why its value is wrong.
    std::string read_host_wait();
    // DTP_ERR_UNSUPPORTED, with the reason, where the GPU cannot order a collective after
    // the producer's `handles` ("events", "streams") of memory provider `runtime`: not
    // CUDA's, or DISTTRAIN_NCCL_HOST_WAIT=1; else DTP_OK.
    int32_t refuse_device_order(const char *runtime, const char *handles);

    // A child of parent on comm, a communicator of ncclCommSplit (nccl_split.cc).
    Context(Context &parent, ncclComm_t comm, int rank, int size);
    // Polls c (a communicator being created) until NCCL is done or the deadline passes.
    ncclResult_t await_comm(ncclComm_t c, std::chrono::steady_clock::time_point deadline,
                            bool *timed_out);

    // Starts a collective on `stream` (nccl_context.cc).
    int32_t submit(dt_transport_request_t *req, const char *what, size_t bytes,
                   cudaStream_t stream, std::function<ncclResult_t(cudaStream_t)> launch);
    // The stream of the collective being called: the one launch_on_stream named for it,
    // else the plugin's own. Every collective calls it first, so that the choice holds for
    // the next call only, whether that call is then accepted or refused.
    cudaStream_t take_launch_stream();
    // Makes the plugin's stream wait for the work queued so far on `stream` of GPU
    // `device` (not the communicator's), through an event made on that GPU.
    int32_t wait_for_foreign_stream(cudaStream_t stream, int device);
    // Launches queued ops while the communicator is free; finishes an enqueueing one.
    void pump();
    // Launches the sealed batch starting at ops_[first] in one NCCL group; false when
    // the communicator broke or the batch is still enqueueing.
    bool launch_batch(size_t first);
    // Records op's completion event on the stream; false (and the communicator broken)
    // when CUDA refuses.
    bool record(Op &op);
    // Fails every request with why, aborts the communicator and fails every later call.
    void break_comm(const std::string &why);
    // Polls the communicator's asynchronous error; on a failure fails every request.
    bool comm_failed();
    void fail_all(int32_t status, const std::string &why);
    void complete(Op &op, int32_t status, const std::string &why);
    void release_comm(bool abort);
    // Completion events are reused: creating and destroying one per collective cost
    // microseconds of each call's own overhead on an H100.
    cudaError_t take_event(cudaEvent_t *event);
    void give_back_event(cudaEvent_t event, bool reached);

    Host host_;
    Libraries lib_;
    int rank_ = 0;
    int size_ = 1;
    int device_ = -1;
    int32_t timeout_ms_ = 0;
    std::chrono::steady_clock::time_point deadline_;
    ncclComm_t comm_ = nullptr;
    cudaStream_t stream_ = nullptr;
    float *scratch_ = nullptr; // the barrier's one element, in device memory
    bool host_wait_ = false;   // DISTTRAIN_NCCL_HOST_WAIT=1: wait_event refuses
    bool launch_stream_set_ = false; // launch_on_stream named the next call's stream
    cudaStream_t launch_stream_ = nullptr;
    std::deque<std::unique_ptr<Op>> ops_;
    std::vector<cudaEvent_t> spare_events_; // reached, ready to record again
    unsigned batch_ = 0;   // the open batch (batch_begin), or 0
    unsigned batches_ = 0; // batches opened so far, for their numbers
    Context *parent_ = nullptr;       // a child's parent, which outlives it
    std::vector<Context *> children_; // aborted with this one
    // Set once the communicator failed or was aborted: every later call fails with it.
    int32_t broken_ = DTP_OK;
    std::string broken_why_;
};

} // namespace dt::nccl
