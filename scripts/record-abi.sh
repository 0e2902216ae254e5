#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Re-records the ABI descriptions in api/abi/ from a fresh build, after an intended ABI
# change (api/abi/README.md says when that also needs a version or soname bump). Review
# the diff it prints and commit api/abi/ with the change.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${DISTTRAIN_BUILD_DIR:-$repo/build}
export DISTTRAIN_BUILD_DIR=$build
command -v abidw >/dev/null || { echo "record-abi: abidw missing; run scripts/install-deps.sh" >&2; exit 1; }
"$repo/scripts/build.sh"
ninja -C "$build" record-abi
git -C "$repo" --no-pager diff --stat -- api/abi
