// SPDX-License-Identifier: Apache-2.0
#include "nn/cast.h"

namespace dt::models {

Cast::Cast(const Compute &c, std::string name, dt_dtype_t to) : Layer(c, std::move(name)), to_(to)
{
}

Tensor Cast::forward(const Tensor &x, bool)
{
    from_ = x.desc().dtype;
    if (from_ == to_)
        return x;
    ensure(y_, c_, with_dtype(x.desc(), to_), x.layout());
    check(dt_compute_cast(c_.get(), &x.desc(), x.data(), to_, y_.data()), "cast forward");
    return y_;
}

Tensor Cast::backward(const Tensor &dy, const GradReady &)
{
    if (!input_grad_)
        return {};
    if (dy.desc().dtype == from_)
        return dy;
    ensure(dx_, c_, with_dtype(dy.desc(), from_), dy.layout());
    check(dt_compute_cast(c_.get(), &dy.desc(), dy.data(), from_, dx_.data()),
          "cast backward");
    return dx_;
}

} // namespace dt::models
