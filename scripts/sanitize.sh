#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the project with AddressSanitizer and UBSan in ./build-sanitize (or $1) and runs
# the C/C++ suites and the multi-process engine and launcher tests against it.
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$repo/build-sanitize}
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" "$repo" -Db_sanitize=address,undefined -Db_lundef=false \
    -Dbuildtype=debugoptimized >/dev/null || exit 1
fi
ninja -C "$build" || exit 1
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export LSAN_OPTIONS=suppressions=$repo/scripts/lsan.supp
# The cuDNN test runs without leak checking: with no GPU the CUDA runtime it loads keeps
# a few allocations, and once the plugin is unloaded LeakSanitizer cannot even name the
# library (frames show as "<unknown module>"), so no suppression can match them.
# Address and undefined-behaviour errors still fail it.
tests=$(meson test -C "$build" --list 2>/dev/null | sed -n 's/^libdisttrain:[^ ]* \/ //p' |
        grep -vx compute_cudnn_gtest)
# shellcheck disable=SC2086
meson test -C "$build" --print-errorlogs --num-processes 2 --timeout-multiplier 4 $tests ||
  exit 1
ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 meson test -C "$build" --print-errorlogs \
  compute_cudnn_gtest || exit 1
# Left out or relaxed, and why:
# - test_no_memory_growth_over_10000_steps: ASan's quarantine holds freed memory (up to
#   256 MiB), so resident memory grows by design; the normal suite measures it.
# - tests with mpi in their name run with leak checking off: Open MPI's components keep
#   allocations at exit, from libraries unloaded by then that LeakSanitizer cannot name.
cd "$repo" || exit 1
export DISTTRAIN_BUILD_DIR=$build
suites=(tests/integration tests/plugins/conformance)
/usr/bin/python3 -m pytest -q -p no:cacheprovider "${suites[@]}" \
  -k "not test_no_memory_growth_over_10000_steps and not mpi" || exit 1
ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 /usr/bin/python3 -m pytest -q \
  -p no:cacheprovider "${suites[@]}" -k "mpi"
