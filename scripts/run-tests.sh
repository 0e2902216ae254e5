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

# The Python modules whose jobs mostly wait (marker `waits`, tests/conftest.py: a stopped
# rank's timeout, a launcher's teardown; under 30% of the CPUs) run as a second pytest
# beside the C/C++ suites and the other Python ones, whose CPU they barely take.
pytest_waits_out=$build/pytest.waits.out
# pytest's exits other than 0, 1 (tests failed) and 5 (nothing collected) mean it stopped
# short (interrupted, internal or usage error): one failed case says so in the summary.
pytest_exit() { # RC NAME OUTPUT
  case $1 in 0|1|5) return ;; esac
  /usr/bin/python3 "$repo/scripts/tap_to_junit.py" "$2" "$reports/$2.exit.junit.xml" \
    --fail "pytest exited with $1" "$3"
}
(cd "$repo" && exec /usr/bin/python3 -m pytest -q -rs -p no:cacheprovider -m waits \
   --junitxml="$reports/pytest.waits.junit.xml" tests) >"$pytest_waits_out" 2>&1 </dev/null &
pytest_waits=$!
trap 'kill -- -$packaging 2>/dev/null; kill $pytest_waits 2>/dev/null' EXIT

echo "== C/C++ suites (meson test)"
meson test -C "$build" --print-errorlogs --num-processes 2 --timeout-multiplier 2
cp "$build/meson-logs/testlog.junit.xml" "$reports/meson.junit.xml" 2>/dev/null

echo "== Python suites (pytest), all but the waiting ones"
pytest_out=$build/pytest.out
(cd "$repo" && /usr/bin/python3 -m pytest -q -rs -p no:cacheprovider -m "not waits" \
   --junitxml="$reports/pytest.junit.xml" tests) 2>&1 | tee "$pytest_out"
pytest_exit "${PIPESTATUS[0]}" pytest "$pytest_out"

echo "== Rust suites (cargo test --offline)"
"$repo/scripts/rust-tests.sh" "$reports"

echo "== Python suites (pytest), the waiting ones (beside the suites above)"
wait $pytest_waits # its failures are in its report
rc=$?
cat "$pytest_waits_out"
pytest_exit $rc pytest.waits "$pytest_waits_out"

echo "== Debian packages (beside the suites above): build, lintian, install into a Debian 12 root"
wait $packaging # its failures are in its reports
trap - EXIT
cat "$packaging_out"

/usr/bin/python3 "$repo/scripts/summarize_tests.py" "$reports"
