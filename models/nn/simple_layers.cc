// SPDX-License-Identifier: Apache-2.0
#include "nn/simple_layers.h"

#include "common/error.h"

#include <stdexcept>

namespace dt::models {

Tensor Relu::forward(const Tensor &x, bool)
{
    ensure(y_, c_, x.desc(), x.layout());
    check(dt_compute_relu_forward(c_.get(), &x.desc(), x.data(), y_.data()), "relu forward");
    return y_;
}

Tensor Relu::backward(const Tensor &dy, const GradReady &)
{
    if (!input_grad_)
        return {};
    ensure(dx_, c_, dy.desc(), dy.layout());
    // The output has the input's sign where it matters, so it stands in for the input.
    check(dt_compute_relu_backward(c_.get(), &dy.desc(), y_.data(), dy.data(), dx_.data()),
          "relu backward");
    return dx_;
}

Tensor Flatten::forward(const Tensor &x, bool)
{
    // Channels-last features flatten in another order than NCHW ones, which would change
    // what the next layer's weights mean; after global pooling (1 x 1) both agree.
    if (x.channels_last() && x.height() * x.width() != 1)
        throw std::invalid_argument(cat(name_, ": cannot flatten channels-last activations of ",
                                        x.height(), "x", x.width(),
                                        " (only 1x1); build the model in NCHW"));
    in_ = x.desc();
    in_layout_ = x.layout();
    return x.view(with_dtype(desc_f32({x.dim(0), int64_t(x.numel() / size_t(x.dim(0)))}),
                             x.desc().dtype));
}

Tensor Flatten::backward(const Tensor &dy, const GradReady &)
{
    return input_grad_ ? dy.view(in_).with_layout(in_layout_) : Tensor{};
}

Pool::Pool(const Compute &c, std::string name, const PoolSpec &spec)
    : Layer(c, std::move(name)), s_(spec)
{
}

dt_pool_params_t Pool::params_for(const Tensor &x) const
{
    dt_pool_params_t p{};
    p.field_mask = DT_POOL_PARAM_FIELD_KIND | DT_POOL_PARAM_FIELD_KERNEL |
                   DT_POOL_PARAM_FIELD_STRIDE | DT_POOL_PARAM_FIELD_PADDING;
    p.kind = s_.kind;
    p.field_mask |= DT_POOL_PARAM_FIELD_LAYOUT;
    p.layout = x.layout();
    p.kernel[0] = s_.global ? int32_t(x.height()) : s_.kernel;
    p.kernel[1] = s_.global ? int32_t(x.width()) : s_.kernel;
    p.stride[0] = s_.global ? p.kernel[0] : s_.stride;
    p.stride[1] = s_.global ? p.kernel[1] : s_.stride;
    p.padding[0] = p.padding[1] = s_.global ? 0 : s_.padding;
    return p;
}

Tensor Pool::forward(const Tensor &x, bool training)
{
    if (x.desc().ndims != 4)
        throw std::invalid_argument(cat(name_, ": pooling needs 4-D (NCHW or NHWC) input"));
    p_ = params_for(x);
    auto out = [&](int64_t in, int i) {
        return (in + 2 * p_.padding[i] - p_.kernel[i]) / p_.stride[i] + 1;
    };
    ensure(y_, c_,
           activation_desc(x.dim(0), x.channels(), out(x.height(), 0), out(x.width(), 1),
                           x.layout(), x.desc().dtype),
           x.layout());
    void *ws = nullptr;
    if (training) {
        size_t bytes = 0;
        check(dt_compute_pool_workspace_size(c_.get(), &p_, &x.desc(), &y_.desc(), &bytes),
              "pool workspace size");
        if (bytes > 0) {
            const auto wd = dt_tensor_desc_1d(DT_UINT8, int64_t(bytes));
            ensure(workspace_, c_, wd);
            ws = workspace_.data();
        }
        x_ = x;
    }
    check(dt_compute_pool_forward(c_.get(), &p_, &x.desc(), x.data(), &y_.desc(), y_.data(),
                                  ws),
          "pool forward");
    return y_;
}

Tensor Pool::backward(const Tensor &dy, const GradReady &)
{
    if (!input_grad_)
        return {};
    ensure(dx_, c_, x_.desc(), x_.layout());
    check(dt_compute_pool_backward(c_.get(), &p_, &x_.desc(), x_.data(), &y_.desc(),
                                   y_.data(), dy.data(), dx_.data(),
                                   workspace_.empty() ? nullptr : workspace_.data()),
          "pool backward");
    return dx_;
}

} // namespace dt::models
