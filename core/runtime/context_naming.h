/* SPDX-License-Identifier: Apache-2.0 */
// Which part of the job's store a context keeps its keys in: how the same context of every
// rank finds the others. A named context (dt_context_params_t.name) is found by its name,
// whatever order and thread the ranks create it in. Unnamed contexts pair up by the order
// in which each process creates them, as MPI_Comm_dup and torch's new_group do: the n-th
// unnamed context that meets in the job's store is the same context on every rank. That
// order means nothing while two threads create unnamed contexts at once, so an unnamed
// creation that starts while another one of the same process is under way is refused,
// and the one under way then fails too (the threads name their contexts instead). A
// context with a store of its own (one process alone) has nobody to pair with and is
// numbered apart.
#pragma once

#include <cstdint>
#include <string>

namespace dt {

// dt_context_params_t.name, read from `what`: 1 to 128 letters, digits, '.', '_' or '-',
// since it becomes part of store keys. Throws DT_ERR_INVALID_CONFIG naming `what`, the
// value and what is allowed.
std::string check_context_name(const std::string &what, const std::string &value);

// A context's place among this process's contexts, held for the context's lifetime.
class ContextSlot {
public:
    // name: "" for an unnamed context (else checked by check_context_name). shared: the
    // context meets its peers in the job's store. Throws DT_ERR_INVALID_STATE for an
    // unnamed shared context while another one's creation is under way in this process,
    // and DT_ERR_INVALID_CONFIG for a name that a live context of this process has.
    ContextSlot(const std::string &name, bool shared);
    ~ContextSlot();
    ContextSlot(const ContextSlot &) = delete;
    ContextSlot &operator=(const ContextSlot &) = delete;

    // The context's part of the store: "ctx<n>" for the n-th unnamed shared context,
    // "named/<name>/<n>" for the n-th context of that name this process created (a name
    // may be used again once its context is gone), "private<n>" in a store of its own.
    const std::string &root() const { return root_; }
    // The context is created: another unnamed one may be created from now on. Throws
    // DT_ERR_INVALID_STATE when one was refused meanwhile (the two threads' order decided
    // which context this one met on other ranks), after which it must not be used.
    void created();

private:
    void end_creation() noexcept; // as created(), without the check
    std::string name_;
    bool creating_unnamed_ = false;
    std::string root_;
};

} // namespace dt
