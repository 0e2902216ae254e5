// SPDX-License-Identifier: Apache-2.0
#include "nn/tensor.h"

#include "common/error.h"

#include <stdexcept>

namespace dt::models {

size_t numel(const dt_tensor_desc_t &d)
{
    size_t n = 1;
    for (int i = 0; i < d.ndims; ++i)
        n *= static_cast<size_t>(d.dims[i]);
    return n;
}

bool same_desc(const dt_tensor_desc_t &a, const dt_tensor_desc_t &b)
{
    if (a.dtype != b.dtype || a.ndims != b.ndims)
        return false;
    for (int i = 0; i < a.ndims; ++i)
        if (a.dims[i] != b.dims[i])
            return false;
    return true;
}

dt_tensor_desc_t desc_f32(std::initializer_list<int64_t> dims)
{
    dt_tensor_desc_t d{};
    d.dtype = DT_FLOAT32;
    for (int64_t v : dims)
        d.dims[d.ndims++] = v;
    return d;
}

Tensor::Tensor(const Compute &compute, const dt_tensor_desc_t &desc) : desc_(desc)
{
    void *p = nullptr;
    check(dt_compute_alloc(compute.get(), std::max<size_t>(bytes(), 1), &p),
          "dt_compute_alloc");
    dt_compute_h h = compute.get();
    mem_ = std::shared_ptr<void>(p, [h](void *q) { dt_compute_free(h, q); });
}

Tensor Tensor::view(const dt_tensor_desc_t &desc) const
{
    if (models::numel(desc) != numel() || desc.dtype != desc_.dtype)
        throw std::logic_error("Tensor::view: the new shape has another element count");
    Tensor t = *this;
    t.desc_ = desc;
    t.layout_ = DT_LAYOUT_NCHW;
    return t;
}

Tensor Tensor::with_layout(dt_tensor_layout_t layout) const
{
    if (layout == DT_LAYOUT_NHWC && desc_.ndims != 4)
        throw std::logic_error("Tensor::with_layout: channels-last needs a 4-D tensor");
    Tensor t = *this;
    t.layout_ = layout;
    return t;
}

Tensor Tensor::slice(size_t offset, const dt_tensor_desc_t &desc) const
{
    const size_t elem = dt_dtype_size(desc_.dtype);
    if (desc.dtype != desc_.dtype || offset + models::numel(desc) > numel())
        throw std::logic_error("Tensor::slice: the window runs past the tensor");
    Tensor t;
    t.desc_ = desc;
    t.mem_ = std::shared_ptr<void>(mem_, static_cast<char *>(mem_.get()) + offset * elem);
    return t;
}

void Tensor::copy_from(const Compute &c, const Tensor &src) const
{
    if (src.bytes() != bytes())
        throw std::logic_error("Tensor::copy_from: the tensors differ in size");
    check(dt_compute_memcpy(c.get(), data(), src.data(), bytes(), DT_COPY_DEVICE_TO_DEVICE),
          "dt_compute_memcpy");
}

void Tensor::fill(const Compute &c, float value) const
{
    check(dt_compute_fill(c.get(), &desc_, data(), value), "dt_compute_fill");
}

void Tensor::copy_from_host(const Compute &c, const void *src) const
{
    check(dt_compute_memcpy(c.get(), data(), src, bytes(), DT_COPY_HOST_TO_DEVICE),
          "dt_compute_memcpy");
}

void Tensor::copy_to_host(const Compute &c, void *dst) const
{
    check(dt_compute_memcpy(c.get(), dst, data(), bytes(), DT_COPY_DEVICE_TO_HOST),
          "dt_compute_memcpy");
}

std::vector<float> Tensor::to_vector(const Compute &c) const
{
    std::vector<float> out(numel());
    copy_to_host(c, out.data());
    return out;
}

Tensor &ensure(Tensor &t, const Compute &compute, const dt_tensor_desc_t &desc,
               dt_tensor_layout_t layout)
{
    if (t.empty() || !same_desc(t.desc(), desc))
        t = Tensor(compute, desc);
    t.layout_ = layout;
    return t;
}

dt_tensor_desc_t with_dtype(dt_tensor_desc_t desc, dt_dtype_t dtype)
{
    desc.dtype = dtype;
    return desc;
}

dt_tensor_desc_t activation_desc(int64_t n, int64_t c, int64_t h, int64_t w,
                                 dt_tensor_layout_t layout, dt_dtype_t dtype)
{
    dt_tensor_desc_t d = layout == DT_LAYOUT_NHWC ? desc_f32({n, h, w, c}) : desc_f32({n, c, h, w});
    d.dtype = dtype;
    return d;
}

} // namespace dt::models
