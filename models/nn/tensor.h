/* SPDX-License-Identifier: Apache-2.0 */
// A tensor: a descriptor (shape, dtype) and a reference to memory of the compute
// context. Copies share memory, like a view; view() reinterprets the shape (Flatten).
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
    size_t numel() const { return models::numel(desc_); }
    size_t bytes() const { return numel() * dt_dtype_size(desc_.dtype); }
    bool empty() const { return mem_ == nullptr; }

    void *data() const { return mem_.get(); }
    float *f32() const { return static_cast<float *>(mem_.get()); }
    int32_t *i32() const { return static_cast<int32_t *>(mem_.get()); }

    // The same memory under another shape with the same number of elements.
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
    dt_tensor_desc_t desc_{};
    std::shared_ptr<void> mem_;
};

// Makes t a tensor of `desc`, reallocating only when the shape changed (the batch size
// differs, e.g. in the last validation batch). Returns t.
Tensor &ensure(Tensor &t, const Compute &compute, const dt_tensor_desc_t &desc);

} // namespace dt::models
