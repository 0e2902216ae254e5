#!/usr/bin/env bash
# The main job: a 2-rank data-parallel run on the embedded defaults (TCP transport).
# Until the trainer lands this is the allreduce benchmark across 2 processes.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${DISTTRAIN_BUILD_DIR:-$repo/build}
"$repo/scripts/install-deps.sh"
"$repo/scripts/build.sh" >/dev/null
export DISTTRAIN_TRANSPORT=${DISTTRAIN_TRANSPORT:-tcp}
exec "$build/core/launch/disttrainrun" -np 2 -- \
  "$build/models/tools/disttrain-perf" -c allreduce -d float -o sum -b 4 -e 64M -f 4 "$@"
