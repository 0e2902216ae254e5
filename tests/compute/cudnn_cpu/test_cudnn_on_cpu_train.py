# SPDX-License-Identifier: Apache-2.0
"""The models on the cuDNN plugin built for the CPU (tests/compute/cudnn_cpu): the whole
GPU path of a data-parallel job (mlp and resnet20, float32 and bfloat16, both layouts),
the trainer's tensors in "device memory" that the real cuda memory provider classifies
and the core stages, the plugin's host code, its kernels under cuda_emu, cuDNN and cuBLAS
as plain loops; and device memory over the NCCL transport (on the mock NCCL) instead of
staging. Two ranks must end with the same parameters, every step's loss must follow the
oneDNN plugin's on the same synthetic data, and NCCL must end with the staging path's
parameters, bit for bit. That shows the wiring; it is blind
to a wrong operation whose effect on a few steps' loss is small (a filter in the wrong
layout changed it in the fourth digit), which compute_cudnn_on_cpu's comparisons of each
operation with oneDNN catch.
"""
import re

import pytest

from conftest import BUILD, build_path, run

CPU_PLUGIN = BUILD / "tests" / "compute" / "cudnn_cpu"
ONEDNN = BUILD / "plugins" / "compute" / "onednn"
TCP = BUILD / "plugins" / "transport" / "tcp"
CUDA_MEMORY = BUILD / "plugins" / "memory" / "cuda"

pytestmark = [
    pytest.mark.skipif(not (CPU_PLUGIN / "libdt-compute-cudnn.so").exists(),
                       reason="the cuDNN plugin for the CPU was not built (it needs the "
                              "CUDA, cuDNN and cuBLAS headers under /usr/local/cuda/include)"),
    pytest.mark.skipif(not (CUDA_MEMORY / "libdt-memory-cuda.so").exists(),
                       reason="the cuda memory provider was not built (no CUDA runtime "
                              "under /usr/local/cuda)"),
    pytest.mark.skipif(not (ONEDNN / "libdt-compute-onednn.so").exists(),
                       reason="the oneDNN plugin was not built"),
]

# The CPU's libcudart.so.13 first, so the memory provider shares the plugin's runtime.
ENV = {"DISTTRAIN_PLUGIN_PATH": f"{TCP}:{CPU_PLUGIN}:{CUDA_MEMORY}:{ONEDNN}",
       "LD_LIBRARY_PATH": str(CPU_PLUGIN), "DISTTRAIN_TIMEOUT": "60",
       "DISTTRAIN_LOG_LEVEL": "warn"}
LOSS = re.compile(r"iter (\d+): .*\(loss ([0-9.]+)\)")
CHECKSUM = re.compile(r"rank (\d+) model checksum ([0-9a-f]{16})")


def bench_job(disttrainrun, compute, model, extra_args=(), env=None):
    bench = build_path("models", "programs", "disttrain-bench")
    args = [bench, "--model", model, "--batch-size", "2", "--threads", "1", "--num-warmup",
            "0", "--num-iters", "3", "--print-checksum", *extra_args]
    result = run([disttrainrun, "-np", 2, "--", *args],
                 env={**ENV, "DISTTRAIN_COMPUTE": compute, **(env or {})}, timeout=240)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def losses(result):
    found = [float(v) for _, v in LOSS.findall(result.stdout)]
    assert len(found) == 3, result.stdout
    return found


def same_parameters_on_both_ranks(result):
    found = {int(r): h for r, h in CHECKSUM.findall(result.stdout)}
    assert sorted(found) == [0, 1], result.stdout
    assert found[0] == found[1], result.stdout


@pytest.mark.parametrize("model,args,env", [
    ("mlp", [], {}),
    ("mlp", [], {"DISTTRAIN_ORDERED": "0"}),
    ("mlp", ["--bf16"], {}),
    # Convolutions, pooling, batch norm + ReLU and add + ReLU: in NHWC (the default on a
    # GPU: filters converted to (K, R, S, C) and back), in NCHW (asked for, and the default
    # for strict float32, DISTTRAIN_TF32=0), with cuDNN's batch norm, and with bfloat16
    # activations (float32 weights converted per call).
    ("resnet20", [], {}),
    ("resnet20", [], {"DISTTRAIN_LAYOUT": "nchw", "DISTTRAIN_CUDNN_BATCHNORM": "cudnn"}),
    ("resnet20", [], {"DISTTRAIN_TF32": "0"}),
    ("resnet20", ["--bf16"], {"DISTTRAIN_ACTIVATIONS": "bfloat16"}),
], ids=["mlp", "mlp-negotiated", "mlp-bf16", "resnet20", "resnet20-nchw-cudnn-bn",
        "resnet20-strict-fp32", "resnet20-bf16-activations"])
def test_two_ranks_on_the_cpu_cudnn_plugin_follow_onednn(disttrainrun, model, args, env):
    gpu = bench_job(disttrainrun, "cudnn", model, args, {**env, "DISTTRAIN_LOG_LEVEL": "debug"})
    assert "cudnn on cuda_emu (CPU)" in gpu.stdout, gpu.stdout
    # The layout the model took: channels-last for the ResNets, unless asked otherwise or
    # computing in strict float32 (no tensor cores).
    nchw = model == "mlp" or env.get("DISTTRAIN_LAYOUT") == "nchw" or \
        env.get("DISTTRAIN_TF32") == "0"
    assert f"{'nchw' if nchw else 'nhwc'} layout" in gpu.stdout, gpu.stdout
    # The provider called the tensors device memory, and the core staged them.
    assert "device memory): staging" in gpu.stdout + gpu.stderr, gpu.stdout + gpu.stderr
    same_parameters_on_both_ranks(gpu)
    cpu = bench_job(disttrainrun, "onednn", model, args, env)
    # bfloat16 matmuls round differently in oneDNN and in the mock: a few parts in 1000.
    tol = 0.02 if "--bf16" in args else 0.002
    assert losses(gpu) == pytest.approx(losses(cpu), rel=tol, abs=tol), (gpu.stdout, cpu.stdout)


NCCL_PLUGIN = BUILD / "plugins" / "transport" / "nccl"
NCCL_MOCK = BUILD / "tests" / "plugins" / "nccl" / "libnccl-mock.so"
# Device memory over the NCCL transport: the mock NCCL (its ranks are processes of this
# host) and the CPU's CUDA runtime, which the transport opens by path; streams are that
# runtime's, so the transport's device-side wait for the producer (cudaStreamWaitEvent)
# is taken and the core's count of such waits shows it.
NCCL_ENV = {"DISTTRAIN_DEVICE_TRANSPORT": "nccl", "DISTTRAIN_NCCL_LIBRARY": str(NCCL_MOCK),
            "DISTTRAIN_CUDA_RUNTIME_LIBRARY": str(CPU_PLUGIN / "libcudart.so.13"),
            "DISTTRAIN_PLUGIN_PATH": f"{ENV['DISTTRAIN_PLUGIN_PATH']}:{NCCL_PLUGIN}"}
DEVICE_WAITS = re.compile(r"device transport 'nccl': (\d+) calls ran on their producer's "
                          r"stream, (\d+) waited for their producer on the device, (\d+) on "
                          r"the host")


@pytest.mark.skipif(not (NCCL_PLUGIN / "libdt-transport-nccl.so").exists() or
                    not NCCL_MOCK.exists(),
                    reason="the nccl transport or its mock NCCL was not built (NCCL's header "
                           "is not under /usr/local/cuda)")
@pytest.mark.parametrize("model,env", [
    ("resnet20", {}),
    ("mlp", {"DISTTRAIN_ORDERED": "0"}),
], ids=["resnet20", "mlp-negotiated"])
def test_nccl_device_transport_ends_with_the_staging_paths_parameters(disttrainrun, model,
                                                                      env):
    staged = bench_job(disttrainrun, "cudnn", model, env=env)
    nccl = bench_job(disttrainrun, "cudnn", model,
                     env={**env, **NCCL_ENV, "DISTTRAIN_LOG_LEVEL": "debug"})
    output = nccl.stdout + nccl.stderr
    assert "device memory): device_native" in output, output
    waits = DEVICE_WAITS.findall(output)
    assert len(waits) == 2, output  # one line per rank
    # The gradients' calls are asynchronous: their producers are waited for on the device.
    assert all(int(device) > 0 and int(host) == 0 for _, device, host in waits), waits
    # Two ranks' sums are the same bits in either order: the paths must agree exactly.
    same_parameters_on_both_ranks(nccl)
    assert CHECKSUM.findall(nccl.stdout)[0][1] == CHECKSUM.findall(staged.stdout)[0][1]


NCCL_OVERHEAD = BUILD / "tests" / "bench" / "nccl_overhead"
ROW = re.compile(r"^(?:\[0\] )?\s*(\d+)\s+(in place|out of place)\s+[0-9.]+"
                 r"(?:\s+[0-9.]+\s+-?[0-9.]+\s+-?[0-9.]+%){2}$", re.M)


# tests/gpu/run.sh measures the NCCL transport's cost with this bench; here it runs on the
# mock NCCL and the CPU's runtime, so that the GPU run does not find a broken bench (the
# core's host wait, its other setting, has tests of its own). Its times mean nothing
# here and are not looked at.
@pytest.mark.skipif(not NCCL_OVERHEAD.exists() or not NCCL_MOCK.exists(),
                    reason="the nccl transport, its bench or its mock NCCL was not built")
def test_nccl_overhead_bench_runs(disttrainrun):
    result = run([disttrainrun, "-np", 1, "--", NCCL_OVERHEAD, 1, 1],
                 env={**ENV, **NCCL_ENV, "DISTTRAIN_MEMORY": "cuda"}, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "on the GPU (blocking: the call runs on it; async: wait_event)" in result.stdout, \
        result.stdout
    rows = ROW.findall(result.stdout)
    assert sorted(rows) == sorted([("4", "in place"), ("4", "out of place"),
                                   ("67108864", "in place"), ("67108864", "out of place")]), \
        result.stdout
