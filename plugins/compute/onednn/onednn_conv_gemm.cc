// SPDX-License-Identifier: Apache-2.0
// 1x1 convolutions on channels-last activations as dnnl_sgemm calls (see the header).
#include "onednn_conv_gemm.h"

#include <oneapi/dnnl/dnnl.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace dtp::onednn {

namespace {

// Row-major C (m x n) = op(A) op(B) with oneDNN's sgemm.
void sgemm(char ta, char tb, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
           const float *b, int64_t ldb, float *c, int64_t ldc)
{
    const dnnl_status_t st = dnnl_sgemm(ta, tb, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
    if (st != dnnl_success)
        throw dnnl::error(st, "dnnl_sgemm");
}

// The rows (N * H * W) of an activation.
int64_t rows_of(const dtp_tensor_t &t) { return t.dims[0] * t.dims[2] * t.dims[3]; }

bool strided(const dtp_conv_t &p) { return p.stride[0] != 1 || p.stride[1] != 1; }

// The instance's scratch of at least n floats, kept for the next call.
float *scratch(Instance &in, int64_t n)
{
    if (in.gemm_scratch.size() < size_t(n))
        in.gemm_scratch.resize(size_t(n));
    return in.gemm_scratch.data();
}

// The rows a strided 1x1 convolution reads: out (N, Ho, Wo, C) = x[:, ::sh, ::sw, :].
void gather(const Instance &in, const dtp_tensor_t &x_desc, const float *x,
            const dtp_tensor_t &y_desc, const dtp_conv_t &p, float *out)
{
    const int64_t n = x_desc.dims[0], c = x_desc.dims[1], h = x_desc.dims[2],
                  w = x_desc.dims[3], ho = y_desc.dims[2], wo = y_desc.dims[3];
    const int64_t sh = p.stride[0], sw = p.stride[1];
#pragma omp parallel for collapse(2) if (in.threads > 1)
    for (int64_t b = 0; b < n; ++b)
        for (int64_t i = 0; i < ho; ++i) {
            const float *src = x + ((b * h + i * sh) * w) * c;
            float *dst = out + ((b * ho + i) * wo) * c;
            for (int64_t j = 0; j < wo; ++j)
                std::memcpy(dst + j * c, src + j * sw * c, size_t(c) * sizeof(float));
        }
}

// Its inverse for the data gradient: dx[:, ::sh, ::sw, :] = rows, zero elsewhere (those
// positions feed no output), in one pass over dx.
void scatter(const Instance &in, const float *rows, const dtp_tensor_t &dy_desc,
             const dtp_conv_t &p, const dtp_tensor_t &dx_desc, float *dx)
{
    const int64_t n = dx_desc.dims[0], c = dx_desc.dims[1], h = dx_desc.dims[2],
                  w = dx_desc.dims[3], ho = dy_desc.dims[2], wo = dy_desc.dims[3];
    const int64_t sh = p.stride[0], sw = p.stride[1];
#pragma omp parallel for collapse(2) if (in.threads > 1)
    for (int64_t b = 0; b < n; ++b)
        for (int64_t r = 0; r < h; ++r) {
            float *dst = dx + ((b * h + r) * w) * c;
            if (r % sh != 0 || r / sh >= ho) {
                std::memset(dst, 0, size_t(w * c) * sizeof(float));
                continue;
            }
            const float *src = rows + ((b * ho + r / sh) * wo) * c;
            for (int64_t j = 0; j < w; ++j) {
                if (j % sw == 0 && j / sw < wo)
                    std::memcpy(dst + j * c, src + (j / sw) * c, size_t(c) * sizeof(float));
                else
                    std::memset(dst + j * c, 0, size_t(c) * sizeof(float));
            }
        }
}

} // namespace

bool nhwc_gemm(const Instance &in, const dtp_conv_t &p, const dtp_tensor_t &w, int32_t dtype)
{
    static const char *env = std::getenv("DISTTRAIN_ONEDNN_CONV_LAYOUT");
    if (env != nullptr && std::string(env) == "blocked")
        return false;
    return p.layout == DTP_LAYOUT_NHWC && dtype == DTP_FLOAT32 &&
           compute_type(in, dtype) == dnnl::memory::data_type::f32 && p.groups == 1 &&
           w.dims[2] == 1 && w.dims[3] == 1 && p.padding[0] == 0 && p.padding[1] == 0;
}

void gemm_conv_forward(Instance &in, const dtp_conv_t &p, const dtp_tensor_t &x_desc,
                       const float *x, const dtp_tensor_t &w_desc, const float *w,
                       const float *bias, const dtp_tensor_t &y_desc, float *y)
{
    // y (rows, O) = x (rows, C) W^T, W (O, C)
    const int64_t rows = rows_of(y_desc), ci = x_desc.dims[1], co = w_desc.dims[0];
    const float *a = x;
    if (strided(p)) {
        float *g = scratch(in, rows * ci);
        gather(in, x_desc, x, y_desc, p, g);
        a = g;
    }
    sgemm('N', 'T', rows, co, ci, a, ci, w, ci, y, co);
    if (bias != nullptr)
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t o = 0; o < co; ++o)
                y[r * co + o] += bias[o];
}

void gemm_conv_backward_data(Instance &in, const dtp_conv_t &p, const dtp_tensor_t &w_desc,
                             const float *w, const dtp_tensor_t &dy_desc, const float *dy,
                             const dtp_tensor_t &dx_desc, float *dx)
{
    // dx (rows, C) = dy (rows, O) W
    const int64_t rows = rows_of(dy_desc), ci = dx_desc.dims[1], co = w_desc.dims[0];
    if (!strided(p)) {
        sgemm('N', 'N', rows, ci, co, dy, co, w, ci, dx, ci);
        return;
    }
    float *g = scratch(in, rows * ci);
    sgemm('N', 'N', rows, ci, co, dy, co, w, ci, g, ci);
    scatter(in, g, dy_desc, p, dx_desc, dx);
}

void gemm_conv_backward_weights(Instance &in, const dtp_conv_t &p,
                                const dtp_tensor_t &x_desc, const float *x,
                                const dtp_tensor_t &dy_desc, const float *dy,
                                const dtp_tensor_t &dw_desc, float *dw, float *dbias)
{
    // dW (O, C) = dy^T (O, rows) x (rows, C); dbias = column sums of dy
    const int64_t rows = rows_of(dy_desc), ci = x_desc.dims[1], co = dw_desc.dims[0];
    const float *b = x;
    if (strided(p)) {
        float *g = scratch(in, rows * ci);
        gather(in, x_desc, x, dy_desc, p, g);
        b = g;
    }
    sgemm('T', 'N', co, ci, rows, dy, co, b, ci, dw, ci);
    if (dbias != nullptr) {
        std::vector<double> sum(size_t(co), 0.0);
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t o = 0; o < co; ++o)
                sum[size_t(o)] += dy[r * co + o];
        for (int64_t o = 0; o < co; ++o)
            dbias[o] = float(sum[size_t(o)]);
    }
}

} // namespace dtp::onednn
