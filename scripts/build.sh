#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Configures (once) and builds the project in ./build (or $DISTTRAIN_BUILD_DIR).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${DISTTRAIN_BUILD_DIR:-$repo/build}
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" "$repo" "$@"
fi
ninja -C "$build"
