# SPDX-License-Identifier: Apache-2.0
"""Every compute operation against PyTorch (Debian's python3-torch) on the same inputs.

Drives libdisttrain's compute API through the ctypes binding in dtcompute.py with the
oneDNN plugin; the arrays are host memory, so the results are compared directly with
torch's forward outputs and autograd gradients.
"""
import ctypes
import os

import numpy as np
import pytest

import dtcompute as dc

torch = pytest.importorskip("torch", reason="python3-torch is not installed")
F = torch.nn.functional

RTOL, ATOL = 1e-4, 1e-5


@pytest.fixture(scope="module")
def compute(build_dir):
    plugin_dir = build_dir / "plugins" / "compute" / "onednn"
    if not (plugin_dir / "libdt-compute-onednn.so").exists():
        pytest.skip("the onednn compute plugin was not built (libdnnl-dev missing)")
    os.environ["DISTTRAIN_PLUGIN_PATH"] = str(plugin_dir)
    torch.set_num_threads(1)
    c = dc.Compute(build_dir / "core" / "libdisttrain.so", plugin="onednn", threads=2)
    yield c
    c.close()


def rand(*shape, seed=0):
    return np.random.default_rng(seed + sum(shape)).standard_normal(shape).astype(np.float32)


def close(actual, expected, rtol=RTOL, atol=ATOL):
    expected = expected.detach().numpy() if hasattr(expected, "detach") else expected
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)


def to_bf16_bits(x):
    return torch.from_numpy(x).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)


def from_bf16_bits(bits):
    return torch.from_numpy(bits.view(np.int16)).view(torch.bfloat16).float().numpy()


@pytest.mark.parametrize("ta,tb", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_matmul_transposes_alpha_beta(compute, ta, tb):
    m, n, k = 7, 5, 9
    a = rand(*((k, m) if ta else (m, k)), seed=1)
    b = rand(*((n, k) if tb else (k, n)), seed=2)
    c0 = rand(m, n, seed=3)
    c = c0.copy()
    compute.matmul(ta, tb, a, b, c, alpha=0.5, beta=2.0)
    ref = 0.5 * (torch.from_numpy(a).T if ta else torch.from_numpy(a)) @ \
        (torch.from_numpy(b).T if tb else torch.from_numpy(b)) + 2.0 * torch.from_numpy(c0)
    close(c, ref)


def test_matmul_beta_zero_ignores_nan(compute):
    a, b = rand(4, 3), rand(3, 2)
    c = np.full((4, 2), np.nan, np.float32)
    compute.matmul(0, 0, a, b, c)
    close(c, torch.from_numpy(a) @ torch.from_numpy(b))


def test_matmul_bf16_inputs_f32_output(compute):
    a, b = rand(6, 8), rand(8, 4)
    ab, bb = to_bf16_bits(a), to_bf16_bits(b)
    c = np.zeros((6, 4), np.float32)
    try:
        compute.matmul(0, 0, ab, bb, c, dtype=dc.BFLOAT16, c_dtype=dc.FLOAT32)
    except dc.ComputeError as e:
        # oneDNN 2.6 has bf16 matmul kernels from AVX-512 up; an AVX2-only CPU has none.
        assert e.status == -4, e  # DT_ERR_UNSUPPORTED
        assert "avx512" not in open("/proc/cpuinfo").read(), e
        pytest.skip(f"bf16 matmul not supported on this CPU (no AVX-512): {e.message}")
    ref = torch.from_numpy(from_bf16_bits(ab)) @ torch.from_numpy(from_bf16_bits(bb))
    close(c, ref, rtol=1e-3, atol=1e-3)


CONV_CASES = [
    dict(n=2, c=3, h=7, w=6, o=4, k=3, stride=1, padding=0, dilation=1, groups=1),
    dict(n=2, c=4, h=8, w=8, o=6, k=3, stride=2, padding=1, dilation=1, groups=2),
    dict(n=1, c=2, h=9, w=9, o=3, k=3, stride=1, padding=2, dilation=2, groups=1),
    dict(n=3, c=5, h=5, w=5, o=2, k=1, stride=1, padding=0, dilation=1, groups=1),
    # 1x1 on planes of >= 28x28: the plugin runs these on plain NCHW (no reorders), the
    # strided one in its backward directions only.
    dict(n=2, c=6, h=28, w=29, o=5, k=1, stride=1, padding=0, dilation=1, groups=1),
    dict(n=2, c=6, h=30, w=30, o=5, k=1, stride=2, padding=0, dilation=1, groups=1),
    # Strided 1x1 on odd planes and unequal strides: channels-last runs these as a gather
    # (or, for the data gradient, a scatter) around one sgemm.
    dict(n=2, c=7, h=29, w=31, o=5, k=1, stride=2, padding=0, dilation=1, groups=1),
    dict(n=3, c=4, h=10, w=7, o=6, k=1, stride=(3, 2), padding=0, dilation=1, groups=1),
]


def nhwc(a):
    return np.ascontiguousarray(np.asarray(a).transpose(0, 2, 3, 1))


# Channels-last: activations described (N, H, W, C), weights still OIHW. The 1x1
# stride-1 cases run as one sgemm over the batch, the others on oneDNN's nhwc kernels.
@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("case", CONV_CASES, ids=lambda c: "s{stride}p{padding}d{dilation}g{groups}k{k}h{h}".format(**c))
def test_conv_forward_and_backward(compute, case, layout):
    n, ch, h, w, o, k, g = (case[x] for x in ("n", "c", "h", "w", "o", "k", "groups"))
    x = rand(n, ch, h, w, seed=4)
    wt = rand(o, ch // g, k, k, seed=5)
    bias = rand(o, seed=6)
    tx = torch.from_numpy(x).requires_grad_()
    tw = torch.from_numpy(wt).requires_grad_()
    tb = torch.from_numpy(bias).requires_grad_()
    ty = F.conv2d(tx, tw, tb, stride=case["stride"], padding=case["padding"],
                  dilation=case["dilation"], groups=g)
    dy = rand(*ty.shape, seed=7)
    ty.backward(torch.from_numpy(dy))

    last = layout == "nhwc"
    act = nhwc if last else (lambda a: np.ascontiguousarray(np.asarray(a)))
    p = ctypes.byref(dc.conv_params(case["stride"], case["padding"], case["dilation"], g,
                                    layout=dc.LAYOUT_NHWC if last else None))
    xa, dya = act(x), act(dy)
    y = np.empty(dya.shape, np.float32)
    compute.fn("conv_forward", p, dc.desc(xa.shape), dc.ptr(xa), dc.desc(wt.shape),
               dc.ptr(wt), dc.desc(bias.shape), dc.ptr(bias), dc.desc(y.shape), dc.ptr(y))
    close(y, act(ty.detach()))
    dx = np.empty_like(xa)
    compute.fn("conv_backward_data", p, dc.desc(wt.shape), dc.ptr(wt), dc.desc(dya.shape),
               dc.ptr(dya), dc.desc(xa.shape), dc.ptr(dx))
    close(dx, act(tx.grad))
    dw, db = np.empty_like(wt), np.empty_like(bias)
    compute.fn("conv_backward_weights", p, dc.desc(xa.shape), dc.ptr(xa), dc.desc(dya.shape),
               dc.ptr(dya), dc.desc(wt.shape), dc.ptr(dw), dc.desc(db.shape), dc.ptr(db))
    close(dw, tw.grad, rtol=1e-4, atol=1e-4)
    close(db, tb.grad, rtol=1e-4, atol=1e-4)


def test_conv_channels_last_rejects_a_wrong_shape(compute):
    # An NCHW-ordered descriptor under DT_LAYOUT_NHWC reads as 3 channels of 5x2: w says 2.
    x, wt = rand(1, 2, 5, 3), rand(4, 2, 1, 1)
    y = np.empty((1, 4, 5, 3), np.float32)
    p = ctypes.byref(dc.conv_params(layout=dc.LAYOUT_NHWC))
    with pytest.raises(dc.ComputeError) as e:
        compute.fn("conv_forward", p, dc.desc(x.shape), dc.ptr(x), dc.desc(wt.shape),
                   dc.ptr(wt), None, None, dc.desc(y.shape), dc.ptr(y))
    assert "w.dims[1]" in e.value.message


def test_conv_rejects_an_unknown_layout(compute):
    x, wt = rand(1, 2, 5, 5), rand(3, 2, 1, 1)
    y = np.empty((1, 3, 5, 5), np.float32)
    p = ctypes.byref(dc.conv_params(layout=7))
    with pytest.raises(dc.ComputeError) as e:
        compute.fn("conv_forward", p, dc.desc(x.shape), dc.ptr(x), dc.desc(wt.shape),
                   dc.ptr(wt), None, None, dc.desc(y.shape), dc.ptr(y))
    assert "layout 7 is unknown" in e.value.message


@pytest.mark.parametrize("kind", [0, 1, 2])
def test_pool_channels_last(compute, kind):
    x = rand(2, 5, 7, 7, seed=8)
    tx = torch.from_numpy(x).requires_grad_()
    if kind == 0:
        ty = F.max_pool2d(tx, 3, 2, 1)
    else:
        ty = F.avg_pool2d(tx, 3, 2, 1, count_include_pad=(kind == 1))
    dy = rand(*ty.shape, seed=9)
    ty.backward(torch.from_numpy(dy))
    p = ctypes.byref(dc.pool_params(kind, 3, 2, 1, layout=dc.LAYOUT_NHWC))
    xl, dyl = nhwc(x), nhwc(dy)
    y = np.empty(dyl.shape, np.float32)
    size = ctypes.c_size_t(0)
    compute.fn("pool_workspace_size", p, dc.desc(xl.shape), dc.desc(y.shape),
               ctypes.byref(size))
    ws = np.empty(max(size.value, 1), np.uint8)
    compute.fn("pool_forward", p, dc.desc(xl.shape), dc.ptr(xl), dc.desc(y.shape), dc.ptr(y),
               dc.ptr(ws) if size.value else None)
    close(y, nhwc(ty.detach()))
    dx = np.empty_like(xl)
    compute.fn("pool_backward", p, dc.desc(xl.shape), dc.ptr(xl), dc.desc(y.shape),
               dc.ptr(y), dc.ptr(dyl), dc.ptr(dx), dc.ptr(ws) if size.value else None)
    close(dx, nhwc(tx.grad))


def test_conv_without_bias_and_default_params(compute):
    x, wt = rand(1, 2, 5, 5), rand(3, 2, 3, 3)
    y = np.empty((1, 3, 3, 3), np.float32)
    compute.fn("conv_forward", None, dc.desc(x.shape), dc.ptr(x), dc.desc(wt.shape),
               dc.ptr(wt), None, None, dc.desc(y.shape), dc.ptr(y))
    close(y, F.conv2d(torch.from_numpy(x), torch.from_numpy(wt)))


POOL_CASES = [
    (dc.POOL_MAX, 2, 2, 0), (dc.POOL_MAX, 3, 2, 1),
    (dc.POOL_AVG_INCLUDE_PADDING, 3, 2, 1), (dc.POOL_AVG_EXCLUDE_PADDING, 3, 2, 1),
    (dc.POOL_AVG_INCLUDE_PADDING, 2, 2, 0),
]


@pytest.mark.parametrize("kind,kernel,stride,padding", POOL_CASES)
def test_pool_forward_and_backward(compute, kind, kernel, stride, padding):
    x = rand(2, 3, 7, 8, seed=8)
    tx = torch.from_numpy(x).requires_grad_()
    if kind == dc.POOL_MAX:
        ty = F.max_pool2d(tx, kernel, stride, padding)
    else:
        ty = F.avg_pool2d(tx, kernel, stride, padding,
                          count_include_pad=kind == dc.POOL_AVG_INCLUDE_PADDING)
    dy = rand(*ty.shape, seed=9)
    ty.backward(torch.from_numpy(dy))

    p = ctypes.byref(dc.pool_params(kind, kernel, stride, padding))
    y = np.empty(ty.shape, np.float32)
    size = ctypes.c_size_t()
    compute.fn("pool_workspace_size", p, dc.desc(x.shape), dc.desc(y.shape), ctypes.byref(size))
    assert (size.value > 0) == (kind == dc.POOL_MAX)
    ws = np.zeros(max(size.value, 1), np.uint8)
    compute.fn("pool_forward", p, dc.desc(x.shape), dc.ptr(x), dc.desc(y.shape), dc.ptr(y),
               dc.ptr(ws) if size.value else None)
    close(y, ty)
    dx = np.empty_like(x)
    compute.fn("pool_backward", p, dc.desc(x.shape), dc.ptr(x), dc.desc(y.shape), dc.ptr(y),
               dc.ptr(dy), dc.ptr(dx), dc.ptr(ws) if size.value else None)
    close(dx, tx.grad)


def torch_batchnorm(shape, scale, shift, running_mean, running_var, eps, momentum):
    """PyTorch's batch norm for shape's channels (dimension 1), with these parameters."""
    bn = (torch.nn.BatchNorm2d if len(shape) == 4 else torch.nn.BatchNorm1d)(
        shape[1], eps=eps, momentum=momentum)
    with torch.no_grad():
        bn.weight.copy_(torch.from_numpy(scale))
        bn.bias.copy_(torch.from_numpy(shift))
        bn.running_mean.copy_(torch.from_numpy(running_mean))
        bn.running_var.copy_(torch.from_numpy(running_var))
    return bn


@pytest.mark.parametrize("shape", [(4, 3, 5, 6), (16, 5)])
def test_batchnorm_training_inference_backward(compute, shape):
    ch = shape[1]
    x = rand(*shape, seed=10) * 3 + 1
    scale, shift = rand(ch, seed=11), rand(ch, seed=12)
    rmean0, rvar0 = rand(ch, seed=13), np.abs(rand(ch, seed=14)) + 0.5
    eps, momentum = 1e-5, 0.1

    bn = torch_batchnorm(shape, scale, shift, rmean0, rvar0, eps, momentum)
    tx = torch.from_numpy(x).requires_grad_()
    ty = bn(tx)
    dy = rand(*shape, seed=15)
    ty.backward(torch.from_numpy(dy))
    dims = [0] + list(range(2, len(shape)))
    mean = x.astype(np.float64).mean(axis=tuple(dims))
    var = x.astype(np.float64).var(axis=tuple(dims))

    y = np.empty_like(x)
    smean, sinv = np.empty(ch, np.float32), np.empty(ch, np.float32)
    rmean, rvar = rmean0.copy(), rvar0.copy()
    compute.fn("batchnorm_forward_training", dc.desc(shape), dc.ptr(x), dc.fptr(scale),
               dc.fptr(shift), ctypes.c_float(eps), ctypes.c_float(momentum), dc.ptr(y),
               dc.fptr(smean), dc.fptr(sinv), dc.fptr(rmean), dc.fptr(rvar))
    close(y, ty, atol=1e-4)
    close(smean, mean, atol=1e-5)
    close(sinv, 1 / np.sqrt(var + eps), rtol=1e-4)
    close(rmean, bn.running_mean, atol=1e-5)
    close(rvar, bn.running_var, rtol=1e-4)

    dx, dscale, dshift = np.empty_like(x), np.empty(ch, np.float32), np.empty(ch, np.float32)
    compute.fn("batchnorm_backward", dc.desc(shape), dc.ptr(x), dc.ptr(dy), dc.fptr(scale),
               dc.fptr(smean), dc.fptr(sinv), ctypes.c_float(eps), dc.ptr(dx),
               dc.fptr(dscale), dc.fptr(dshift))
    close(dx, tx.grad, rtol=1e-3, atol=1e-4)
    close(dscale, bn.weight.grad, rtol=1e-4, atol=1e-4)
    close(dshift, bn.bias.grad, rtol=1e-4, atol=1e-4)

    bn.eval()
    yi = np.empty_like(x)
    compute.fn("batchnorm_forward_inference", dc.desc(shape), dc.ptr(x), dc.fptr(scale),
               dc.fptr(shift), dc.fptr(rmean), dc.fptr(rvar), ctypes.c_float(eps), dc.ptr(yi))
    close(yi, bn(torch.from_numpy(x)), atol=1e-4)


@pytest.mark.parametrize("shape", [(4, 3, 5, 6), (64, 16)])
def test_batchnorm_relu_and_add_relu(compute, shape):
    """relu(batch_norm(x)) and its backward (dy masked by y > 0), inference,
    relu(a + b) and the ReLU gradient of a sum, against PyTorch; (64, 16) takes the
    oneDNN plugin's row loops."""
    ch = shape[1]
    x = rand(*shape, seed=40) * 2 + 0.5
    scale, shift = rand(ch, seed=41) + 1.5, rand(ch, seed=42)
    rmean0, rvar0 = rand(ch, seed=43), np.abs(rand(ch, seed=44)) + 0.5
    eps, momentum = 1e-5, 0.1
    bn = torch_batchnorm(shape, scale, shift, rmean0, rvar0, eps, momentum)
    tx = torch.from_numpy(x).requires_grad_()
    ty = F.relu(bn(tx))
    dy = rand(*shape, seed=45)
    ty.backward(torch.from_numpy(dy))

    y = np.empty_like(x)
    smean, sinv = np.empty(ch, np.float32), np.empty(ch, np.float32)
    rmean, rvar = rmean0.copy(), rvar0.copy()
    compute.fn("batchnorm_relu_forward_training", dc.desc(shape), dc.ptr(x), dc.fptr(scale),
               dc.fptr(shift), ctypes.c_float(eps), ctypes.c_float(momentum), dc.ptr(y),
               dc.fptr(smean), dc.fptr(sinv), dc.fptr(rmean), dc.fptr(rvar))
    close(y, ty, atol=1e-4)
    assert (y == 0).any() and (y > 0).any()
    close(rmean, bn.running_mean, atol=1e-5)
    close(rvar, bn.running_var, rtol=1e-4)

    dx, dscale, dshift = np.empty_like(x), np.empty(ch, np.float32), np.empty(ch, np.float32)
    compute.fn("batchnorm_relu_backward", dc.desc(shape), dc.ptr(x), dc.ptr(y), dc.ptr(dy),
               dc.fptr(scale), dc.fptr(smean), dc.fptr(sinv), ctypes.c_float(eps), dc.ptr(dx),
               dc.fptr(dscale), dc.fptr(dshift))
    close(dx, tx.grad, rtol=1e-3, atol=1e-4)
    close(dscale, bn.weight.grad, rtol=1e-4, atol=1e-4)
    close(dshift, bn.bias.grad, rtol=1e-4, atol=1e-4)

    bn.eval()
    yi = np.empty_like(x)
    compute.fn("batchnorm_relu_forward_inference", dc.desc(shape), dc.ptr(x), dc.fptr(scale),
               dc.fptr(shift), dc.fptr(rmean), dc.fptr(rvar), ctypes.c_float(eps), dc.ptr(yi))
    close(yi, F.relu(bn(torch.from_numpy(x))), atol=1e-4)

    b = rand(*shape, seed=46)
    out = np.empty_like(x)
    compute.fn("add_relu", dc.desc(shape), dc.ptr(dy), dc.ptr(b), dc.ptr(out))
    close(out, F.relu(torch.from_numpy(dy) + torch.from_numpy(b)), rtol=0, atol=0)

    # ReLU's gradient of a sum (a residual block's), on relu(a + b)'s output.
    g1, g2 = rand(*shape, seed=47), rand(*shape, seed=48)
    dx = np.empty_like(x)
    compute.fn("relu_backward_sum", dc.desc(shape), dc.ptr(out), dc.ptr(g1), dc.ptr(g2),
               dc.ptr(dx))
    tout = torch.from_numpy(out)
    want = torch.where(tout > 0, torch.from_numpy(g1) + torch.from_numpy(g2),
                       torch.zeros_like(tout))
    close(dx, want, rtol=0, atol=0)


@pytest.mark.parametrize("shape", [(4, 3, 5, 6), (64, 16)])
def test_batchnorm_add_relu(compute, shape):
    """relu(batch_norm(x) + z), a residual block's end, in training (with the running
    statistics) and inference, against PyTorch."""
    ch = shape[1]
    x, z = rand(*shape, seed=50) * 2 + 0.5, rand(*shape, seed=51)
    scale, shift = rand(ch, seed=52) + 1.5, rand(ch, seed=53)
    rmean0, rvar0 = rand(ch, seed=54), np.abs(rand(ch, seed=55)) + 0.5
    eps, momentum = 1e-5, 0.1
    bn = torch_batchnorm(shape, scale, shift, rmean0, rvar0, eps, momentum)
    with torch.no_grad():
        want = F.relu(bn(torch.from_numpy(x)) + torch.from_numpy(z))

    y = np.empty_like(x)
    smean, sinv = np.empty(ch, np.float32), np.empty(ch, np.float32)
    rmean, rvar = rmean0.copy(), rvar0.copy()
    compute.fn("batchnorm_add_relu_forward_training", dc.desc(shape), dc.ptr(x), dc.ptr(z),
               dc.fptr(scale), dc.fptr(shift), ctypes.c_float(eps), ctypes.c_float(momentum),
               dc.ptr(y), dc.fptr(smean), dc.fptr(sinv), dc.fptr(rmean), dc.fptr(rvar))
    close(y, want, atol=1e-4)
    assert (y == 0).any() and (y > 0).any()
    close(rmean, bn.running_mean, atol=1e-5)
    close(rvar, bn.running_var, rtol=1e-4)

    bn.eval()
    yi = np.empty_like(x)
    compute.fn("batchnorm_add_relu_forward_inference", dc.desc(shape), dc.ptr(x), dc.ptr(z),
               dc.fptr(scale), dc.fptr(shift), dc.fptr(rmean), dc.fptr(rvar),
               ctypes.c_float(eps), dc.ptr(yi))
    with torch.no_grad():
        close(yi, F.relu(bn(torch.from_numpy(x)) + torch.from_numpy(z)), atol=1e-4)


def test_relu_bias_add_axpby_scale(compute):
    x = rand(3, 4, 2, 5, seed=16)
    dy = rand(3, 4, 2, 5, seed=17)
    tx = torch.from_numpy(x).requires_grad_()
    ty = F.relu(tx)
    ty.backward(torch.from_numpy(dy))
    y, dx = np.empty_like(x), np.empty_like(x)
    compute.fn("relu_forward", dc.desc(x.shape), dc.ptr(x), dc.ptr(y))
    close(y, ty, rtol=0, atol=0)
    compute.fn("relu_backward", dc.desc(x.shape), dc.ptr(x), dc.ptr(dy), dc.ptr(dx))
    close(dx, tx.grad, rtol=0, atol=0)

    bias = rand(4, seed=18)
    yb = x.copy()
    compute.fn("bias_add", dc.desc(x.shape), dc.ptr(yb), dc.desc(bias.shape), dc.ptr(bias))
    close(yb, x + bias.reshape(1, 4, 1, 1))
    db = np.empty(4, np.float32)
    compute.fn("bias_backward", dc.desc(dy.shape), dc.ptr(dy), dc.desc(db.shape), dc.ptr(db))
    close(db, dy.sum(axis=(0, 2, 3)), atol=1e-5)

    x2, b2 = rand(6, 10, seed=19), rand(10, seed=20)
    y2 = x2.copy()
    compute.fn("bias_add", dc.desc(x2.shape), dc.ptr(y2), dc.desc(b2.shape), dc.ptr(b2))
    close(y2, x2 + b2)

    a, b = rand(1000, seed=21), rand(1000, seed=22)
    out = np.empty_like(a)
    compute.fn("add", dc.desc(a.shape), dc.ptr(a), dc.ptr(b), dc.ptr(out))
    close(out, a + b)
    yy = b.copy()
    compute.fn("axpby", dc.desc(a.shape), ctypes.c_float(0.5), dc.ptr(a), ctypes.c_float(-2.0),
               dc.ptr(yy))
    close(yy, 0.5 * a - 2.0 * b)
    s = a.copy()
    compute.fn("scale", dc.desc(a.shape), ctypes.c_float(3.0), dc.ptr(s))
    close(s, 3.0 * a)


def test_softmax_cross_entropy(compute):
    n, k = 12, 10
    logits = rand(n, k, seed=23) * 4
    labels = np.random.default_rng(0).integers(0, k, n).astype(np.int32)
    tl = torch.from_numpy(logits).requires_grad_()
    loss_ref = F.cross_entropy(tl, torch.from_numpy(labels).long())
    loss_ref.backward()

    probs = np.empty_like(logits)
    loss, correct = ctypes.c_float(), ctypes.c_int64()
    compute.fn("softmax_cross_entropy_forward", dc.desc(logits.shape), dc.ptr(logits),
               dc.ptr(labels), dc.ptr(probs), ctypes.byref(loss), ctypes.byref(correct))
    assert loss.value == pytest.approx(loss_ref.item(), rel=1e-5)
    close(probs, F.softmax(torch.from_numpy(logits), dim=1))
    assert correct.value == int((logits.argmax(axis=1) == labels).sum())
    dl = np.empty_like(logits)
    compute.fn("softmax_cross_entropy_backward", dc.desc(probs.shape), dc.ptr(probs),
               dc.ptr(labels), ctypes.c_float(1.0 / n), dc.ptr(dl))
    close(dl, tl.grad)


@pytest.mark.parametrize("momentum,nesterov,wd", [(0.0, 0, 0.0), (0.9, 0, 1e-4),
                                                  (0.9, 1, 5e-4)])
def test_sgd_matches_torch_over_steps(compute, momentum, nesterov, wd):
    w0 = rand(257, seed=24)
    grads = [rand(257, seed=25 + i) for i in range(3)]
    tw = torch.nn.Parameter(torch.from_numpy(w0.copy()))
    opt = torch.optim.SGD([tw], lr=0.1, momentum=momentum, nesterov=bool(nesterov),
                          weight_decay=wd)
    w, buf = w0.copy(), np.zeros_like(w0)
    p = dc.SgdParams(0.1, momentum, wd, nesterov)
    for g in grads:
        tw.grad = torch.from_numpy(g)
        opt.step()
        compute.fn("sgd_update", ctypes.byref(p), ctypes.c_size_t(w.size), dc.fptr(w),
                   dc.fptr(g), dc.fptr(buf) if momentum else None)
    close(w, tw, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("decoupled,wd", [(0, 0.0), (0, 1e-2), (1, 1e-2)])
def test_adam_matches_torch_over_steps(compute, decoupled, wd):
    w0 = rand(300, seed=30)
    grads = [rand(300, seed=31 + i) for i in range(4)]
    tw = torch.nn.Parameter(torch.from_numpy(w0.copy()))
    cls = torch.optim.AdamW if decoupled else torch.optim.Adam
    opt = cls([tw], lr=1e-2, betas=(0.9, 0.999), eps=1e-8, weight_decay=wd)
    w, m, v = w0.copy(), np.zeros_like(w0), np.zeros_like(w0)
    for step, g in enumerate(grads, start=1):
        tw.grad = torch.from_numpy(g)
        opt.step()
        p = dc.AdamParams(1e-2, 0.9, 0.999, 1e-8, wd, decoupled, step)
        compute.fn("adam_update", ctypes.byref(p), ctypes.c_size_t(w.size), dc.fptr(w),
                   dc.fptr(g), dc.fptr(m), dc.fptr(v))
    close(w, tw, rtol=1e-5, atol=1e-6)


def test_casts_match_torch_and_numpy(compute):
    x = np.concatenate([rand(1000, seed=40) * 100, np.array(
        [0, -0.0, 1, 65504, 65520, 1e6, -1e6, 6e-8, 3e-8, 1e-5, 1.00048828125, np.inf, -np.inf,
         1e-40, 3.0e38], np.float32)]).astype(np.float32)
    bf = np.empty(x.shape, np.uint16)
    compute.fn("cast", dc.desc(x.shape), dc.ptr(x), dc.BFLOAT16, dc.ptr(bf))
    np.testing.assert_array_equal(bf, to_bf16_bits(x))
    hf = np.empty(x.shape, np.uint16)
    compute.fn("cast", dc.desc(x.shape), dc.ptr(x), dc.FLOAT16, dc.ptr(hf))
    with np.errstate(over="ignore"):  # the overflow to infinity is what is being tested
        expected = x.astype(np.float16).view(np.uint16)
    np.testing.assert_array_equal(hf, expected)
    back = np.empty_like(x)
    compute.fn("cast", dc.desc(x.shape, dc.FLOAT16), dc.ptr(hf), dc.FLOAT32, dc.ptr(back))
    np.testing.assert_array_equal(back, hf.view(np.float16).astype(np.float32))
    compute.fn("cast", dc.desc(x.shape, dc.BFLOAT16), dc.ptr(bf), dc.FLOAT32, dc.ptr(back))
    np.testing.assert_array_equal(back, from_bf16_bits(bf))
    hb = np.empty(x.shape, np.uint16)
    compute.fn("cast", dc.desc(x.shape, dc.FLOAT16), dc.ptr(hf), dc.BFLOAT16, dc.ptr(hb))
    np.testing.assert_array_equal(hb, to_bf16_bits(hf.view(np.float16).astype(np.float32)))


def test_fill(compute):
    x = np.empty(37, np.float32)
    compute.fn("fill", dc.desc(x.shape), dc.ptr(x), ctypes.c_float(2.5))
    assert (x == 2.5).all()
    i = np.empty(5, np.int32)
    compute.fn("fill", dc.desc(i.shape, dc.INT32), dc.ptr(i), ctypes.c_float(7))
    assert (i == 7).all()


def test_bf16_tensors_in_conv_relu_pool(compute):
    """bfloat16 activations and weights run where the CPU has AVX-512 (oneDNN's bf16)."""
    x, wt = rand(2, 4, 8, 8, seed=50), rand(8, 4, 3, 3, seed=51)
    xb, wb = to_bf16_bits(x), to_bf16_bits(wt)
    yb = np.empty((2, 8, 6, 6), np.uint16)
    try:
        compute.fn("conv_forward", None, dc.desc(x.shape, dc.BFLOAT16), dc.ptr(xb),
                   dc.desc(wt.shape, dc.BFLOAT16), dc.ptr(wb), None, None,
                   dc.desc(yb.shape, dc.BFLOAT16), dc.ptr(yb))
    except dc.ComputeError as e:
        assert e.status == -4, e  # DT_ERR_UNSUPPORTED on a CPU without bf16 kernels
        pytest.skip(f"bf16 convolution not supported here: {e.message}")
    ref = F.conv2d(torch.from_numpy(from_bf16_bits(xb)), torch.from_numpy(from_bf16_bits(wb)))
    close(from_bf16_bits(yb), ref, rtol=2e-2, atol=5e-2)
    compute.fn("relu_forward", dc.desc(yb.shape, dc.BFLOAT16), dc.ptr(yb), dc.ptr(yb))
    assert (from_bf16_bits(yb) >= 0).all()


def test_bf16_compute_mode_on_f32_tensors(build_dir):
    plugin_dir = build_dir / "plugins" / "compute" / "onednn"
    if not (plugin_dir / "libdt-compute-onednn.so").exists():
        pytest.skip("the onednn compute plugin was not built")
    os.environ["DISTTRAIN_PLUGIN_PATH"] = str(plugin_dir)
    c = dc.Compute(build_dir / "core" / "libdisttrain.so", plugin="onednn",
                   compute_dtype=dc.BFLOAT16)
    try:
        attr = c.query()
        if not attr.bf16_native:
            assert attr.compute_dtype == dc.FLOAT32  # fell back, with a warning
            pytest.skip("this CPU has no bfloat16 hardware")
        assert attr.compute_dtype == dc.BFLOAT16
        a, b = rand(32, 64, seed=60), rand(64, 16, seed=61)
        out = np.empty((32, 16), np.float32)
        c.matmul(0, 0, a, b, out)
        ref = torch.from_numpy(from_bf16_bits(to_bf16_bits(a))) @ \
            torch.from_numpy(from_bf16_bits(to_bf16_bits(b)))
        close(out, ref, rtol=1e-3, atol=1e-3)
        assert np.abs(out - a @ b).max() > 0  # it really rounded the inputs
        x, wt = rand(2, 3, 6, 6, seed=62), rand(4, 3, 3, 3, seed=63)
        y = np.empty((2, 4, 4, 4), np.float32)
        c.fn("conv_forward", None, dc.desc(x.shape), dc.ptr(x), dc.desc(wt.shape), dc.ptr(wt),
             None, None, dc.desc(y.shape), dc.ptr(y))
        close(y, F.conv2d(torch.from_numpy(x), torch.from_numpy(wt)), rtol=3e-2, atol=5e-2)
    finally:
        c.close()
