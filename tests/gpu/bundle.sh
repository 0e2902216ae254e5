#!/bin/bash
# Packs what tests/gpu/run.sh needs from this build into one folder (default
# .gpu-bundle, ignored by git) for a GPU machine that has CUDA and PyTorch but none of
# Debian's libraries: the library, the programs, the plugins (tcp, cuDNN, the CUDA memory
# provider), Fashion-MNIST, and libcrypto as a fallback. About 35 MiB.
#
#     ./scripts/build.sh && bash tests/gpu/bundle.sh [build] [.gpu-bundle]
set -eu
REPO=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "${1:-$REPO/build}" && pwd)
DEST=${2:-$REPO/.gpu-bundle}
rm -rf "$DEST"
mkdir -p "$DEST"/{bin,lib,plugins,data,fallback}
need() { [ -e "$1" ] || { echo "bundle.sh: $1 is missing: build it first" >&2; exit 1; }; }
for f in core/launch/disttrainrun models/programs/disttrain-bench \
         models/programs/disttrain-train tests/plugins/conformance/dt_conformance \
         tests/plugins/cuda/cuda_memory_gpu_test; do
    need "$BUILD/$f"; cp "$BUILD/$f" "$DEST/bin/"
done
need "$BUILD/core/libdisttrain.so.1"
cp -L "$BUILD/core/libdisttrain.so.1" "$DEST/lib/"
for f in transport/tcp/libdt-transport-tcp.so compute/cudnn/libdt-compute-cudnn.so \
         memory/cuda/libdt-memory-cuda.so; do
    need "$BUILD/plugins/$f"; cp "$BUILD/plugins/$f" "$DEST/plugins/"
done
cp /usr/share/datasets/fashion-mnist/*.gz "$DEST/data/"
cp -L /lib/x86_64-linux-gnu/libcrypto.so.3 "$DEST/fallback/"
grep -qx '/.gpu-bundle/' "$REPO/.gitignore" 2>/dev/null ||
    echo "bundle.sh: note: add /.gpu-bundle/ to .gitignore so it never lands in git" >&2
du -sh "$DEST"
