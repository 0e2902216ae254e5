#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The checks that need a GPU, in one run of about 7 minutes, every step under a timeout
# and the most telling first, so that a run cut short still says the most. Run on a
# machine with one NVIDIA GPU, CUDA 13, cuDNN 9 and NCCL (PyTorch's wheels bring them)
# and PyTorch, from the repository root, with the bundle that tests/gpu/bundle.sh made on
# the build machine:
#
#     bash tests/gpu/run.sh [.gpu-bundle]
#
# Steps, in order:
#  1. the CUDA memory provider on its own; the cuDNN plugin against oneDNN op by op, and
#     its own batch norm kernels and cuDNN's against oneDNN (cudnn-batchnorm; a
#     --reference bundle);
#  2. speed on one GPU, one process: ResNet-50 batch 64 in TF32 (the default), strict
#     float32 and bf16 (with float32 activations, and bf16 ones: DISTTRAIN_ACTIVATIONS)
#     on the GPU defaults (the plugin's own batch norm; channels-last, but NCHW for
#     strict float32), then what those defaults were chosen over (TF32 in NCHW with the
#     own batch norm and with cuDNN's, strict float32 in NHWC), and the mlp at batch
#     1000, beside PyTorch in the same run, as a table with ratios and "decide:" lines
#     that say whether each default still holds; then profiled runs
#     (DISTTRAIN_CUDNN_PROFILE: where the GPU time goes in the timed steps, op by op) of
#     ResNet-50 (the default, NCHW with cuDNN's batch norm, bf16 activations) and the mlp,
#     and PyTorch's profile of its steps;
#  3. the nccl device transport: 1 rank with every collective and dtype on the
#     device_native path, each waiting for its producer on the GPU, its cost per call
#     over raw NCCL (the producer waited for on the GPU, then on the host as before
#     with DISTTRAIN_NCCL_HOST_WAIT=1), ordering behind a slow producer kernel,
#     dt_context_abort while an allreduce is queued behind its producer, 2 ranks on the
#     one GPU or NCCL's refusal;
#  4. device memory staged through the host: the conformance suite on 2 ranks sharing the
#     GPU, mlp and resnet20 training on 2 ranks with the cuDNN plugin (the loss falls,
#     the ranks end with bit-identical models), disttrain.torch on CUDA tensors;
#  5. ResNet-50 on 2 ranks (ordered and negotiated) beside PyTorch DDP over gloo.
# Prints "STEP name: PASS|FAIL" lines and the figures; exits 1 if a step failed.
# GPU_STEPS="name ..." runs only the steps named (the checks after them then report on
# what ran). With
# $OUT set, the whole log is also written to $OUT/gpu-run.log.
set -u
BUNDLE=$(cd "${1:-.gpu-bundle}" && pwd) || { echo "no bundle: run tests/gpu/bundle.sh"; exit 2; }
REPO=$(cd "$(dirname "$0")/../.." && pwd)
LOG=${OUT:-/tmp}/gpu-run.log
exec > >(tee "$LOG") 2>&1

PY=$(command -v python3)
# CUDA's libraries where PyTorch's wheels put them (or a CUDA install): one search.
libdirs=""
found=$(timeout 30 find /opt /usr/local /usr/lib /root -name libcudnn.so.9 -o \
        -name libcublas.so.13 -o -name libcudart.so.13 -o -name libcublasLt.so.13 -o \
        -name libnccl.so.2 2>/dev/null)
for lib in libcudnn.so.9 libcublas.so.13 libcudart.so.13 libcublasLt.so.13; do
    f=$(echo "$found" | grep "/$lib\$" | head -1)
    [ -n "$f" ] && libdirs="$libdirs:$(dirname "$f")"
    echo "found $lib: ${f:-MISSING}"
done
export LD_LIBRARY_PATH="$BUNDLE/lib$libdirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if ! ldconfig -p | grep -q 'libcrypto.so.3 '; then
    export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$BUNDLE/fallback"
fi
export DISTTRAIN_PLUGIN_PATH="$BUNDLE/plugins"
export DISTTRAIN_LIBRARY="$BUNDLE/lib/libdisttrain.so.1"
export PYTHONPATH="$REPO/bindings/python${PYTHONPATH:+:$PYTHONPATH}"
# A hang fails its step well inside the step's limit.
export DISTTRAIN_TRANSPORT=tcp DISTTRAIN_TIMEOUT=40 PYTHONUNBUFFERED=1
RUN="$BUNDLE/bin/disttrainrun"
nvidia-smi -L; nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader
echo "python: $PY ($($PY -c 'import torch; print("torch", torch.__version__)' 2>&1))"

failed=0
rm -f /tmp/step-*.log
step() { # step NAME TIMEOUT COMMAND...: runs it, keeps its output, says PASS or FAIL
    local name=$1 limit=$2; shift 2
    # GPU_STEPS="a b": only the steps named (to rerun a few on a short lease).
    if [ -n "${GPU_STEPS:-}" ] && [[ " $GPU_STEPS " != *" $name "* ]]; then return 0; fi
    echo "=== $name (limit ${limit}s)"
    local start=$SECONDS
    timeout -k 10 "$limit" "$@" 2>&1 | tee "/tmp/step-$name.log"
    local rc=${PIPESTATUS[0]}
    if [ "$rc" -eq 0 ]; then echo "STEP $name: PASS ($((SECONDS - start)) s)"
    else echo "STEP $name: FAIL (exit $rc after $((SECONDS - start)) s)"; failed=1; fi
    return "$rc"
}
same_checksums() { # the log's "model checksum" lines agree, and there are $2 of them
    local n distinct
    [ -e "/tmp/step-$1.log" ] || return 0 # not run (GPU_STEPS)
    n=$(grep -c "model checksum" "/tmp/step-$1.log")
    distinct=$(grep -o "model checksum [0-9a-f]*" "/tmp/step-$1.log" | sort -u | wc -l)
    echo "$1: $n ranks printed checksums, $distinct distinct"
    [ "$n" -eq "$2" ] && [ "$distinct" -eq 1 ]
}

step provider 30 "$BUNDLE/bin/cuda_memory_gpu_test" "$BUNDLE/plugins/libdt-memory-cuda.so"
# The cuDNN plugin against oneDNN, operation by operation (a bundle made --reference);
# batch norm on its own kernels and on cuDNN's, over awkward shapes, apart.
if [ -x "$BUNDLE/bin/compute_cudnn_gtest" ]; then
    step cudnn-reference 60 "$BUNDLE/bin/compute_cudnn_gtest" --gtest_filter='-*Batchnorm*'
    step cudnn-batchnorm 60 "$BUNDLE/bin/compute_cudnn_gtest" --gtest_filter='*Batchnorm*'
fi

# 2. Speed on one GPU against PyTorch in the same run.
rate_of() { grep -so "images/sec total on 1 workers: [0-9.]*" "/tmp/step-$1.log" | grep -o "[0-9.]*$"; }
R50=(--model resnet50 --batch-size 64 --num-warmup 5 --num-iters 30)
# The defaults: channels-last (NHWC) and the plugin's own batch norm kernels.
DISTTRAIN_COMPUTE=cudnn step r50-default 90 "$BUNDLE/bin/disttrain-bench" "${R50[@]}"
DISTTRAIN_TF32=0 DISTTRAIN_COMPUTE=cudnn step r50-fp32 90 "$BUNDLE/bin/disttrain-bench" \
    "${R50[@]}"
DISTTRAIN_COMPUTE=cudnn step r50-bf16 90 "$BUNDLE/bin/disttrain-bench" "${R50[@]}" --bf16
DISTTRAIN_ACTIVATIONS=bfloat16 DISTTRAIN_COMPUTE=cudnn step r50-bf16-act 90 \
    "$BUNDLE/bin/disttrain-bench" "${R50[@]}" --bf16
# What the defaults were chosen over: NCHW, with the own batch norm and with cuDNN's.
DISTTRAIN_LAYOUT=nchw DISTTRAIN_COMPUTE=cudnn step r50-nchw 90 \
    "$BUNDLE/bin/disttrain-bench" "${R50[@]}"
DISTTRAIN_LAYOUT=nchw DISTTRAIN_CUDNN_BATCHNORM=cudnn DISTTRAIN_COMPUTE=cudnn \
    step r50-nchw-cudnn-bn 90 "$BUNDLE/bin/disttrain-bench" "${R50[@]}"
# Strict float32 takes NCHW (no tensor cores): against NHWC.
DISTTRAIN_LAYOUT=nhwc DISTTRAIN_TF32=0 DISTTRAIN_COMPUTE=cudnn step r50-fp32-nhwc 90 \
    "$BUNDLE/bin/disttrain-bench" "${R50[@]}"
DISTTRAIN_COMPUTE=cudnn step mlp-default 60 "$BUNDLE/bin/disttrain-bench" \
    --model mlp --batch-size 1000 --num-warmup 20 --num-iters 300
step torch-r50 150 "$PY" "$REPO/tests/gpu/torch_bench.py" --model resnet50 --batch-size 64 \
    --precision default,fp32,bf16 --iters 30 --profile 3
step torch-mlp 60 "$PY" "$REPO/tests/gpu/torch_bench.py" --model mlp --batch-size 1000 \
    --precision default --warmup 20 --iters 300
echo "=== speed on one GPU, images/sec, one process (disttrain: mean of the timed steps; pytorch: over all of them)"
"$PY" - "$(rate_of r50-default)" "$(rate_of r50-fp32)" "$(rate_of r50-bf16)" \
    "$(rate_of mlp-default)" "$(rate_of r50-bf16-act)" "$(rate_of r50-nchw)" \
    "$(rate_of r50-nchw-cudnn-bn)" "$(rate_of r50-fp32-nhwc)" /tmp/step-torch-r50.log \
    /tmp/step-torch-mlp.log <<'PYEOF'
import re, sys
default, fp32, bf16, mlp, bf16_act, nchw, nchw_cudnn_bn, fp32_nhwc = [
    float(a) if a else None for a in sys.argv[1:9]]
torch = {}
for path in sys.argv[9:]:
    try:
        text = open(path).read()
    except FileNotFoundError:  # not run (GPU_STEPS)
        continue
    for m in re.finditer(r"torch (\w+) (\w+) ranks=1 batch=\d+ images/sec total: ([0-9.]+)",
                         text):
        torch[(m[1], m[2])] = float(m[3])
rows = [("resnet50 b64", "TF32 (default)", default, torch.get(("resnet50", "default"))),
        ("resnet50 b64", "strict fp32 (NCHW)", fp32, torch.get(("resnet50", "fp32"))),
        ("resnet50 b64", "bf16", bf16, torch.get(("resnet50", "bf16"))),
        ("resnet50 b64", "bf16, bf16 activations", bf16_act, torch.get(("resnet50", "bf16"))),
        ("resnet50 b64 NCHW", "TF32", nchw, torch.get(("resnet50", "default"))),
        ("resnet50 b64 NCHW", "TF32, cuDNN's batch norm", nchw_cudnn_bn,
         torch.get(("resnet50", "default"))),
        ("resnet50 b64 NHWC", "strict fp32", fp32_nhwc, torch.get(("resnet50", "fp32"))),
        ("mlp b1000", "default", mlp, torch.get(("mlp", "default")))]
print(f"| model | precision | disttrain | pytorch | ratio |\n|---|---|---|---|---|")
for model, prec, a, b in rows:
    ratio = f"{a / b:.2f}" if a and b else "?"
    print(f"| {model} | {prec} | {a or '?'} | {b or '?'} | {ratio} |")
# Whether the defaults still hold, each a ratio of two of our runs (one run each: a ratio
# within 3% of 1 is noise until the profiles below agree): the layouts the models take on
# a GPU (default_layout() in models/zoo/zoo.cc), DISTTRAIN_CUDNN_BATCHNORM=auto on NCHW
# float32 (native_batchnorm() in plugins/compute/cudnn/cudnn_bn_choice.cc) and
# DISTTRAIN_ACTIVATIONS=auto under --bf16 on a GPU (models/README.md).
for what, a, b, flip in [
        ("NCHW against NHWC (the default), TF32", nchw, default, "NCHW becomes the GPU default"),
        ("NHWC against NCHW (the default), strict fp32", fp32_nhwc, fp32,
         "NHWC becomes the default for strict fp32 too"),
        ("NCHW float32 batch norm, cuDNN's against the own kernels (the default)",
         nchw_cudnn_bn, nchw, "auto takes cuDNN's for NCHW float32"),
        ("bfloat16 against float32 activations under --bf16", bf16_act, bf16,
         "DISTTRAIN_ACTIVATIONS=auto takes bfloat16 on a GPU")]:
    if a and b:
        r = a / b
        verdict = (" -> " + flip if r > 1.03 else " -> keep" if r < 0.97
                   else " -> within the noise of one run: keep")
        print(f"decide: {what}: {a} against {b} images/sec, {r:.3f}x{verdict}")
    else:
        print(f"decide: {what}: not measured")
PYEOF
DISTTRAIN_CUDNN_PROFILE=1 DISTTRAIN_COMPUTE=cudnn step r50-profile 60 \
    "$BUNDLE/bin/disttrain-bench" --model resnet50 --batch-size 64 --num-warmup 3 --num-iters 10
DISTTRAIN_LAYOUT=nchw DISTTRAIN_CUDNN_BATCHNORM=cudnn DISTTRAIN_CUDNN_PROFILE=1 \
    DISTTRAIN_COMPUTE=cudnn step r50-nchw-cudnn-bn-profile 60 "$BUNDLE/bin/disttrain-bench" \
    --model resnet50 --batch-size 64 --num-warmup 3 --num-iters 10
echo "=== batch norm, ReLU and add (batchnorm_relu_*, batchnorm_add_relu_*, add_relu:" \
    "fused) in the profiled ResNet-50 steps (gpu ms over 10 steps, us per call)"
for s in r50-profile r50-nchw-cudnn-bn-profile; do
    grep -s -E "^(batchnorm|relu|add)" "/tmp/step-$s.log" | sed "s/^/$s: /"
done
# The end of a residual block fused (batch norm, shortcut add, ReLU in one pass) against
# the batch norm then add_relu, on ResNet-50's four block-end shapes at batch 64.
DISTTRAIN_COMPUTE=cudnn step residual-end 60 "$BUNDLE/bin/residual_end_bench"
DISTTRAIN_COMPUTE=cudnn step residual-end-bf16 60 "$BUNDLE/bin/residual_end_bench" --bf16
DISTTRAIN_ACTIVATIONS=bfloat16 DISTTRAIN_CUDNN_PROFILE=1 DISTTRAIN_COMPUTE=cudnn \
    step r50-bf16-profile 60 "$BUNDLE/bin/disttrain-bench" --model resnet50 --batch-size 64 \
    --num-warmup 3 --num-iters 10 --bf16
DISTTRAIN_CUDNN_PROFILE=1 DISTTRAIN_COMPUTE=cudnn step mlp-profile 40 \
    "$BUNDLE/bin/disttrain-bench" --model mlp --batch-size 1000 --num-warmup 10 --num-iters 100

# 3. NCCL as the device transport (DISTTRAIN_DEVICE_TRANSPORT=nccl), with the NCCL of
# PyTorch's wheel.
NCCL_LIB=$(echo "$found" | grep "/libnccl.so.2\$" | head -1)
if [ ! -e "$BUNDLE/plugins/libdt-transport-nccl.so" ]; then
    echo "STEP nccl: SKIPPED (the bundle has no libdt-transport-nccl.so: nccl.h was not found at build time)"
elif [ -z "$NCCL_LIB" ]; then
    echo "STEP nccl: FAIL (no libnccl.so.2 found: install PyTorch's CUDA wheels)"; failed=1
else
    echo "NCCL: $NCCL_LIB"
    NCCL_ENV=(DISTTRAIN_MEMORY=cuda DISTTRAIN_DEVICE_TRANSPORT=nccl
              DISTTRAIN_NCCL_LIBRARY="$NCCL_LIB")
    # shellcheck disable=SC2030,SC2031
    export "${NCCL_ENV[@]}"
    DISTTRAIN_LOG_LEVEL=debug step nccl-1 60 "$BUNDLE/bin/dt_conformance" --device
    native=$(grep -c "device memory): device_native" /tmp/step-nccl-1.log 2>/dev/null)
    # The uneven kinds (allgatherv, alltoallv) have no native collective: always staged.
    staged=$(grep "device memory): staging" /tmp/step-nccl-1.log 2>/dev/null | grep -vc "allgatherv\|alltoallv")
    if [ -e /tmp/step-nccl-1.log ]; then
        echo "nccl-1: $native device calls on device_native, $staged staged (uneven kinds aside)"
        if [ "$native" -eq 0 ] || [ "$staged" -ne 0 ]; then
            echo "STEP nccl-1-native: FAIL"; failed=1
        fi
        # Every device_native call runs on its producer's stream (a blocking call:
        # launch_on_stream) or hands its producer's event to the plugin, whose stream waits
        # for it on the GPU (wait_event): none is waited for on the host.
        waits=$(grep -o "[0-9]* calls ran on their producer's stream, [0-9]* waited for \
their producer on the device, [0-9]* on the host" /tmp/step-nccl-1.log | tail -1)
        echo "nccl-1: ${waits:-no summary of the producer waits}"
        if ! echo "$waits" | grep -q ", 0 on the host\$" ||
           echo "$waits" | grep -q "^0 calls ran .*, 0 waited"; then
            echo "STEP nccl-1-device-wait: FAIL"; failed=1
        fi
    fi
    if [ -x "$BUNDLE/bin/nccl_overhead" ]; then
        # Blocking calls run on the producer's stream (launch_on_stream), asynchronous ones
        # wait for its event on the GPU (wait_event); then both wait on the host as before
        # (DISTTRAIN_NCCL_HOST_WAIT=1): the tables show what the first two save.
        step nccl-overhead 45 "$RUN" -np 1 -- "$BUNDLE/bin/nccl_overhead" 7
        DISTTRAIN_NCCL_HOST_WAIT=1 step nccl-overhead-hostwait 45 "$RUN" -np 1 -- \
            "$BUNDLE/bin/nccl_overhead" 7
        DISTTRAIN_ORDERED=1 step nccl-overhead-ordered 45 "$RUN" -np 1 -- \
            "$BUNDLE/bin/nccl_overhead" 7
        # The goal of a blocking call: under 2% of a 64 MiB one-rank allreduce out of place.
        for log in /tmp/step-nccl-overhead.log /tmp/step-nccl-overhead-ordered.log; do
            [ -e "$log" ] || continue
            name=$(basename "$log" .log)
            sed 's/^\[0\] //' "$log" | awk -v name="${name#step-}" \
                '$1 == 67108864 && $3 == "of" { print "goal: " name ": 64 MiB out of place, " \
                 "blocking call added " $7 " us, " $8 " of raw NCCL (goal: under 2%)" }'
        done
    fi
    step nccl-abort 30 "$PY" "$REPO/tests/gpu/nccl_abort.py"
    step nccl-ordering 60 "$PY" "$REPO/tests/gpu/torch_cuda_job.py"
    step nccl-2-shared 100 bash "$REPO/tests/gpu/nccl_shared_gpu.sh" "$RUN" \
        "$BUNDLE/bin/dt_conformance"
    unset DISTTRAIN_MEMORY DISTTRAIN_DEVICE_TRANSPORT DISTTRAIN_NCCL_LIBRARY
fi

# 4. Device memory staged through the host on 2 ranks sharing the GPU.
DISTTRAIN_MEMORY=cuda step conformance 90 "$RUN" -np 2 -- \
    "$BUNDLE/bin/dt_conformance" --device
if [ -e "$BUNDLE/data/train-images-idx3-ubyte.gz" ]; then
    DISTTRAIN_COMPUTE=cudnn step mlp 60 "$RUN" -np 2 -- "$BUNDLE/bin/disttrain-train" \
        --model mlp --epochs 2 --data-dir "$BUNDLE/data" --print-checksum --no-progress \
        --metrics-file /tmp/mlp-metrics.jsonl
    cat /tmp/mlp-metrics.jsonl 2>/dev/null
else # a --reference bundle carries no Fashion-MNIST: synthetic data
    DISTTRAIN_COMPUTE=cudnn step mlp 60 "$RUN" -np 2 -- "$BUNDLE/bin/disttrain-bench" \
        --model mlp --batch-size 100 --num-iters 30 --print-checksum
fi
same_checksums mlp 2 || { echo "STEP mlp-identical: FAIL"; failed=1; }
DISTTRAIN_COMPUTE=cudnn step resnet20 60 "$RUN" -np 2 -- "$BUNDLE/bin/disttrain-bench" \
    --model resnet20 --batch-size 64 --num-warmup 2 --num-iters 30 --print-checksum
same_checksums resnet20 2 || { echo "STEP resnet20-identical: FAIL"; failed=1; }
first=$(grep -so "loss [0-9.]*" /tmp/step-resnet20.log | head -1)
last=$(grep -so "loss [0-9.]*" /tmp/step-resnet20.log | tail -1)
[ -n "$first" ] && echo "resnet20 $first -> $last"
DISTTRAIN_MEMORY=cuda step torch-cuda 60 "$RUN" -np 2 -- "$PY" \
    "$REPO/tests/gpu/torch_cuda_job.py"

# 5. ResNet-50 on 2 ranks sharing the GPU, staged, beside PyTorch DDP over gloo. With
# each rank's timeline (Chrome trace JSON) in $OUT, where the staging time goes.
DISTTRAIN_TIMELINE="${OUT:-/tmp}/resnet50-2-{rank}.json" DISTTRAIN_COMPUTE=cudnn \
    step resnet50-2 90 "$RUN" -np 2 -- "$BUNDLE/bin/disttrain-bench" \
    --model resnet50 --batch-size 64 --num-warmup 3 --num-iters 20
# Negotiated instead of ordered: small gradients are fused, one staging copy per batch.
DISTTRAIN_ORDERED=0 DISTTRAIN_COMPUTE=cudnn step resnet50-2n 90 "$RUN" -np 2 -- \
    "$BUNDLE/bin/disttrain-bench" --model resnet50 --batch-size 64 --num-warmup 3 \
    --num-iters 20
step torch-resnet50-2 120 "$PY" "$REPO/tests/gpu/torch_bench.py" --batch-size 64 --ranks 2
one=$(rate_of r50-default)
two=$(grep -so "images/sec total on 2 workers: [0-9.]*" /tmp/step-resnet50-2.log | grep -o "[0-9.]*$")
twon=$(grep -so "images/sec total on 2 workers: [0-9.]*" /tmp/step-resnet50-2n.log | grep -o "[0-9.]*$")
t1=$(grep -so "torch resnet50 default ranks=1 batch=64 images/sec total: [0-9.]*" /tmp/step-torch-r50.log | grep -o "[0-9.]*$")
t2=$(grep -so "images/sec total: [0-9.]*" /tmp/step-torch-resnet50-2.log | grep -o "[0-9.]*$")
echo "=== 2 ranks on one GPU (images/sec total, synthetic ResNet-50, batch 64 per rank)"
echo "disttrain 1 rank: ${one:-?}  2 ranks (staging): ${two:-?} ordered, ${twon:-?} negotiated"
echo "pytorch   1 proc: ${t1:-?}  2 ranks (DDP gloo): ${t2:-?}"
echo "RESULT: $([ $failed -eq 0 ] && echo every step passed || echo some step FAILED)"
exit $failed
