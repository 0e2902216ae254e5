// SPDX-License-Identifier: Apache-2.0
#include "runtime/call_check.h"

#include "runtime/error.h"
#include "runtime/signature.h"

namespace dt {

namespace {

// FNV-1a: names only need to differ in their hash with overwhelming likelihood.
uint32_t name_hash(const std::string &name)
{
    uint32_t h = 2166136261u;
    for (unsigned char c : name)
        h = (h ^ c) * 16777619u;
    return h;
}

uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 29);
}

Signature signature(const CallCheck &c)
{
    Signature s;
    s.kind = static_cast<OpKind>(c.kind);
    s.dtype = static_cast<dt_dtype_t>(c.dtype);
    s.op = static_cast<dt_reduce_op_t>(c.op);
    s.count = c.count;
    s.root = c.root;
    s.group = c.group;
    s.memory = static_cast<dt_memory_type_t>(c.memory);
    return s;
}

const char *kRule = "with DISTTRAIN_ORDERED=1 every rank must call the same collectives "
                    "with the same arguments in the same order (a rank that skips or adds "
                    "a call shifts every later one); set DISTTRAIN_ORDERED=0 to have the "
                    "engine match calls by name instead";

} // namespace

CallCheck call_check_of(const OpDesc &desc, uint64_t call)
{
    CallCheck c;
    c.magic = kCallCheckMagic;
    c.kind = static_cast<uint8_t>(desc.kind);
    c.dtype = static_cast<uint8_t>(desc.dtype);
    c.op = kind_reduces(desc.kind) ? static_cast<uint8_t>(desc.op) : 0;
    c.root = kind_has_root(desc.kind) ? desc.root : 0;
    c.group = desc.group;
    // A barrier moves no buffer, so where buffers live cannot make ranks disagree on it.
    c.memory = static_cast<uint8_t>(desc.kind == OpKind::barrier ? DT_MEMORY_HOST : desc.memory);
    c.count = desc.kind == OpKind::barrier || !kind_counts_agree(desc.kind) ? 0 : desc.count;
    c.name_hash = name_hash(desc.name);
    c.call = static_cast<uint32_t>(call);
    return c;
}

uint64_t call_check_hash(const CallCheck &c)
{
    uint64_t h = mix(c.magic, (uint64_t{c.memory} << 24) | (uint64_t{c.kind} << 16) |
                                  (uint64_t{c.dtype} << 8) | c.op);
    h = mix(h, static_cast<uint32_t>(c.root));
    h = mix(h, c.group);
    h = mix(h, c.count);
    h = mix(h, c.name_hash);
    // Never 0: shared memory's tag line reads 0 as "no check".
    return h != 0 ? h : 1;
}

std::string call_check_mismatch(const std::string &what, int me, const CallCheck &mine,
                                int peer, const CallCheck &theirs)
{
    if (theirs.magic != kCallCheckMagic)
        return cat(what, ": rank ", peer, " sent data where rank ", me, " expected the "
                   "call check of ordered mode (DISTTRAIN_ORDERED=1): the ranks run different "
                   "calls or disagree on DISTTRAIN_ORDERED; ", kRule);
    std::string detail = disagreement({{me, signature(mine)}, {peer, signature(theirs)}});
    if (detail.empty() && theirs.name_hash != mine.name_hash)
        detail = cat("rank ", peer, "'s call has another name");
    if (detail.empty())
        return {};
    return cat(what, " (call ", mine.call, " of group ", mine.group, " in order): ", detail,
               "; ", kRule);
}

std::string call_check_missing(const std::string &what, int me, int peer, size_t bytes)
{
    return cat(what, ": rank ", peer, " sent ", bytes, " bytes where rank ", me,
               " expected at least the ", sizeof(CallCheck), "-byte call check of ordered "
               "mode (DISTTRAIN_ORDERED=1): the ranks run different calls or disagree on "
               "DISTTRAIN_ORDERED; ", kRule);
}

} // namespace dt
