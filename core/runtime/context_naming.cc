// SPDX-License-Identifier: Apache-2.0
#include "runtime/context_naming.h"

#include "runtime/error.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <mutex>
#include <set>

namespace dt {

namespace {

constexpr size_t kMaxNameLength = 128;

constexpr const char *kNameThem =
    "unnamed contexts pair up across ranks in the order each rank creates them, which "
    "creating them from several threads at once leaves to chance: give each context created "
    "from several threads at once a name of its own, the same on every rank "
    "(dt_context_params_t.name, with the field_mask bit DT_CONTEXT_PARAM_FIELD_NAME)";

// The numbering is the process's own: it is what makes the same context of every rank
// find the others, so it lives as long as the process, not any context.
struct Registry {
    std::mutex mutex;
    bool creating_unnamed = false;
    bool overlap_refused = false; // while the current unnamed creation went on
    uint64_t next_shared = 0;
    uint64_t next_private = 0;
    std::map<std::string, uint64_t> name_uses; // contexts created with each name
    std::set<std::string> live_names;
};

Registry &registry()
{
    static Registry r;
    return r;
}

} // namespace

std::string check_context_name(const std::string &what, const std::string &value)
{
    bool valid = !value.empty() && value.size() <= kMaxNameLength &&
                 std::all_of(value.begin(), value.end(), [](unsigned char c) {
                     return std::isalnum(c) || c == '.' || c == '_' || c == '-';
                 });
    if (!valid)
        throw_error(DT_ERR_INVALID_CONFIG, what, "='", value, "' is not a context name; use 1 "
                    "to ", kMaxNameLength, " letters, digits, '.', '_' or '-', the same on "
                    "every rank and another for each live context of the job");
    return value;
}

ContextSlot::ContextSlot(const std::string &name, bool shared) : name_(name)
{
    Registry &r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    if (!name_.empty()) {
        if (!r.live_names.insert(name_).second)
            throw_error(DT_ERR_INVALID_CONFIG, "dt_context_params_t.name='", name_,
                        "': a live context of this process already has this name, and the "
                        "ranks of a job would not know which one to pair it with; destroy "
                        "that context first, or give this one another name");
        root_ = cat("named/", name_, "/", r.name_uses[name_]++);
        return;
    }
    if (!shared) {
        root_ = cat("private", r.next_private++);
        return;
    }
    if (r.creating_unnamed) {
        r.overlap_refused = true;
        throw_error(DT_ERR_INVALID_STATE, "dt_context_create: another thread of this process "
                    "is creating an unnamed context at the same time; ", kNameThem);
    }
    r.creating_unnamed = creating_unnamed_ = true;
    root_ = cat("ctx", r.next_shared++);
}

void ContextSlot::created()
{
    if (!creating_unnamed_)
        return;
    Registry &r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    bool overlapped = r.overlap_refused;
    r.creating_unnamed = r.overlap_refused = creating_unnamed_ = false;
    // The other ranks may have created the other thread's context first: this one may
    // have met the wrong context there, and failing both beats a silent wrong pairing.
    if (overlapped)
        throw_error(DT_ERR_INVALID_STATE, "dt_context_create: another thread of this process "
                    "started creating an unnamed context while this one was being created, "
                    "so this one may have met another context on other ranks; ", kNameThem);
}

void ContextSlot::end_creation() noexcept
{
    if (!creating_unnamed_)
        return;
    Registry &r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    r.creating_unnamed = r.overlap_refused = creating_unnamed_ = false;
}

ContextSlot::~ContextSlot()
{
    end_creation();
    if (name_.empty())
        return;
    Registry &r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    r.live_names.erase(name_);
}

} // namespace dt
