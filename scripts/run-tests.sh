#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs every test suite (C/C++ through meson, Python through pytest) and ends with one
# line "N passed, N failed, N skipped" counting them all. Exits non-zero if any failed.
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${DISTTRAIN_BUILD_DIR:-$repo/build}
export DISTTRAIN_BUILD_DIR=$build
"$repo/scripts/install-deps.sh" || { echo "0 passed, 1 failed"; exit 1; }
if ! "$repo/scripts/build.sh"; then
  echo "build failed"
  echo "0 passed, 1 failed"
  exit 1
fi

reports=$build/test-reports
rm -rf "$reports" && mkdir -p "$reports"

# The Debian packaging suite (a second compile, in a copy of the tree, then the packages
# installed into a Debian 12 root and run there) runs beside the suites below at nice 19:
# they leave the CPUs idle much of the time (jobs that wait out timeouts), and at that
# priority it takes little more than the idle time; its jobs have minutes to finish. It
# runs in a session of its own, so that an interrupted run can stop it whole; with
# kernel.sched_autogroup_enabled the scheduler shares CPUs between sessions first, so that
# session's autogroup gets nice 19 too (else the build would take half the CPUs).
packaging_out=$build/packaging.out
setsid bash -c 'echo 19 >/proc/self/autogroup 2>/dev/null; exec nice -n 19 "$@"' packaging \
  "$repo/scripts/packaging-tests.sh" "$reports" >"$packaging_out" 2>&1 </dev/null &
packaging=$!
trap 'kill -- -$packaging 2>/dev/null' EXIT

echo "== C/C++ suites (meson test)"
meson test -C "$build" --print-errorlogs --num-processes 2 --timeout-multiplier 2
cp "$build/meson-logs/testlog.junit.xml" "$reports/meson.junit.xml" 2>/dev/null

echo "== Python suites (pytest)"
(cd "$repo" && /usr/bin/python3 -m pytest -q -rs -p no:cacheprovider \
   --junitxml="$reports/pytest.junit.xml" tests)
rc=$?
# pytest exits 5 when it collected nothing; the summary below counts that as zero.
[ $rc -eq 5 ] && echo "pytest: no Python tests collected"

echo "== Rust suites (cargo test --offline)"
"$repo/scripts/rust-tests.sh" "$reports"

echo "== Debian packages (beside the suites above): build, lintian, install into a Debian 12 root"
wait $packaging # its failures are in its reports
trap - EXIT
cat "$packaging_out"

/usr/bin/python3 "$repo/scripts/summarize_tests.py" "$reports"
