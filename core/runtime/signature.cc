// SPDX-License-Identifier: Apache-2.0
#include "runtime/signature.h"

#include "runtime/error.h"

#include <functional>

namespace dt {

Signature signature_of(const OpDesc &desc, uint32_t group)
{
    Signature s;
    s.kind = desc.kind;
    s.dtype = desc.dtype;
    s.op = kind_reduces(desc.kind) ? desc.op : DT_SUM;
    s.count = kind_counts_agree(desc.kind) ? desc.count : 0;
    s.root = kind_has_root(desc.kind) ? desc.root : 0;
    s.group = group;
    // A barrier moves no buffer, so where buffers live cannot make ranks disagree on it.
    s.memory = desc.kind == OpKind::barrier ? DT_MEMORY_HOST : desc.memory;
    return s;
}

bool kind_reduces(OpKind kind)
{
    return kind == OpKind::allreduce || kind == OpKind::reduce_scatter;
}

bool kind_has_root(OpKind kind) { return kind == OpKind::broadcast; }

bool kind_counts_agree(OpKind kind)
{
    return kind != OpKind::allgatherv && kind != OpKind::alltoallv;
}

std::string rank_list(const std::vector<int> &ranks)
{
    std::string out;
    for (size_t i = 0; i < ranks.size(); ++i)
        out += (i ? ", " : "") + std::to_string(ranks[i]);
    return out;
}

std::string ranks_phrase(const std::vector<int> &ranks)
{
    return (ranks.size() == 1 ? "rank " : "ranks ") + rank_list(ranks);
}

namespace {

struct Field {
    const char *label;
    std::function<std::string(const Signature &)> show;
};

} // namespace

std::string disagreement(const std::vector<std::pair<int, Signature>> &by_rank)
{
    static const Field kFields[] = {
        {"collective", [](const Signature &s) { return std::string(op_kind_name(s.kind)); }},
        {"group", [](const Signature &s) { return std::to_string(s.group); }},
        {"dtype", [](const Signature &s) { return std::string(dt_dtype_name(s.dtype)); }},
        {"element count", [](const Signature &s) { return std::to_string(s.count); }},
        {"reduce op", [](const Signature &s) { return std::string(dt_reduce_op_name(s.op)); }},
        {"root", [](const Signature &s) { return std::to_string(s.root); }},
        {"memory", [](const Signature &s) { return std::string(dt_memory_type_name(s.memory)); }},
    };
    for (const Field &field : kFields) {
        if (by_rank.empty())
            break;
        std::string first = field.show(by_rank.front().second);
        bool differs = false;
        for (const auto &[rank, sig] : by_rank)
            differs = differs || field.show(sig) != first;
        if (!differs)
            continue;
        std::string message = cat("ranks disagree on ", field.label, ":");
        for (size_t i = 0; i < by_rank.size(); ++i)
            message += cat(i ? "," : "", " rank ", by_rank[i].first, " ",
                           field.show(by_rank[i].second));
        return message;
    }
    return {};
}

std::string describe_mismatch(const std::string &name,
                              const std::vector<std::pair<int, Signature>> &by_rank)
{
    std::string detail = disagreement(by_rank);
    if (detail.empty())
        return {};
    return cat(op_kind_name(by_rank.front().second.kind), " '", name, "': ", detail,
               "; every rank must submit the same operation under this name");
}

} // namespace dt
