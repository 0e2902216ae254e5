/* SPDX-License-Identifier: Apache-2.0 */
// One checked call of the conformance suite: its buffers (with guard elements behind every
// output, to catch writes past the end), how to launch it and how to verify it.
#pragma once

#include "device_memory.h"

#include <disttrain/disttrain.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace dt::conformance {

// allgatherv and alltoallv (API 1.2) run uneven blocks derived from the count: rank r
// sends count + r % 3 elements to an allgatherv, and rank i count + (i + 2j) % 3 to rank
// j in an alltoallv, so blocks differ between ranks and a count of 0 has empty ones.
enum class Kind { allreduce, broadcast, allgather, reduce_scatter, alltoall, barrier,
                  allgatherv, alltoallv };

const char *kind_name(Kind kind);

// Elements written after each output buffer and checked untouched afterwards.
constexpr size_t kGuard = 8;

struct Mismatch {
    std::string what; // "allreduce float32 sum count=7 in-place async"
    int rank;
    size_t index;     // element index in the output, or the guard element past it
    double got;
    double expected;
};

// Byte images that cases of the same shape share: the prepared buffers of a call that
// runs again (blocking, then asynchronously) and the reference result of every variant
// (in place or not, blocking or not). Computing the reference (every rank's input for
// every element) costs more than the calls themselves; a hit is a copy. Keys come from
// the cases.
class Images {
public:
    const std::vector<unsigned char> *find(const std::string &key) const;
    const std::vector<unsigned char> &add(const std::string &key,
                                          std::vector<unsigned char> bytes);
    void clear() { images_.clear(); }

private:
    std::unordered_map<std::string, std::vector<unsigned char>> images_;
};

class Case {
public:
    // device: null for host buffers; else the call runs on device buffers that mirror
    // the host ones (copied in by prepare, out by verify).
    Case(Kind kind, dt_dtype_t dtype, dt_reduce_op_t op, size_t count, bool inplace,
         int root, bool async, int rank, int ranks,
         const testing::DeviceMemory *device = nullptr);

    // Fills inputs and poisons outputs (or copies both from images, and keeps them there
    // for a case of the same shape and placement with keep_inputs); call before launch.
    void prepare(Images &images, bool keep_inputs = true);
    // Starts the call (async) or runs it (blocking); returns its status.
    dt_status_t launch(dt_context_h ctx);
    dt_request_h request() const { return req_; }
    // Frees the request (if any) and compares the output with the reference (taken from
    // images when a case of the same shape made it); appends up to `limit` mismatches to
    // out and returns how many elements were wrong.
    uint64_t verify(std::vector<Mismatch> &out, size_t limit, Images &images);

    const std::string &description() const { return what_; }
    // Makes verify() flip one element after the call, as a wrong library would: the last
    // output element, or the first guard where the output is empty. Tests the checker.
    void spoil_result() { spoil_ = true; }

    Case(const Case &) = delete;
    Case &operator=(const Case &) = delete;
    Case(Case &&other) noexcept;
    ~Case();

private:
    size_t out_count() const;  // elements of the output buffer
    size_t in_count() const;   // elements of the separate input buffer (0 when in place)
    void *out() { return out_.data(); }
    // The buffers the call gets: the host ones, or their device mirrors.
    void *call_out() { return device_ != nullptr ? dev_out_ : out(); }
    const void *call_in();
    const void *in_ptr();
    void fill(); // computes the prepared buffers (conf_values.h: a buffer at a time)
    // A run of a correct output: n elements from `at` hold reduced(first + k) when
    // `reduced`, else payload(seed, first + k).
    struct Expected {
        size_t at, n;
        bool reduced;
        uint64_t seed;
        size_t first;
    };
    // The runs that make up a correct output, in order; the guards follow them.
    std::vector<Expected> expected_runs() const;
    // Element `index` of the output the runs make (a guard: kPoison).
    double expected(const std::vector<Expected> &runs, size_t index) const;
    // The output a correct call leaves, guards included, encoded in the dtype.
    std::vector<unsigned char> expected_image() const;
    // What the buffers and the result depend on: the shape without the mode (blocking or
    // async), and for the prepared buffers whether the call runs in place.
    std::string shape_key(bool with_placement) const;
    // Uneven kinds: elements rank `from` sends rank `to` (allgatherv: to every rank).
    size_t block(int from, int to) const;
    // Elements before the block of `peer` in this rank's input (send) or output (!send).
    size_t offset(int peer, bool send) const;

    Kind kind_;
    dt_dtype_t dtype_;
    dt_reduce_op_t op_;
    size_t count_;
    bool inplace_;
    int root_;
    bool async_;
    int rank_, ranks_;
    size_t elt_;
    std::string what_;
    std::vector<unsigned char> in_, out_;
    std::vector<size_t> sendcounts_, recvcounts_; // uneven kinds: one per rank
    dt_request_h req_ = nullptr;
    const testing::DeviceMemory *device_ = nullptr;
    void *dev_in_ = nullptr, *dev_out_ = nullptr;
    bool spoil_ = false;
};

} // namespace dt::conformance
