// SPDX-License-Identifier: Apache-2.0
// C = alpha * op(A) * op(B) + beta * C with oneDNN's matmul primitive. Transposes are
// strided views of the user's row-major matrices; alpha is the output scale and beta a
// sum post-op. With bf16 compute, f32 inputs are converted into bfloat16 scratch of the
// same strides first.
//
// In float32 with B not transposed, oneDNN's sgemm (its JIT gemm with packing) runs the
// trainer's shapes faster than the matmul primitive (brgemm): on AVX-512 with one thread,
// 104-108 against 94-99 GFLOP/s for the mlp's dW = dy^T x and dx = dy W. With B
// transposed (y = x W^T) the primitive wins, 95 against 88, so that one stays on it.
#include "onednn_context.h"
#include "onednn_ops.h"

#include <oneapi/dnnl/dnnl.h>

#include <optional>

namespace dtp::onednn {

namespace {

using dt = dnnl::memory::data_type;

struct MatmulEntry : CacheEntry {
    dnnl::memory::desc a_user, b_user, c_user;
    dnnl::matmul prim;
    // Set when inputs are converted to the compute type first.
    std::optional<dnnl::reorder> a_reorder, b_reorder;
    dnnl::memory a_tmp, b_tmp;
};

// op(X) of rows x cols over a row-major matrix stored transposed when `trans`.
dnnl::memory::desc view(int64_t rows, int64_t cols, dt type, bool trans)
{
    return trans ? dnnl::memory::desc({rows, cols}, type, dnnl::memory::dims{1, rows})
                 : dnnl::memory::desc({rows, cols}, type, dnnl::memory::dims{cols, 1});
}

std::unique_ptr<MatmulEntry> make_entry(const Instance &in, int32_t dtype, int32_t c_dtype,
                                        bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                                        float alpha, float beta)
{
    auto e = std::make_unique<MatmulEntry>();
    const dt user = dnnl_type(dtype);
    const dt work = compute_type(in, dtype);
    e->a_user = view(m, k, user, ta);
    e->b_user = view(k, n, user, tb);
    e->c_user = view(m, n, dnnl_type(c_dtype), false);
    dnnl::memory::desc a_md = e->a_user, b_md = e->b_user;
    if (work != user) {
        // The converted copies keep the user's strides: a reorder that only converts
        // runs at memory speed, one that also transposes (1000 x 1000) took 10x longer
        // than the bfloat16 matmul it fed, and brgemm takes either orientation.
        a_md = view(m, k, work, ta);
        b_md = view(k, n, work, tb);
        e->a_tmp = dnnl::memory(a_md, in.engine);
        e->b_tmp = dnnl::memory(b_md, in.engine);
        e->a_reorder = dnnl::reorder(dnnl::reorder::primitive_desc(
            in.engine, e->a_user, in.engine, a_md));
        e->b_reorder = dnnl::reorder(dnnl::reorder::primitive_desc(
            in.engine, e->b_user, in.engine, b_md));
    }
    dnnl::primitive_attr attr;
    if (alpha != 1.0f)
        attr.set_output_scales(0, {alpha});
    if (beta != 0.0f) {
        dnnl::post_ops ops;
        ops.append_sum(beta);
        attr.set_post_ops(ops);
    }
    dnnl::matmul::desc desc(a_md, b_md, e->c_user);
    e->prim = dnnl::matmul(dnnl::matmul::primitive_desc(desc, attr, in.engine));
    return e;
}

} // namespace

int32_t matmul(void *c, int32_t dtype, int32_t c_dtype, int32_t trans_a, int32_t trans_b,
               int64_t m, int64_t n, int64_t k, float alpha, const void *a, const void *b,
               float beta, void *out)
{
    return guarded(c, [&] {
        auto &in = *static_cast<Instance *>(c);
        if (dtype == DTP_FLOAT32 && c_dtype == DTP_FLOAT32 && trans_b == 0 &&
            compute_type(in, dtype) == dt::f32) {
            const dnnl_status_t st = dnnl_sgemm(
                trans_a ? 'T' : 'N', 'N', m, n, k, alpha, static_cast<const float *>(a),
                trans_a ? m : k, static_cast<const float *>(b), n, beta,
                static_cast<float *>(out), n);
            if (st != dnnl_success)
                throw dnnl::error(st, "dnnl_sgemm");
            return;
        }
        const std::string key = "matmul|" + std::to_string(dtype) + "|" +
                                std::to_string(c_dtype) + "|" + std::to_string(trans_a) +
                                std::to_string(trans_b) + "|" + std::to_string(m) + "x" +
                                std::to_string(n) + "x" + std::to_string(k) + "|" +
                                key_float(alpha) + "|" + key_float(beta);
        auto &e = in.cache.get<MatmulEntry>(key, [&] {
            return make_entry(in, dtype, c_dtype, trans_a != 0, trans_b != 0, m, n, k, alpha,
                              beta);
        });
        dnnl::memory a_mem(e.a_user, in.engine, const_cast<void *>(a));
        dnnl::memory b_mem(e.b_user, in.engine, const_cast<void *>(b));
        dnnl::memory c_mem(e.c_user, in.engine, out);
        if (e.a_reorder) {
            e.a_reorder->execute(in.stream, a_mem, e.a_tmp);
            e.b_reorder->execute(in.stream, b_mem, e.b_tmp);
            a_mem = e.a_tmp;
            b_mem = e.b_tmp;
        }
        e.prim.execute(in.stream, {{DNNL_ARG_SRC, a_mem},
                                   {DNNL_ARG_WEIGHTS, b_mem},
                                   {DNNL_ARG_DST, c_mem}});
        in.stream.wait();
    });
}

} // namespace dtp::onednn
