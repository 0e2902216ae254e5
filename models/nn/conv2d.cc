// SPDX-License-Identifier: Apache-2.0
#include "nn/conv2d.h"

#include "common/error.h"

#include <cmath>
#include <stdexcept>

namespace dt::models {

Conv2d::Conv2d(const Compute &c, std::string name, const ConvSpec &spec, Random &rng,
               ConvInit init)
    : Layer(c, std::move(name)), s_(spec)
{
    p_.field_mask = DT_CONV_PARAM_FIELD_STRIDE | DT_CONV_PARAM_FIELD_PADDING;
    p_.stride[0] = p_.stride[1] = spec.stride;
    p_.padding[0] = p_.padding[1] = spec.padding;
    const auto wd = desc_f32({spec.out, spec.in, spec.kernel, spec.kernel});
    w_ = {name_ + ".weight", Tensor(c, wd), Tensor(c, wd)};
    const double fan_in = double(spec.in) * spec.kernel * spec.kernel;
    if (init == ConvInit::he_fan_out)
        init_normal(c, w_.value, std::sqrt(2.0 / (double(spec.out) * spec.kernel * spec.kernel)),
                    rng);
    else
        init_uniform(c, w_.value, 1.0 / std::sqrt(fan_in), rng);
    if (spec.bias) {
        b_ = {name_ + ".bias", Tensor(c, desc_f32({spec.out})), Tensor(c, desc_f32({spec.out}))};
        init_uniform(c, b_.value, 1.0 / std::sqrt(fan_in), rng);
    }
}

Tensor Conv2d::forward(const Tensor &x, bool training)
{
    if (x.desc().ndims != 4 || x.channels() != s_.in)
        throw std::invalid_argument(cat(name_, ": expected input (N, ", s_.in,
                                        ", H, W), got ", x.desc().ndims, "-D with ",
                                        x.desc().ndims == 4 ? x.channels() : x.dim(1),
                                        " channels"));
    auto out_size = [&](int64_t in) {
        return (in + 2 * s_.padding - s_.kernel) / s_.stride + 1;
    };
    // The output keeps the input's layout: channels-last nets stay so end to end.
    p_.field_mask |= DT_CONV_PARAM_FIELD_LAYOUT;
    p_.layout = x.layout();
    ensure(y_, c_,
           activation_desc(x.dim(0), s_.out, out_size(x.height()), out_size(x.width()),
                           x.layout(), x.desc().dtype),
           x.layout());
    check(dt_compute_conv_forward(c_.get(), &p_, &x.desc(), x.data(), &w_.value.desc(),
                                  w_.value.data(), s_.bias ? &b_.value.desc() : nullptr,
                                  s_.bias ? b_.value.data() : nullptr, &y_.desc(),
                                  y_.data()),
          "conv forward");
    if (training)
        x_ = x;
    return y_;
}

Tensor Conv2d::backward(const Tensor &dy, const GradReady &ready)
{
    check(dt_compute_conv_backward_weights(c_.get(), &p_, &x_.desc(), x_.data(), &dy.desc(),
                                           dy.data(), &w_.grad.desc(), w_.grad.data(),
                                           s_.bias ? &b_.grad.desc() : nullptr,
                                           s_.bias ? b_.grad.data() : nullptr),
          "conv weight gradient");
    ready(w_);
    if (s_.bias)
        ready(b_);
    if (!input_grad_)
        return {};
    ensure(dx_, c_, x_.desc(), x_.layout());
    check(dt_compute_conv_backward_data(c_.get(), &p_, &w_.value.desc(), w_.value.data(),
                                        &dy.desc(), dy.data(), &dx_.desc(), dx_.data()),
          "conv input gradient");
    return dx_;
}

void Conv2d::parameters(std::vector<Parameter *> &out)
{
    out.push_back(&w_);
    if (s_.bias)
        out.push_back(&b_);
}

} // namespace dt::models
