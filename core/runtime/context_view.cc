// SPDX-License-Identifier: Apache-2.0
#include "runtime/context_view.h"

#include "runtime/error.h"
#include "runtime/signature.h"

#include <algorithm>
#include <set>

namespace dt {

namespace {

// FNV-1a over the group id and its members: equal on every rank that got the same list.
uint64_t fingerprint(uint32_t id, const std::vector<int> &members)
{
    uint64_t h = 1469598103934665603ull;
    auto mix = [&](uint64_t v) {
        for (int i = 0; i < 8; ++i) {
            h ^= (v >> (8 * i)) & 0xff;
            h *= 1099511628211ull;
        }
    };
    mix(id);
    mix(members.size());
    for (int m : members)
        mix(static_cast<uint64_t>(m));
    return h;
}

// A group's id names it on the wire, so every member must compute the same one. A count
// over the whole job would not do: ranks outside a parent do not see its creations. The
// id is therefore the parent's id mixed with the parent's own count of creations, which
// every rank of the parent shares. Never 0 (the whole job).
uint32_t derive_group_id(uint32_t parent, uint32_t nth_child)
{
    uint64_t h = 1469598103934665603ull;
    for (uint64_t v : {uint64_t{parent}, uint64_t{nth_child}})
        for (int i = 0; i < 4; ++i) {
            h ^= (v >> (8 * i)) & 0xff;
            h *= 1099511628211ull;
        }
    uint32_t id = static_cast<uint32_t>(h ^ (h >> 32));
    return id == 0 ? 1 : id;
}

void wait_ok(const std::shared_ptr<Operation> &op)
{
    op->wait(std::chrono::milliseconds(-1));
    if (op->status() != DT_OK)
        throw Error(op->status(), op->message());
}

} // namespace

ContextView::ContextView(std::shared_ptr<Context> world)
    : world_(std::move(world)), epoch_(world_->epoch()), counted_epoch_(epoch_)
{
}

ContextView::ContextView(std::shared_ptr<Context> world, uint32_t group,
                         std::vector<int> members, int rank)
    : world_(std::move(world)), group_(group), members_(std::move(members)), rank_(rank),
      epoch_(world_->epoch()), counted_epoch_(epoch_)
{
}

int ContextView::local_rank() const
{
    return group_ == 0 ? world_->local_rank() : rank_;
}

int ContextView::local_size() const
{
    return group_ == 0 ? world_->local_size() : size();
}

std::shared_ptr<Operation> ContextView::submit(OpDesc desc)
{
    if (group_ != 0 && epoch_ != world_->epoch())
        throw_error(DT_ERR_INVALID_STATE, "this group belongs to the job as it was before it "
                    "re-formed; create the groups again after dt_context_reform");
    if (desc.name.empty())
        desc.name = unnamed_.name(desc.kind);
    desc.group = group_;
    return world_->submit(std::move(desc));
}

std::unique_ptr<ContextView> ContextView::create_group(ContextView &parent, const int *ranks,
                                                       int nranks, const char *refused)
{
    // A list this rank refuses still takes part in the agreement below (with a
    // fingerprint no other rank has), and fails after it: the other ranks of the parent
    // are already waiting in theirs, and would otherwise wait until the time-out, then
    // blame this rank for not calling.
    std::string invalid;
    std::vector<int> members;
    std::set<int> seen;
    if (refused != nullptr)
        invalid = refused;
    else if (ranks == nullptr)
        invalid = "dt_group_create: ranks must not be NULL";
    else if (nranks < 1 || nranks > parent.size())
        invalid = cat("dt_group_create: nranks is ", nranks, "; a group has 1 to ",
                      parent.size(), " ranks of its parent");
    for (int i = 0; invalid.empty() && i < nranks; ++i) {
        int r = ranks[i];
        if (r < 0 || r >= parent.size())
            invalid = cat("dt_group_create: ranks[", i, "] is ", r,
                          ", not a rank of the parent (0 to ", parent.size() - 1, ")");
        else if (!seen.insert(r).second)
            invalid = cat("dt_group_create: rank ", r, " is listed twice");
        else
            members.push_back(parent.world_rank_of(r));
    }
    if (!invalid.empty())
        members.clear();

    // Every rank of the parent registers the group before it agrees on it, so no rank
    // can see an operation of the group before its own engine knows the members.
    Context &world = parent.world();
    // A re-formed job counts its groups afresh, as ranks that joined it do.
    if (parent.counted_epoch_ != world.epoch()) {
        parent.counted_epoch_ = world.epoch();
        parent.groups_created_ = 0;
    }
    uint32_t id = derive_group_id(parent.group_, parent.groups_created_++);
    bool registered = invalid.empty() && world.register_group(id, members);

    // A rank whose id is taken still takes part in the check, with a fingerprint no
    // other rank has, so that every rank fails rather than some waiting for it.
    uint64_t mine = fingerprint(id, members) ^ (registered ? 0 : ~0ull);
    std::vector<uint64_t> all(parent.size());
    OpDesc check;
    check.kind = OpKind::allgather;
    check.name = cat("dt_group_create.", id);
    check.sendbuf = &mine;
    check.recvbuf = all.data();
    check.count = 1;
    check.dtype = DT_INT64;
    check.new_group = std::make_shared<const OpDesc::NewGroup>(OpDesc::NewGroup{id, members});
    if (!invalid.empty()) {
        // This rank's own error is the one to report, whatever the check met.
        try {
            wait_ok(parent.submit(check));
        } catch (const Error &) {
        }
        throw_error(DT_ERR_INVALID_ARGUMENT, invalid);
    }
    wait_ok(parent.submit(check));
    if (!registered)
        throw_error(DT_ERR_INTERNAL, "dt_group_create: group id ", id, " is already taken "
                    "by another group on rank ", world.rank(), "; create the groups in "
                    "another order");
    std::vector<int> differ;
    for (int r = 0; r < parent.size(); ++r)
        if (all[r] != all[0])
            differ.push_back(r);
    if (!differ.empty())
        throw_error(DT_ERR_MISMATCH, "dt_group_create: ", ranks_phrase(differ),
                    " of the parent passed a different list of ranks than rank 0 (or one "
                    "that its rank refused: see its error); every rank of the parent must "
                    "pass the same valid list in the same order");

    auto it = std::find(members.begin(), members.end(), world.rank());
    if (it == members.end())
        return nullptr;
    int rank = static_cast<int>(it - members.begin());
    return std::unique_ptr<ContextView>(
        new ContextView(parent.world_, id, std::move(members), rank));
}

} // namespace dt
