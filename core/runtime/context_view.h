/* SPDX-License-Identifier: Apache-2.0 */
// A context as the user holds it: the whole job, or a group (process set) of its ranks.
// Groups share the job's engine and transport; their operations carry the group's id,
// are negotiated with everything else, and run among the members only.
#pragma once

#include "runtime/context.h"

#include <memory>
#include <vector>

namespace dt {

class ContextView {
public:
    // The whole job.
    explicit ContextView(std::shared_ptr<Context> world);

    // Collective over parent: every rank of parent calls it with the same list of
    // parent ranks. Members get a view, the others null. Throws DT_ERR_INVALID_ARGUMENT
    // for a bad list, DT_ERR_MISMATCH when ranks passed different lists.
    static std::unique_ptr<ContextView> create_group(ContextView &parent, const int *ranks,
                                                     int nranks);

    int rank() const { return rank_; }
    int size() const { return static_cast<int>(members_.size()); }
    int local_rank() const;
    int local_size() const;
    Context &world() { return *world_; }
    uint32_t group() const { return group_; }

    // Queues an operation of this view (sets desc.group).
    std::shared_ptr<Operation> submit(OpDesc desc);

private:
    ContextView(std::shared_ptr<Context> world, uint32_t group, std::vector<int> members,
                int rank);

    std::shared_ptr<Context> world_;
    uint32_t group_ = 0;
    std::vector<int> members_; // world ranks, in group rank order
    int rank_ = 0;
};

} // namespace dt
