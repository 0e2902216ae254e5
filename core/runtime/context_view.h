/* SPDX-License-Identifier: Apache-2.0 */
// A context as the user holds it: the whole job, or a group (process set) of its ranks.
// Groups share the job's engine and transport; their operations carry the group's id,
// are negotiated with everything else, and run among the members only.
#pragma once

#include "runtime/context.h"
#include "runtime/unnamed_calls.h"

#include <atomic>
#include <memory>
#include <vector>

namespace dt {

class ContextView {
public:
    // The whole job.
    explicit ContextView(std::shared_ptr<Context> world);

    // Collective over parent: every rank of parent calls it with the same list of
    // parent ranks. Members get a view, the others null. Throws DT_ERR_INVALID_ARGUMENT
    // for a bad list (or with `refused`, the caller's reason to refuse the call), after
    // taking part in the ranks' agreement so that the others fail at once with
    // DT_ERR_MISMATCH, as they do when ranks passed different lists.
    static std::unique_ptr<ContextView> create_group(ContextView &parent, const int *ranks,
                                                     int nranks,
                                                     const char *refused = nullptr);

    // The whole job's view follows the world through re-forms (Context::reform).
    int rank() const { return group_ == 0 ? world_->rank() : rank_; }
    int size() const { return group_ == 0 ? world_->size() : static_cast<int>(members_.size()); }
    int local_rank() const;
    int local_size() const;
    Context &world() { return *world_; }
    uint32_t group() const { return group_; }

    // Queues an operation of this view (sets desc.group); a group of an earlier epoch
    // (before the job re-formed) refuses with DT_ERR_INVALID_STATE. An unnamed one is named after
    // its kind and a count of this view's unnamed calls (unnamed_calls.h): ranks outside
    // the view make other calls, so a count over the whole job would differ between ranks.
    std::shared_ptr<Operation> submit(OpDesc desc);

private:
    ContextView(std::shared_ptr<Context> world, uint32_t group, std::vector<int> members,
                int rank);

    std::shared_ptr<Context> world_;
    uint32_t group_ = 0;
    int world_rank_of(int rank) const { return group_ == 0 ? rank : members_[rank]; }

    std::vector<int> members_; // groups: world ranks, in group rank order
    int rank_ = 0;             // groups: this rank's place in members_
    uint64_t epoch_ = 0;       // the world's epoch when this view was made
    uint64_t counted_epoch_ = 0; // the epoch groups_created_ counts in
    UnnamedCalls unnamed_;
    std::atomic<uint32_t> groups_created_{0}; // groups created with this view as parent
};

} // namespace dt
