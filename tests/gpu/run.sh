#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The checks that need a GPU, in one run of at most ~8 minutes, every step under a
# timeout. Run on a machine with one NVIDIA GPU, CUDA 13, cuDNN 9 (PyTorch's wheels
# bring them) and PyTorch, from the repository root, with the bundle that
# tests/gpu/bundle.sh made on the build machine:
#
#     bash tests/gpu/run.sh [.gpu-bundle]
#
# Steps: the CUDA memory provider on its own; the conformance suite on device memory
# (2 ranks sharing the GPU, staged through pinned host memory); disttrain-train mlp and
# disttrain-bench resnet20 on 2 ranks with the cuDNN plugin (the loss falls, the ranks
# end with bit-identical models); disttrain.torch on CUDA tensors behind a slow producer
# kernel; the nccl device transport (1 rank: every collective and dtype, ordering, abort;
# 2 ranks on the one GPU or NCCL's refusal); ResNet-50 images/sec for 1 and 2 ranks beside
# PyTorch (1 process, and DDP over gloo on 2). Prints "STEP name: PASS|FAIL" lines and the figures; exits 1 if a step
# failed. With $OUT set, the whole log is also written to $OUT/gpu-run.log.
set -u
BUNDLE=$(cd "${1:-.gpu-bundle}" && pwd) || { echo "no bundle: run tests/gpu/bundle.sh"; exit 2; }
REPO=$(cd "$(dirname "$0")/../.." && pwd)
LOG=${OUT:-/tmp}/gpu-run.log
exec > >(tee "$LOG") 2>&1

PY=$(command -v python3)
# CUDA's libraries where PyTorch's wheels put them (or a CUDA install): one search.
libdirs=""
found=$(timeout 60 find /opt /usr/local /usr/lib /root -name libcudnn.so.9 -o \
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
export DISTTRAIN_TRANSPORT=tcp DISTTRAIN_TIMEOUT=120 PYTHONUNBUFFERED=1
RUN="$BUNDLE/bin/disttrainrun"
nvidia-smi -L; nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader
echo "python: $PY ($($PY -c 'import torch; print("torch", torch.__version__)' 2>&1))"

failed=0
step() { # step NAME TIMEOUT COMMAND...: runs it, keeps its output, says PASS or FAIL
    local name=$1 limit=$2; shift 2
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
    n=$(grep -c "model checksum" "/tmp/step-$1.log")
    distinct=$(grep -o "model checksum [0-9a-f]*" "/tmp/step-$1.log" | sort -u | wc -l)
    echo "$1: $n ranks printed checksums, $distinct distinct"
    [ "$n" -eq "$2" ] && [ "$distinct" -eq 1 ]
}

step provider 60 "$BUNDLE/bin/cuda_memory_gpu_test" "$BUNDLE/plugins/libdt-memory-cuda.so"

# The cuDNN plugin against oneDNN, operation by operation (a bundle made --reference).
if [ -x "$BUNDLE/bin/compute_cudnn_gtest" ]; then
    step cudnn-reference 120 "$BUNDLE/bin/compute_cudnn_gtest"
fi

DISTTRAIN_MEMORY=cuda step conformance 200 "$RUN" -np 2 -- \
    "$BUNDLE/bin/dt_conformance" --device

if [ -e "$BUNDLE/data/train-images-idx3-ubyte.gz" ]; then
    DISTTRAIN_COMPUTE=cudnn step mlp 150 "$RUN" -np 2 -- "$BUNDLE/bin/disttrain-train" \
        --model mlp --epochs 2 --data-dir "$BUNDLE/data" --print-checksum --no-progress \
        --metrics-file /tmp/mlp-metrics.jsonl
    cat /tmp/mlp-metrics.jsonl 2>/dev/null
else # a --reference bundle carries no Fashion-MNIST: synthetic data
    DISTTRAIN_COMPUTE=cudnn step mlp 150 "$RUN" -np 2 -- "$BUNDLE/bin/disttrain-bench" \
        --model mlp --batch-size 100 --num-iters 30 --print-checksum
fi
same_checksums mlp 2 || { echo "STEP mlp-identical: FAIL"; failed=1; }

DISTTRAIN_COMPUTE=cudnn step resnet20 150 "$RUN" -np 2 -- "$BUNDLE/bin/disttrain-bench" \
    --model resnet20 --batch-size 64 --num-warmup 2 --num-iters 30 --print-checksum
same_checksums resnet20 2 || { echo "STEP resnet20-identical: FAIL"; failed=1; }
first=$(grep -o "loss [0-9.]*" /tmp/step-resnet20.log | head -1)
last=$(grep -o "loss [0-9.]*" /tmp/step-resnet20.log | tail -1)
echo "resnet20 $first -> $last"

DISTTRAIN_MEMORY=cuda step torch-cuda 150 "$RUN" -np 2 -- "$PY" \
    "$REPO/tests/gpu/torch_cuda_job.py"

# NCCL as the device transport (DISTTRAIN_DEVICE_TRANSPORT=nccl), with the NCCL of
# PyTorch's wheel: every collective and dtype on 1 rank, all on the device_native path;
# ordering behind a slow producer kernel; dt_context_abort in the middle of an allreduce;
# 2 ranks on the one GPU, or NCCL's clean, fast refusal.
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
    DISTTRAIN_LOG_LEVEL=debug step nccl-1 150 "$BUNDLE/bin/dt_conformance" --device
    native=$(grep -c "device memory): device_native" /tmp/step-nccl-1.log)
    # The uneven kinds (allgatherv, alltoallv) have no native collective: always staged.
    staged=$(grep "device memory): staging" /tmp/step-nccl-1.log | grep -vc "allgatherv\|alltoallv")
    echo "nccl-1: $native device calls on device_native, $staged staged (uneven kinds aside)"
    if [ "$native" -eq 0 ] || [ "$staged" -ne 0 ]; then
        echo "STEP nccl-1-native: FAIL"; failed=1
    fi
    step nccl-ordering 150 "$PY" "$REPO/tests/gpu/torch_cuda_job.py"
    step nccl-abort 90 "$PY" "$REPO/tests/gpu/nccl_abort.py"
    step nccl-2-shared 120 bash "$REPO/tests/gpu/nccl_shared_gpu.sh" "$RUN" \
        "$BUNDLE/bin/dt_conformance"
    unset DISTTRAIN_MEMORY DISTTRAIN_DEVICE_TRANSPORT DISTTRAIN_NCCL_LIBRARY
fi

DISTTRAIN_COMPUTE=cudnn step resnet50-1 120 "$BUNDLE/bin/disttrain-bench" \
    --model resnet50 --batch-size 64 --num-warmup 3 --num-iters 20
# With each rank's timeline (Chrome trace JSON) in $OUT, where the staging time goes.
DISTTRAIN_TIMELINE="${OUT:-/tmp}/resnet50-2-{rank}.json" DISTTRAIN_COMPUTE=cudnn \
    step resnet50-2 150 "$RUN" -np 2 -- "$BUNDLE/bin/disttrain-bench" \
    --model resnet50 --batch-size 64 --num-warmup 3 --num-iters 20
# Negotiated instead of ordered: small gradients are fused, one staging copy per batch.
DISTTRAIN_ORDERED=0 DISTTRAIN_COMPUTE=cudnn step resnet50-2n 150 "$RUN" -np 2 -- \
    "$BUNDLE/bin/disttrain-bench" --model resnet50 --batch-size 64 --num-warmup 3 \
    --num-iters 20
step torch-resnet50-1 120 "$PY" "$REPO/tests/gpu/torch_resnet50.py" --batch-size 64
step torch-resnet50-2 150 "$PY" "$REPO/tests/gpu/torch_resnet50.py" --batch-size 64 --ranks 2

echo "=== figures (images/sec total, synthetic ResNet-50, batch 64 per rank)"
one=$(grep -o "images/sec total on 1 workers: [0-9.]*" /tmp/step-resnet50-1.log | grep -o "[0-9.]*$")
two=$(grep -o "images/sec total on 2 workers: [0-9.]*" /tmp/step-resnet50-2.log | grep -o "[0-9.]*$")
twon=$(grep -o "images/sec total on 2 workers: [0-9.]*" /tmp/step-resnet50-2n.log | grep -o "[0-9.]*$")
t1=$(grep -o "images/sec total: [0-9.]*" /tmp/step-torch-resnet50-1.log | grep -o "[0-9.]*$")
t2=$(grep -o "images/sec total: [0-9.]*" /tmp/step-torch-resnet50-2.log | grep -o "[0-9.]*$")
echo "disttrain 1 rank: ${one:-?}  2 ranks (staging): ${two:-?} ordered, ${twon:-?} negotiated"
echo "pytorch   1 proc: ${t1:-?}  2 ranks (DDP gloo): ${t2:-?}"
"$PY" - "$one" "$two" "$t1" "$t2" "$twon" <<'PYEOF'
import sys
v = [float(a) if a else None for a in sys.argv[1:]]
if v[0] and v[1]: print(f"disttrain 2 ranks / 1 rank: {v[1] / v[0]:.2f} ordered")
if v[0] and v[4]: print(f"disttrain 2 ranks / 1 rank: {v[4] / v[0]:.2f} negotiated")
if v[2] and v[3]: print(f"pytorch DDP gloo 2 ranks / 1 process: {v[3] / v[2]:.2f}")
if v[0] and v[2]: print(f"disttrain 1 rank / pytorch 1 process: {v[0] / v[2]:.2f}")
PYEOF
echo "RESULT: $([ $failed -eq 0 ] && echo every step passed || echo some step FAILED)"
exit $failed
