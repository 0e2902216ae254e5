/* SPDX-License-Identifier: Apache-2.0 */
// One argument of a cached primitive: the user's plain layout, the layout (and data type)
// the primitive chose, and the reorder with its scratch memory between them when they
// differ. Convolutions pick blocked layouts and bf16 compute converts the data type, so
// most arguments pass through a slot.
#pragma once

#include "onednn_context.h"

#include <optional>

namespace dtp::onednn {

class Slot {
public:
    Slot() = default;
    // output: data flows from the primitive back to the user's memory.
    Slot(const Instance &in, const dnnl::memory::desc &user, const dnnl::memory::desc &want,
         bool output)
        : user_(user), want_(want)
    {
        if (user == want)
            return;
        tmp_ = dnnl::memory(want, in.engine);
        reorder_ = output ? dnnl::reorder(dnnl::reorder::primitive_desc(in.engine, want,
                                                                        in.engine, user))
                          : dnnl::reorder(dnnl::reorder::primitive_desc(in.engine, user,
                                                                        in.engine, want));
    }

    // The memory to give the primitive for an input at ptr (reordered into scratch).
    dnnl::memory input(Instance &in, const void *ptr) const
    {
        dnnl::memory user(user_, in.engine, const_cast<void *>(ptr));
        if (!reorder_)
            return user;
        reorder_->execute(in.stream, user, tmp_);
        return tmp_;
    }

    // The memory the primitive writes for an output at ptr; call finish() after it ran.
    dnnl::memory output(Instance &in, void *ptr) const
    {
        return reorder_ ? tmp_ : dnnl::memory(user_, in.engine, ptr);
    }

    void finish(Instance &in, void *ptr) const
    {
        if (reorder_) {
            dnnl::memory user(user_, in.engine, ptr);
            reorder_->execute(in.stream, tmp_, user);
        }
    }

private:
    dnnl::memory::desc user_, want_;
    mutable dnnl::memory tmp_; // handles share their buffer; mutable for execute()
    std::optional<dnnl::reorder> reorder_;
};

} // namespace dtp::onednn
