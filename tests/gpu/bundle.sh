#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Packs what tests/gpu/run.sh needs from this build into one folder (default
# .gpu-bundle, ignored by git) for a GPU machine that has CUDA and PyTorch but none of
# Debian's libraries: the library, the programs, the plugins (tcp, cuDNN, the CUDA memory
# provider), Fashion-MNIST, and libcrypto as a fallback. About 38 MiB.
#
#     ./scripts/build.sh && bash tests/gpu/bundle.sh [--reference] [build] [.gpu-bundle]
#
# --reference swaps Fashion-MNIST (30 MiB) for the oneDNN plugin and its libraries
# (42 MiB), so that run.sh also checks the cuDNN plugin against oneDNN operation by
# operation (compute_cudnn_gtest); the carried folder must stay under 64 MiB. run.sh
# then trains the mlp on synthetic data.
set -eu
REFERENCE=0
if [ "${1:-}" = "--reference" ]; then REFERENCE=1; shift; fi
REPO=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "${1:-$REPO/build}" && pwd)
DEST=${2:-$REPO/.gpu-bundle}
rm -rf "$DEST"
mkdir -p "$DEST"/{bin,lib,plugins,data,fallback}
need() { [ -e "$1" ] || { echo "bundle.sh: $1 is missing: build it first" >&2; exit 1; }; }
for f in core/launch/disttrainrun models/programs/disttrain-bench \
         models/programs/disttrain-train tests/plugins/conformance/dt_conformance \
         tests/plugins/cuda/cuda_memory_gpu_test tests/bench/compute/residual_end_bench; do
    need "$BUILD/$f"; cp "$BUILD/$f" "$DEST/bin/"
done
need "$BUILD/core/libdisttrain.so.1"
cp -L "$BUILD/core/libdisttrain.so.1" "$DEST/lib/"
for f in transport/tcp/libdt-transport-tcp.so compute/cudnn/libdt-compute-cudnn.so \
         memory/cuda/libdt-memory-cuda.so; do
    need "$BUILD/plugins/$f"; cp "$BUILD/plugins/$f" "$DEST/plugins/"
done
# The nccl device transport, where nccl.h was found at build time (run.sh skips it else).
if [ -e "$BUILD/plugins/transport/nccl/libdt-transport-nccl.so" ]; then
    cp "$BUILD/plugins/transport/nccl/libdt-transport-nccl.so" "$DEST/plugins/"
    cp "$BUILD/tests/bench/nccl_overhead" "$DEST/bin/"
fi
if [ $REFERENCE = 1 ]; then
    need "$BUILD/plugins/compute/onednn/libdt-compute-onednn.so"
    need "$BUILD/tests/compute/compute_cudnn_gtest"
    cp "$BUILD/plugins/compute/onednn/libdt-compute-onednn.so" "$DEST/plugins/"
    cp "$BUILD/tests/compute/compute_cudnn_gtest" "$DEST/bin/"
    cp -L /usr/lib/x86_64-linux-gnu/libdnnl.so.2 /usr/lib/x86_64-linux-gnu/libgomp.so.1 \
        /lib/x86_64-linux-gnu/libOpenCL.so.1 \
        "$DEST/lib/"
else
    cp /usr/share/datasets/fashion-mnist/*.gz "$DEST/data/"
fi
cp -L /lib/x86_64-linux-gnu/libcrypto.so.3 "$DEST/fallback/"
grep -qx '/.gpu-bundle/' "$REPO/.gitignore" 2>/dev/null ||
    echo "bundle.sh: note: add /.gpu-bundle/ to .gitignore so it never lands in git" >&2
du -sh "$DEST"
