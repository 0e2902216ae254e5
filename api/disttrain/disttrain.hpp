// SPDX-License-Identifier: Apache-2.0
/*
 * libdisttrain C++ API: a header-only layer over the C API in disttrain.h.
 *
 * It adds RAII handles, enum classes, typed collectives and exceptions, and nothing
 * else: every call goes through the exported C functions, so this header adds no symbol
 * to libdisttrain.so and works with any library of the same API major version and a
 * minor version at least this header's (the collectives call the _ex forms of API 1.1).
 * C++17.
 *
 *     disttrain::context ctx;                       // rank and size from the environment
 *     std::vector<float> grad(1024, 1.0f);
 *     ctx.allreduce(grad, disttrain::reduce_op::avg);
 *
 * Errors: every failing call throws disttrain::error, which carries the dt_status_t and
 * the message of dt_last_error() (what was wrong and what to do).
 */
#ifndef DISTTRAIN_DISTTRAIN_HPP
#define DISTTRAIN_DISTTRAIN_HPP

#include "disttrain.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace disttrain {

/* ------------------------------------------------------------------------------------ */
/* Errors                                                                                 */
/* ------------------------------------------------------------------------------------ */

/** A failed libdisttrain call: its status and the library's message. */
class error : public std::runtime_error {
public:
    error(dt_status_t status, const std::string &message)
        : std::runtime_error(message), status_(status) {}
    dt_status_t status() const noexcept { return status_; }

private:
    dt_status_t status_;
};

namespace detail {
/** Throws disttrain::error for an error status; returns the status otherwise. */
inline dt_status_t check(dt_status_t status)
{
    if (status < 0) {
        std::string message = dt_status_string(status);
        const char *detail = dt_last_error();
        if (detail != nullptr && *detail != '\0')
            message = message + ": " + detail;
        throw error(status, message);
    }
    return status;
}
} // namespace detail

/* ------------------------------------------------------------------------------------ */
/* Data types and operators                                                               */
/* ------------------------------------------------------------------------------------ */

enum class dtype : int {
    float32 = DT_FLOAT32,
    float64 = DT_FLOAT64,
    float16 = DT_FLOAT16,
    bfloat16 = DT_BFLOAT16,
    int8 = DT_INT8,
    uint8 = DT_UINT8,
    int32 = DT_INT32,
    int64 = DT_INT64,
};

enum class reduce_op : int {
    sum = DT_SUM,
    avg = DT_AVG,
    min = DT_MIN,
    max = DT_MAX,
    prod = DT_PROD,
};

inline dt_dtype_t to_c(dtype t) { return static_cast<dt_dtype_t>(t); }
inline dt_reduce_op_t to_c(reduce_op op) { return static_cast<dt_reduce_op_t>(op); }

/** Size in bytes of one element (0 for an unknown dtype). */
inline std::size_t size_of(dtype t) { return dt_dtype_size(to_c(t)); }
inline std::string name_of(dtype t) { return dt_dtype_name(to_c(t)); }
inline std::string name_of(reduce_op op) { return dt_reduce_op_name(to_c(op)); }

/** Where a collective's buffers live (dt_memory_type_t). */
enum class memory_type : int {
    host = DT_MEMORY_HOST,
    device = DT_MEMORY_DEVICE,       /**< needs a memory provider; until one is loaded
                                          the call throws (DT_ERR_UNSUPPORTED) */
    automatic = DT_MEMORY_AUTO,      /**< ask the loaded memory providers; host if none */
};

inline dt_memory_type_t to_c(memory_type m) { return static_cast<dt_memory_type_t>(m); }
inline std::string name_of(memory_type m) { return dt_memory_type_name(to_c(m)); }

/**
 * Per-call parameters of a collective (dt_op_params_t), the optional last argument of
 * every collective below. The default is host memory, what the C forms without _ex mean.
 *
 *     ctx.allreduce(dev_ptr, dev_ptr, n, dtype::float32, reduce_op::sum, "g",
 *                   disttrain::op_params::on_device(0, stream));
 */
struct op_params {
    memory_type memory = memory_type::host;
    std::optional<int> device; /**< device ordinal; empty: the memory provider's choice */
    void *stream = nullptr;    /**< the producer's stream (a cudaStream_t); null: default */

    static op_params on_device(int device, void *stream = nullptr)
    {
        op_params p;
        p.memory = memory_type::device;
        p.device = device;
        p.stream = stream;
        return p;
    }

    /** The C struct, with field_mask bits for what is set. */
    dt_op_params_t c() const
    {
        dt_op_params_t p{};
        p.field_mask = DT_OP_PARAM_FIELD_MEMORY_TYPE;
        p.memory_type = to_c(memory);
        if (device) {
            p.field_mask |= DT_OP_PARAM_FIELD_DEVICE;
            p.device = *device;
        }
        if (stream != nullptr) {
            p.field_mask |= DT_OP_PARAM_FIELD_STREAM;
            p.stream = stream;
        }
        return p;
    }
};

/** dtype_of<T>::value: the dtype of a C++ element type. */
template <typename T>
struct dtype_of; // undefined: an element type libdisttrain does not know
template <> struct dtype_of<float> { static constexpr dtype value = dtype::float32; };
template <> struct dtype_of<double> { static constexpr dtype value = dtype::float64; };
template <> struct dtype_of<std::int8_t> { static constexpr dtype value = dtype::int8; };
template <> struct dtype_of<std::uint8_t> { static constexpr dtype value = dtype::uint8; };
template <> struct dtype_of<std::int32_t> { static constexpr dtype value = dtype::int32; };
template <> struct dtype_of<std::int64_t> { static constexpr dtype value = dtype::int64; };

template <typename T>
inline constexpr dtype dtype_v = dtype_of<std::remove_cv_t<T>>::value;

/* ------------------------------------------------------------------------------------ */
/* Version                                                                                */
/* ------------------------------------------------------------------------------------ */

/** Version of the loaded library. */
inline dt_version_t version()
{
    dt_version_t v{};
    detail::check(dt_get_version(&v));
    return v;
}

/* ------------------------------------------------------------------------------------ */
/* Requests                                                                               */
/* ------------------------------------------------------------------------------------ */

class context;

/**
 * An asynchronous operation in flight. Move-only. Destroying an unfinished request waits
 * for it (dt_request_free), so buffers are never written after the request is gone. It
 * keeps its context alive, since a context may not be destroyed before its requests.
 */
class request {
public:
    request() = default;
    request(request &&) noexcept = default;
    request &operator=(request &&other) noexcept
    {
        req_.reset(); // free ours while its context is still alive
        ctx_ = std::move(other.ctx_);
        req_ = std::move(other.req_);
        return *this;
    }
    ~request() { req_.reset(); }

    /** True once the operation has completed; throws disttrain::error if it failed. */
    bool test()
    {
        int done = 0;
        detail::check(dt_request_test(get(), &done));
        return done != 0;
    }

    /**
     * Waits up to timeout_ms milliseconds (negative: no limit but the context's
     * DISTTRAIN_TIMEOUT). Returns true when the operation completed, false when
     * timeout_ms >= 0 passed first (the request stays valid); throws disttrain::error
     * when the operation failed.
     */
    bool wait(int timeout_ms = -1)
    {
        dt_status_t status = dt_request_wait(get(), timeout_ms);
        if (status == DT_ERR_TIMEOUT && timeout_ms >= 0) {
            // The wait's own deadline, or the operation failing with a time-out?
            int done = 0;
            detail::check(dt_request_test(get(), &done));
            if (done == 0)
                return false;
        }
        detail::check(status);
        return true;
    }

    /** True while the request holds an operation. */
    explicit operator bool() const noexcept { return req_ != nullptr; }
    dt_request_h c_handle() const noexcept { return req_.get(); }

private:
    friend class context;
    struct deleter {
        void operator()(dt_request_h req) const noexcept { dt_request_free(req); }
    };

    request(std::shared_ptr<dt_context> ctx, dt_request_h req)
        : ctx_(std::move(ctx)), req_(req) {}

    dt_request_h get() const
    {
        if (req_ == nullptr)
            throw error(DT_ERR_INVALID_STATE, "disttrain::request is empty (default "
                                              "constructed or moved from)");
        return req_.get();
    }

    // Declared first so it is destroyed last: the request is freed before the context.
    std::shared_ptr<dt_context> ctx_;
    std::unique_ptr<dt_request, deleter> req_;
};

/* ------------------------------------------------------------------------------------ */
/* Context                                                                                */
/* ------------------------------------------------------------------------------------ */

namespace detail {
// Element type of a contiguous container with data() and size() (std::vector,
// std::array). Built-in arrays are left to the pointer-and-count overloads, which would
// otherwise be ambiguous with these for calls like broadcast(array, 4, 0).
template <typename C>
using element_t = std::remove_pointer_t<decltype(std::declval<C &>().data())>;
} // namespace detail

/**
 * A member of a job. Copies share one dt_context_h, destroyed (dt_context_destroy) with
 * the last copy and the last request made from it. Creation is collective: every rank
 * constructs its context. Thread safe like the C API.
 */
class context {
public:
    /** Rank, size, store and transport from the DISTTRAIN_* environment (or mpirun,
     *  Slurm). Blocks until every rank has connected. */
    context() : context(nullptr) {}

    /** From explicit params; fields whose field_mask bit is clear come from the
     *  environment. */
    explicit context(const dt_context_params_t &params) : context(&params) {}

    int rank() const { return get_int(dt_context_rank); }
    int size() const { return get_int(dt_context_size); }
    int local_rank() const { return get_int(dt_context_local_rank); }
    int local_size() const { return get_int(dt_context_local_size); }

    /** Name of the transport plugin in use ("tcp"). */
    std::string transport() const
    {
        const char *name = nullptr;
        detail::check(dt_context_transport(ctx_.get(), &name));
        return name != nullptr ? name : "";
    }

    /** Makes every pending and later operation fail with DT_ERR_ABORTED. */
    void abort() { detail::check(dt_context_abort(ctx_.get())); }

    dt_context_h c_handle() const noexcept { return ctx_.get(); }

    /* -- Collectives. Each takes an optional op_params last (default: host memory) --- */

    /* -- allreduce: typed pointers, containers (in place), untyped ------------------ */

    template <typename T>
    void allreduce(const T *send, T *recv, std::size_t count, reduce_op op = reduce_op::sum,
                   const char *name = nullptr, const op_params &params = {})
    {
        allreduce(send, recv, count, dtype_v<T>, op, name, params);
    }
    template <typename T>
    void allreduce(T *buf, std::size_t count, reduce_op op = reduce_op::sum,
                   const char *name = nullptr, const op_params &params = {})
    {
        allreduce(buf, buf, count, dtype_v<T>, op, name, params);
    }
    template <typename C, typename T = detail::element_t<C>>
    void allreduce(C &buf, reduce_op op = reduce_op::sum, const char *name = nullptr,
                   const op_params &params = {})
    {
        allreduce(buf.data(), buf.data(), buf.size(), dtype_v<T>, op, name, params);
    }
    void allreduce(const void *send, void *recv, std::size_t count, dtype t, reduce_op op,
                   const char *name = nullptr, const op_params &params = {})
    {
        const dt_op_params_t p = params.c();
        detail::check(dt_allreduce_ex(ctx_.get(), name, send, recv, count, to_c(t), to_c(op),
                                      &p));
    }

    template <typename T>
    request allreduce_async(const T *send, T *recv, std::size_t count,
                            reduce_op op = reduce_op::sum, const char *name = nullptr,
                            const op_params &params = {})
    {
        return allreduce_async(send, recv, count, dtype_v<T>, op, name, params);
    }
    template <typename C, typename T = detail::element_t<C>>
    request allreduce_async(C &buf, reduce_op op = reduce_op::sum,
                            const char *name = nullptr, const op_params &params = {})
    {
        return allreduce_async(buf.data(), buf.data(), buf.size(), dtype_v<T>, op, name,
                               params);
    }
    request allreduce_async(const void *send, void *recv, std::size_t count, dtype t,
                            reduce_op op, const char *name = nullptr,
                            const op_params &params = {})
    {
        const dt_op_params_t p = params.c();
        return start([&](dt_request_h *req) {
            return dt_allreduce_async_ex(ctx_.get(), name, send, recv, count, to_c(t),
                                         to_c(op), &p, req);
        });
    }

    /* -- broadcast ------------------------------------------------------------------ */

    template <typename T>
    void broadcast(T *buf, std::size_t count, int root, const char *name = nullptr,
                   const op_params &params = {})
    {
        broadcast(static_cast<void *>(buf), count, dtype_v<T>, root, name, params);
    }
    template <typename C, typename T = detail::element_t<C>>
    void broadcast(C &buf, int root, const char *name = nullptr, const op_params &params = {})
    {
        broadcast(buf.data(), buf.size(), root, name, params);
    }
    void broadcast(void *buf, std::size_t count, dtype t, int root, const char *name = nullptr,
                   const op_params &params = {})
    {
        const dt_op_params_t p = params.c();
        detail::check(dt_broadcast_ex(ctx_.get(), name, buf, count, to_c(t), root, &p));
    }
    template <typename T>
    request broadcast_async(T *buf, std::size_t count, int root, const char *name = nullptr,
                            const op_params &params = {})
    {
        const dt_op_params_t p = params.c();
        return start([&](dt_request_h *req) {
            return dt_broadcast_async_ex(ctx_.get(), name, buf, count, to_c(dtype_v<T>),
                                         root, &p, req);
        });
    }

    /* -- allgather: recv holds size() * sendcount elements -------------------------- */

    template <typename T>
    void allgather(const T *send, T *recv, std::size_t sendcount, const char *name = nullptr,
                   const op_params &params = {})
    {
        const dt_op_params_t p = params.c();
        detail::check(dt_allgather_ex(ctx_.get(), name, send, recv, sendcount,
                                      to_c(dtype_v<T>), &p));
    }
    template <typename T>
    request allgather_async(const T *send, T *recv, std::size_t sendcount,
                            const char *name = nullptr, const op_params &params = {})
    {
        const dt_op_params_t p = params.c();
        return start([&](dt_request_h *req) {
            return dt_allgather_async_ex(ctx_.get(), name, send, recv, sendcount,
                                         to_c(dtype_v<T>), &p, req);
        });
    }

    /* -- reduce_scatter: send holds size() * recvcount elements --------------------- */

    template <typename T>
    void reduce_scatter(const T *send, T *recv, std::size_t recvcount,
                        reduce_op op = reduce_op::sum, const char *name = nullptr,
                        const op_params &params = {})
    {
        const dt_op_params_t p = params.c();
        detail::check(dt_reduce_scatter_ex(ctx_.get(), name, send, recv, recvcount,
                                           to_c(dtype_v<T>), to_c(op), &p));
    }
    template <typename T>
    request reduce_scatter_async(const T *send, T *recv, std::size_t recvcount,
                                 reduce_op op = reduce_op::sum, const char *name = nullptr,
                                 const op_params &params = {})
    {
        const dt_op_params_t p = params.c();
        return start([&](dt_request_h *req) {
            return dt_reduce_scatter_async_ex(ctx_.get(), name, send, recv, recvcount,
                                              to_c(dtype_v<T>), to_c(op), &p, req);
        });
    }

    /* -- alltoall: send and recv hold size() * count elements each ------------------ */

    template <typename T>
    void alltoall(const T *send, T *recv, std::size_t count, const char *name = nullptr,
                  const op_params &params = {})
    {
        const dt_op_params_t p = params.c();
        detail::check(dt_alltoall_ex(ctx_.get(), name, send, recv, count, to_c(dtype_v<T>),
                                     &p));
    }
    template <typename T>
    request alltoall_async(const T *send, T *recv, std::size_t count,
                           const char *name = nullptr, const op_params &params = {})
    {
        const dt_op_params_t p = params.c();
        return start([&](dt_request_h *req) {
            return dt_alltoall_async_ex(ctx_.get(), name, send, recv, count,
                                        to_c(dtype_v<T>), &p, req);
        });
    }

    /* -- allgatherv: rank r's recvcounts[r] elements, packed in rank order (API 1.2) -- */
    /* recvcounts: one count per rank, the same on every rank, recvcounts[rank()] ==    */
    /* sendcount. The library copies the counts during the call.                        */

    template <typename T>
    void allgatherv(const T *send, T *recv, std::size_t sendcount,
                    const std::vector<std::size_t> &recvcounts, const char *name = nullptr,
                    const op_params &params = {})
    {
        const dt_op_params_t p = params.c();
        detail::check(dt_allgatherv_ex(ctx_.get(), name, send, recv, sendcount,
                                       counts(recvcounts), to_c(dtype_v<T>), &p));
    }
    template <typename T>
    request allgatherv_async(const T *send, T *recv, std::size_t sendcount,
                             const std::vector<std::size_t> &recvcounts,
                             const char *name = nullptr, const op_params &params = {})
    {
        const dt_op_params_t p = params.c();
        return start([&](dt_request_h *req) {
            return dt_allgatherv_async_ex(ctx_.get(), name, send, recv, sendcount,
                                          counts(recvcounts), to_c(dtype_v<T>), &p, req);
        });
    }

    /**
     * Uneven allgather with the sizes negotiated, as Python's allgather and Horovod's:
     * every rank passes only its own elements; an allgather of the counts comes first,
     * then allgatherv. Returns every rank's elements packed in rank order, and writes
     * the counts per rank to *counts when given. Host memory.
     */
    template <typename T>
    std::vector<T> allgather_uneven(const std::vector<T> &send,
                                    std::vector<std::size_t> *counts = nullptr,
                                    const char *name = nullptr)
    {
        const std::string sizes_name = name != nullptr ? std::string(name) + ".sizes" : "";
        const int64_t mine = static_cast<int64_t>(send.size());
        std::vector<int64_t> sizes(static_cast<std::size_t>(size()));
        allgather(&mine, sizes.data(), 1, name != nullptr ? sizes_name.c_str() : nullptr);
        std::vector<std::size_t> recvcounts(sizes.begin(), sizes.end());
        std::size_t total = 0;
        for (std::size_t c : recvcounts)
            total += c;
        std::vector<T> out(total);
        allgatherv(send.data(), out.data(), send.size(), recvcounts, name);
        if (counts != nullptr)
            *counts = std::move(recvcounts);
        return out;
    }

    /* -- alltoallv: sendcounts[j] elements to rank j, recvcounts[i] from rank i ------ */

    template <typename T>
    void alltoallv(const T *send, const std::vector<std::size_t> &sendcounts, T *recv,
                   const std::vector<std::size_t> &recvcounts, const char *name = nullptr,
                   const op_params &params = {})
    {
        const dt_op_params_t p = params.c();
        detail::check(dt_alltoallv_ex(ctx_.get(), name, send, recv, counts(sendcounts),
                                      counts(recvcounts), to_c(dtype_v<T>), &p));
    }
    template <typename T>
    request alltoallv_async(const T *send, const std::vector<std::size_t> &sendcounts,
                            T *recv, const std::vector<std::size_t> &recvcounts,
                            const char *name = nullptr, const op_params &params = {})
    {
        const dt_op_params_t p = params.c();
        return start([&](dt_request_h *req) {
            return dt_alltoallv_async_ex(ctx_.get(), name, send, recv, counts(sendcounts),
                                         counts(recvcounts), to_c(dtype_v<T>), &p, req);
        });
    }

    /* -- process sets and join ------------------------------------------------------ */

    /**
     * A group (process set) of some ranks of this context (dt_group_create). Collective
     * over this context: every rank calls it with the same ranks, in the same order
     * relative to other groups. Members get the group's context (its rank is the
     * position in ranks), other ranks an empty optional. The group keeps this context
     * alive, as the C API requires.
     */
    std::optional<context> group(const std::vector<int> &ranks) const
    {
        dt_context_h raw = nullptr;
        detail::check(dt_group_create(ctx_.get(), ranks.data(),
                                      static_cast<int>(ranks.size()), &raw));
        if (raw == nullptr)
            return std::nullopt;
        std::shared_ptr<dt_context> parent = ctx_;
        return context(adopt_t{}, std::shared_ptr<dt_context>(raw, [parent](dt_context_h c) {
                           dt_context_destroy(c);
                       }));
    }

    /**
     * For uneven inputs (dt_join): this rank has no more data. Blocks until every rank
     * has joined, meanwhile contributing to the others' allreduces. Returns the rank that
     * joined last.
     */
    int join()
    {
        int last = -1;
        detail::check(dt_join(ctx_.get(), &last));
        return last;
    }

    /**
     * Elastic jobs (dt_context_reform): after a collective threw error with
     * DT_ERR_PEER_LOST, or when poll_joiners() is above 0, re-forms the job; rank() and
     * size() then give the new values. Groups made before are gone.
     */
    void reform() { detail::check(dt_context_reform(ctx_.get())); }

    /**
     * Elastic jobs (dt_context_poll_joiners): collective; rank 0's count of new ranks
     * waiting to join, on every rank. Above 0: every rank calls reform() to let them in.
     */
    int poll_joiners()
    {
        int waiting = 0;
        detail::check(dt_context_poll_joiners(ctx_.get(), &waiting));
        return waiting;
    }

    /* -- barrier: moves no buffer; params are checked only -------------------------- */

    void barrier(const char *name = nullptr, const op_params &params = {})
    {
        const dt_op_params_t p = params.c();
        detail::check(dt_barrier_ex(ctx_.get(), name, &p));
    }
    request barrier_async(const char *name = nullptr, const op_params &params = {})
    {
        const dt_op_params_t p = params.c();
        return start([&](dt_request_h *req) {
            return dt_barrier_async_ex(ctx_.get(), name, &p, req);
        });
    }

private:
    explicit context(const dt_context_params_t *params)
    {
        dt_context_h raw = nullptr;
        detail::check(dt_context_create(params, &raw));
        ctx_ = std::shared_ptr<dt_context>(raw, [](dt_context_h c) { dt_context_destroy(c); });
    }

    // A group's context (group()): a handle made by the C API, owned from now on.
    struct adopt_t {};
    context(adopt_t, std::shared_ptr<dt_context> handle) : ctx_(std::move(handle)) {}

    // One count per rank of this context, or an error before the C API reads past it.
    const std::size_t *counts(const std::vector<std::size_t> &c) const
    {
        if (c.size() != static_cast<std::size_t>(size()))
            throw error(DT_ERR_INVALID_ARGUMENT,
                        "disttrain: " + std::to_string(c.size()) + " counts for " +
                            std::to_string(size()) + " ranks; pass one count per rank");
        return c.data();
    }

    int get_int(dt_status_t (*getter)(dt_context_h, int *)) const
    {
        int value = 0;
        detail::check(getter(ctx_.get(), &value));
        return value;
    }

    template <typename Start>
    request start(Start &&start_fn)
    {
        dt_request_h req = nullptr;
        detail::check(start_fn(&req));
        return request(ctx_, req);
    }

    std::shared_ptr<dt_context> ctx_;
};

} // namespace disttrain

#endif /* DISTTRAIN_DISTTRAIN_HPP */
