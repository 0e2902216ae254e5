#include "train/distributed.h"

#include "common/error.h"

#include <cstdlib>
#include <stdexcept>

namespace dt::models {
Distributed::Distributed(const Compute &compute)
{
    // The trainer calls every collective in the same order on every rank (same model,
    // same steps per epoch), so it makes the ordered promise: the engine then runs each
    // operation as it comes instead of negotiating every millisecond on the rank's own
    // core. Measured on resnet50, 2 ranks of 1 thread: the engine thread took 7-10% of
    // each core negotiating, 1.5-4.5% ordered. DISTTRAIN_ORDERED=0 negotiates again.
    dt_context_params_t params = {};
    const char *env = std::getenv("DISTTRAIN_ORDERED");
    if (env != nullptr && *env == '\0')
        env = nullptr; // set but empty counts as unset, as everywhere in the library
    if (env == nullptr) {
        params.field_mask = DT_CONTEXT_PARAM_FIELD_ORDERED;
        params.ordered = 1;
    }
    // For the header line only; the library parses the variable (and refuses bad values).
    ordered_ = env == nullptr || std::atoi(env) == 1;
    const char *provider = compute.memory_provider();
    const char *memory_env = std::getenv("DISTTRAIN_MEMORY");
    if (provider != nullptr && (memory_env == nullptr || *memory_env == '\0')) {
        params.field_mask |= DT_CONTEXT_PARAM_FIELD_MEMORY;
        params.memory = provider;
    }
    tensor_params_.field_mask = DT_OP_PARAM_FIELD_MEMORY_TYPE | DT_OP_PARAM_FIELD_STREAM;
    tensor_params_.memory_type = compute.tensor_memory();
    tensor_params_.stream = compute.stream();
    dt_context_h ctx = nullptr;
    check(dt_context_create(&params, &ctx), "dt_context_create");
    ctx_.reset(ctx);
    check(dt_context_rank(ctx, &rank_), "dt_context_rank");
    check(dt_context_size(ctx, &size_), "dt_context_size");
}

std::string Distributed::transport() const
{
    const char *name = nullptr;
    check(dt_context_transport(get(), &name), "dt_context_transport");
    return std::string(name ? name : "?") + (ordered_ ? " (ordered)" : " (negotiated)");
}

void Distributed::broadcast(const std::vector<Tensor> &tensors, const std::string &prefix)
{
    if (size_ == 1)
        return;
    std::vector<Request> reqs;
    for (size_t i = 0; i < tensors.size(); ++i) {
        dt_request_h r = nullptr;
        const std::string name = prefix + std::to_string(i);
        check(dt_broadcast_async_ex(get(), name.c_str(), tensors[i].data(),
                                    tensors[i].numel(), DT_FLOAT32, 0, tensor_params(), &r),
              "dt_broadcast_async");
        reqs.emplace_back(r);
    }
    for (auto &r : reqs)
        check(dt_request_wait(r.get(), -1), "broadcast of the initial state");
}

void Distributed::broadcast_raw(void *data, size_t count, dt_dtype_t dtype, const char *name)
{
    if (size_ > 1)
        check(dt_broadcast(get(), name, data, count, dtype, 0), name);
}

void Distributed::sum(std::vector<double> &values, const char *name)
{
    if (size_ > 1)
        check(dt_allreduce(get(), name, values.data(), values.data(), values.size(),
                           DT_FLOAT64, DT_SUM),
              name);
}

void Distributed::average(const std::vector<Tensor> &tensors, const std::string &prefix)
{
    if (size_ == 1)
        return;
    std::vector<Request> reqs;
    for (size_t i = 0; i < tensors.size(); ++i) {
        dt_request_h r = nullptr;
        const std::string name = prefix + std::to_string(i);
        check(dt_allreduce_async_ex(get(), name.c_str(), tensors[i].data(), tensors[i].data(),
                                    tensors[i].numel(), DT_FLOAT32, DT_AVG, tensor_params(),
                                    &r),
              "dt_allreduce_async");
        reqs.emplace_back(r);
    }
    for (auto &r : reqs)
        check(dt_request_wait(r.get(), -1), "average of the batch-norm statistics");
}

void GradientSync::start(Parameter &p)
{
    if (dist_.size() == 1)
        return;
    dt_request_h r = nullptr;
    // The gradient's name identifies it across ranks, so the engine matches and fuses
    // by name whatever order the ranks produced them in.
    const std::string name = "grad/" + p.name;
    check(dt_allreduce_async_ex(dist_.get(), name.c_str(), p.grad.data(), p.grad.data(),
                                p.grad.numel(), DT_FLOAT32, DT_AVG, dist_.tensor_params(), &r),
          "dt_allreduce_async of a gradient");
    pending_.emplace_back(r);
}

void GradientSync::wait_all()
{
    for (auto &r : pending_)
        check(dt_request_wait(r.get(), -1), "gradient allreduce");
    pending_.clear();
}

} // namespace dt::models
