// SPDX-License-Identifier: Apache-2.0
#include "nn/batchnorm.h"

#include "common/error.h"

#include <stdexcept>

namespace dt::models {

namespace {

// What the compute API normalises per channel (dimension 1): the tensor itself, or for
// channels-last activations the (N * H * W, C) view of the same memory.
dt_tensor_desc_t stats_desc(const Tensor &x)
{
    if (!x.channels_last())
        return x.desc();
    return with_dtype(desc_f32({x.dim(0) * x.dim(1) * x.dim(2), x.dim(3)}), x.desc().dtype);
}

} // namespace

BatchNorm::BatchNorm(const Compute &c, std::string name, int64_t channels, float init_scale,
                     bool relu)
    : Layer(c, std::move(name)), channels_(channels), relu_(relu)
{
    const auto d = desc_f32({channels});
    scale_ = {name_ + ".weight", Tensor(c, d), Tensor(c, d)};
    shift_ = {name_ + ".bias", Tensor(c, d), Tensor(c, d)};
    running_mean_ = {name_ + ".running_mean", Tensor(c, d)};
    running_var_ = {name_ + ".running_var", Tensor(c, d)};
    save_mean_ = Tensor(c, d);
    save_invstd_ = Tensor(c, d);
    scale_.value.fill(c, init_scale);
    shift_.value.fill(c, 0.0f);
    running_mean_.value.fill(c, 0.0f);
    running_var_.value.fill(c, 1.0f);
}

Tensor BatchNorm::forward(const Tensor &x, bool training)
{
    return run_forward(x, nullptr, training);
}

Tensor BatchNorm::forward_add_relu(const Tensor &x, const Tensor &z, bool training)
{
    if (relu_)
        throw std::logic_error(name_ + " has its own ReLU: it cannot end a residual block");
    if (!same_desc(z.desc(), x.desc()) || z.layout() != x.layout())
        throw std::invalid_argument(cat(name_, ": the shortcut's shape, layout or dtype "
                                               "differs from the batch norm's input"));
    return run_forward(x, &z, training);
}

Tensor BatchNorm::run_forward(const Tensor &x, const Tensor *z, bool training)
{
    const bool four = x.desc().ndims == 4;
    if ((x.desc().ndims != 2 && !four) || (four ? x.channels() : x.dim(1)) != channels_)
        throw std::invalid_argument(cat(name_, ": expected ", channels_, " channels, got ",
                                        four ? x.channels() : x.dim(1)));
    ensure(y_, c_, x.desc(), x.layout());
    const dt_tensor_desc_t d = stats_desc(x);
    if (training) {
        if (z != nullptr)
            check(dt_compute_batchnorm_add_relu_forward_training(
                      c_.get(), &d, x.data(), z->data(), scale_.value.f32(),
                      shift_.value.f32(), kEpsilon, kMomentum, y_.data(), save_mean_.f32(),
                      save_invstd_.f32(), running_mean_.value.f32(), running_var_.value.f32()),
                  "batchnorm+add+relu forward");
        else
            check((relu_ ? dt_compute_batchnorm_relu_forward_training
                         : dt_compute_batchnorm_forward_training)(
                      c_.get(), &d, x.data(), scale_.value.f32(), shift_.value.f32(), kEpsilon,
                      kMomentum, y_.data(), save_mean_.f32(), save_invstd_.f32(),
                      running_mean_.value.f32(), running_var_.value.f32()),
                  relu_ ? "batchnorm+relu forward" : "batchnorm forward");
        x_ = x;
    } else if (z != nullptr) {
        check(dt_compute_batchnorm_add_relu_forward_inference(
                  c_.get(), &d, x.data(), z->data(), scale_.value.f32(), shift_.value.f32(),
                  running_mean_.value.f32(), running_var_.value.f32(), kEpsilon, y_.data()),
              "batchnorm+add+relu inference");
    } else {
        check((relu_ ? dt_compute_batchnorm_relu_forward_inference
                     : dt_compute_batchnorm_forward_inference)(
                  c_.get(), &d, x.data(), scale_.value.f32(), shift_.value.f32(),
                  running_mean_.value.f32(), running_var_.value.f32(), kEpsilon, y_.data()),
              relu_ ? "batchnorm+relu inference" : "batchnorm inference");
    }
    return y_;
}

Tensor BatchNorm::backward(const Tensor &dy, const GradReady &ready)
{
    ensure(dx_, c_, x_.desc(), x_.layout());
    const dt_tensor_desc_t d = stats_desc(x_);
    if (relu_)
        // y_ is still this step's output: the next layer reads it and does not write it.
        check(dt_compute_batchnorm_relu_backward(c_.get(), &d, x_.data(), y_.data(), dy.data(),
                                                 scale_.value.f32(), save_mean_.f32(),
                                                 save_invstd_.f32(), kEpsilon, dx_.data(),
                                                 scale_.grad.f32(), shift_.grad.f32()),
              "batchnorm+relu backward");
    else
        check(dt_compute_batchnorm_backward(c_.get(), &d, x_.data(), dy.data(),
                                            scale_.value.f32(), save_mean_.f32(),
                                            save_invstd_.f32(), kEpsilon, dx_.data(),
                                            scale_.grad.f32(), shift_.grad.f32()),
              "batchnorm backward");
    ready(scale_);
    ready(shift_);
    return input_grad_ ? dx_ : Tensor{};
}

void BatchNorm::parameters(std::vector<Parameter *> &out)
{
    out.push_back(&scale_);
    out.push_back(&shift_);
}

void BatchNorm::buffers(std::vector<Buffer *> &out)
{
    out.push_back(&running_mean_);
    out.push_back(&running_var_);
}

} // namespace dt::models
