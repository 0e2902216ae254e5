// SPDX-License-Identifier: Apache-2.0
#include "plugin/transport.h"

#include <utility>

namespace dt {

Transport::Transport(std::string name, std::string path, const dt_transport_v3_t *ops,
                     void *instance, uint32_t plugin_ops_version)
    : name_(std::move(name)), path_(std::move(path)), ops_(ops), instance_(instance),
      plugin_ops_version_(plugin_ops_version)
{
    try {
        caps_ = query_transport_caps(*ops_, instance_, name_, path_);
    } catch (...) {
        // The destructor never runs for a constructor that throws.
        ops_->finalize(instance_);
        throw;
    }
}

Transport::~Transport()
{
    if (!finalized_ && instance_ != nullptr)
        ops_->finalize(instance_);
}

void Transport::finalize()
{
    if (finalized_ || instance_ == nullptr)
        return;
    ops_->finalize(instance_);
    finalized_ = true;
}

void Transport::abort()
{
    if (finalized_ || instance_ == nullptr)
        return;
    if (ops_->abort != nullptr) {
        ops_->abort(instance_);
        return; // finalize still runs on destruction to free the instance
    }
    ops_->finalize(instance_);
    finalized_ = true;
}

} // namespace dt
