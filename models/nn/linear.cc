// SPDX-License-Identifier: Apache-2.0
#include "nn/linear.h"

#include "common/error.h"

#include <cmath>
#include <stdexcept>

namespace dt::models {

namespace {
dt_tensor_desc_t bf16_of(const dt_tensor_desc_t &d)
{
    dt_tensor_desc_t out = d;
    out.dtype = DT_BFLOAT16;
    return out;
}

// dst = src in bfloat16 (dst resized to src's shape).
const Tensor &to_bf16(const Compute &c, const Tensor &src, Tensor &dst)
{
    ensure(dst, c, bf16_of(src.desc()));
    check(dt_compute_cast(c.get(), &src.desc(), src.data(), DT_BFLOAT16, dst.data()),
          "bfloat16 copy");
    return dst;
}
} // namespace

Linear::Linear(const Compute &c, std::string name, int64_t in, int64_t out, Random &rng)
    : Layer(c, std::move(name)), in_(in), out_(out),
      bf16_(c.bf16_active() && c.tensor_memory() == DT_MEMORY_HOST)
{
    w_ = {name_ + ".weight", Tensor(c, desc_f32({out, in})), Tensor(c, desc_f32({out, in}))};
    b_ = {name_ + ".bias", Tensor(c, desc_f32({out})), Tensor(c, desc_f32({out}))};
    const double bound = 1.0 / std::sqrt(double(in));
    init_uniform(c, w_.value, bound, rng);
    init_uniform(c, b_.value, bound, rng);
}

Tensor Linear::forward(const Tensor &x, bool training)
{
    if (x.desc().ndims != 2 || x.dim(1) != in_)
        throw std::invalid_argument(cat(name_, ": expected input (N, ", in_, "), got ",
                                        x.desc().ndims, "-D with ", x.dim(1), " columns"));
    // Its products and dx are float32 (or its own bfloat16 copies of float32 operands).
    if (x.desc().dtype != DT_FLOAT32)
        throw std::invalid_argument(cat(name_, ": expected a float32 input, got ",
                                        dt_dtype_name(x.desc().dtype),
                                        "; cast the features to float32 first (nn/cast.h)"));
    const int64_t n = x.dim(0);
    ensure(y_, c_, desc_f32({n, out_}));
    // y = x W^T: m = N, n = out, k = in.
    if (bf16_) {
        // Backward multiplies these same copies (x for dW, W for dx).
        to_bf16(c_, x, x16_);
        to_bf16(c_, w_.value, w16_);
        check(dt_compute_matmul(c_.get(), DT_BFLOAT16, DT_FLOAT32, 0, 1, n, out_, in_, 1.0f,
                                x16_.data(), w16_.data(), 0.0f, y_.data()),
              "linear forward");
    } else {
        check(dt_compute_matmul(c_.get(), DT_FLOAT32, DT_FLOAT32, 0, 1, n, out_, in_, 1.0f,
                                x.data(), w_.value.data(), 0.0f, y_.data()),
              "linear forward");
    }
    check(dt_compute_bias_add(c_.get(), &y_.desc(), y_.data(), &b_.value.desc(),
                              b_.value.data()),
          "linear bias");
    if (training)
        x_ = x;
    return y_;
}

Tensor Linear::backward(const Tensor &dy, const GradReady &ready)
{
    const int64_t n = dy.dim(0);
    // Operands of both products: float32, or the bfloat16 copies.
    const dt_dtype_t type = bf16_ ? DT_BFLOAT16 : DT_FLOAT32;
    const void *dy_in = bf16_ ? to_bf16(c_, dy, dy16_).data() : dy.data();
    const void *x_in = bf16_ ? x16_.data() : x_.data();
    const void *w_in = bf16_ ? w16_.data() : w_.value.data();
    // dW = dy^T x: (out, N) x (N, in).
    check(dt_compute_matmul(c_.get(), type, DT_FLOAT32, 1, 0, out_, in_, n, 1.0f, dy_in,
                            x_in, 0.0f, w_.grad.data()),
          "linear weight gradient");
    ready(w_);
    check(dt_compute_bias_backward(c_.get(), &dy.desc(), dy.data(), &b_.grad.desc(),
                                   b_.grad.data()),
          "linear bias gradient");
    ready(b_);
    if (!input_grad_)
        return {};
    // dx = dy W: (N, out) x (out, in).
    ensure(dx_, c_, desc_f32({n, in_}));
    check(dt_compute_matmul(c_.get(), type, DT_FLOAT32, 0, 0, n, in_, out_, 1.0f, dy_in, w_in,
                            0.0f, dx_.data()),
          "linear input gradient");
    return dx_;
}

void Linear::parameters(std::vector<Parameter *> &out)
{
    out.push_back(&w_);
    out.push_back(&b_);
}

} // namespace dt::models
