#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job: data-parallel training of the mlp (784-1000-1000-10) on Fashion-MNIST by
# 2 ranks over the embedded TCP transport with oneDNN compute. Rank 0 prints a table per
# epoch (and a progress bar on a terminal); metrics go to $build/main-job-metrics.jsonl.
# Extra arguments go to disttrain-train and override the defaults (e.g. --epochs 5, or
# --model convnet --lr 0.05).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${DISTTRAIN_BUILD_DIR:-$repo/build}
"$repo/scripts/install-deps.sh"
"$repo/scripts/build.sh" >/dev/null
export DISTTRAIN_TRANSPORT=${DISTTRAIN_TRANSPORT:-tcp}
export DISTTRAIN_COMPUTE=${DISTTRAIN_COMPUTE:-onednn}
export DISTTRAIN_PLUGIN_PATH=${DISTTRAIN_PLUGIN_PATH:-$build/plugins/transport/tcp:$build/plugins/compute/onednn}
# The CPUs split between the 2 ranks.
threads=$(( $(nproc) / 2 ))
[ "$threads" -ge 1 ] || threads=1
exec "$build/core/launch/disttrainrun" -np 2 -- \
  "$build/models/programs/disttrain-train" --model mlp --epochs 20 --batch-size 100 \
  --lr 0.05 --optimizer momentum --threads "$threads" \
  --metrics-file "$build/main-job-metrics.jsonl" "$@"
