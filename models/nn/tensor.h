/* SPDX-License-Identifier: Apache-2.0 */
// A tensor: a descriptor (shape, dtype) and a reference to memory of the compute
// context. Copies share memory, like a view; view() reinterprets the shape (Flatten).
// A 4-D activation also carries its layout: NCHW (desc (N, C, H, W)) or channels-last
// NHWC (desc (N, H, W, C)); channels(), height() and width() read either.
// The Compute object must outlive every tensor made on it.
#pragma once

#include "nn/compute.h"

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

namespace dt::models {

size_t numel(const dt_tensor_desc_t &d);
bool same_desc(const dt_tensor_desc_t &a, const dt_tensor_desc_t &b);
dt_tensor_desc_t desc_f32(std::initializer_list<int64_t> dims);

class Tensor {
public:
    Tensor() = default;
    Tensor(const Compute &compute, const dt_tensor_desc_t &desc); // uninitialised

    const dt_tensor_desc_t &desc() const { return desc_; }
    int64_t dim(int i) const { return desc_.dims[i]; }
    dt_tensor_layout_t layout() const { return layout_; }
    bool channels_last() const { return layout_ == DT_LAYOUT_NHWC; }
    int64_t channels() const { return desc_.dims[channels_last() ? 3 : 1]; }
    int64_t height() const { return desc_.dims[channels_last() ? 1 : 2]; }
    int64_t width() const { return desc_.dims[channels_last() ? 2 : 3]; }
    // The same tensor marked as laid out in `layout` (the descriptor must already be in
    // that order).
    Tensor with_layout(dt_tensor_layout_t layout) const;
    size_t numel() const { return models::numel(desc_); }
    size_t bytes() const { return numel() * dt_dtype_size(desc_.dtype); }
    bool empty() const { return mem_ == nullptr; }

    void *data() const { return mem_.get(); }
    float *f32() const { return static_cast<float *>(mem_.get()); }
    int32_t *i32() const { return static_cast<int32_t *>(mem_.get()); }

    // The same memory under another shape with the same number of elements (NCHW).
    Tensor view(const dt_tensor_desc_t &desc) const;
    // `desc`'s elements starting `offset` elements in: a window that shares (and keeps
    // alive) this tensor's memory, as the optimizer's flat buffers hand out per parameter.
    Tensor slice(size_t offset, const dt_tensor_desc_t &desc) const;
    void copy_from(const Compute &c, const Tensor &src) const; // same byte count

    void fill(const Compute &c, float value) const;
    void copy_from_host(const Compute &c, const void *src) const; // bytes() bytes
    void copy_to_host(const Compute &c, void *dst) const;
    std::vector<float> to_vector(const Compute &c) const; // float32 tensors

private:
    friend Tensor &ensure(Tensor &, const Compute &, const dt_tensor_desc_t &,
                          dt_tensor_layout_t);
    dt_tensor_desc_t desc_{};
    dt_tensor_layout_t layout_ = DT_LAYOUT_NCHW;
    std::shared_ptr<void> mem_;
};

// Makes t a tensor of `desc`, reallocating only when the shape changed (the batch size
// differs, e.g. in the last validation batch), and marks it `layout`. Returns t.
Tensor &ensure(Tensor &t, const Compute &compute, const dt_tensor_desc_t &desc,
               dt_tensor_layout_t layout = DT_LAYOUT_NCHW);

// The descriptor of a 4-D activation (float32 unless dtype says otherwise) of n images
// of c channels of h x w in `layout`: (n, c, h, w) or (n, h, w, c).
dt_tensor_desc_t activation_desc(int64_t n, int64_t c, int64_t h, int64_t w,
                                 dt_tensor_layout_t layout, dt_dtype_t dtype = DT_FLOAT32);

// The same descriptor with another dtype.
dt_tensor_desc_t with_dtype(dt_tensor_desc_t desc, dt_dtype_t dtype);

} // namespace dt::models
