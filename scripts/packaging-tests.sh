#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The packaging suite of scripts/run-tests.sh: builds the Debian packages into
# <build>/debs (scripts/build-debs.sh: nocheck, 2 jobs, lintian), then installs them into a
# throwaway Debian 12 root and runs jobs there (scripts/deb-install-test.sh). Writes
# REPORTS/packaging.build.junit.xml (the build and lintian) and packaging.junit.xml (the
# install checks), and prints how long each part took.
#   scripts/packaging-tests.sh [--build | --install] REPORTS
# --build runs the first part only, and --install the second, on the packages the first
# left in <build>/debs; run-tests.sh runs both beside the other suites.
# DISTTRAIN_PACKAGING_TESTS=0 skips the suite (counted as skipped, with that reason) where
# its few minutes do not fit.
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
parts=both
case ${1:-} in
  --build) parts=build; shift ;;
  --install) parts=install; shift ;;
esac
reports=${1:?usage: scripts/packaging-tests.sh [--build | --install] REPORTS}
build=${DISTTRAIN_BUILD_DIR:-$repo/build}
debs=$build/debs
mkdir -p "$reports" "$build"
if [ "${DISTTRAIN_PACKAGING_TESTS:-1}" = 0 ]; then
  if [ $parts != install ]; then
    echo "packaging: SKIPPED (DISTTRAIN_PACKAGING_TESTS=0)"
    /usr/bin/python3 "$repo/scripts/tap_to_junit.py" packaging \
      "$reports/packaging.junit.xml" --skip "DISTTRAIN_PACKAGING_TESTS=0"
  fi
  exit 0
fi

if [ $parts != install ]; then
  log=$build/build-debs.log
  tap=$build/build-debs.tap
  start=$(date +%s)
  "$repo/scripts/build-debs.sh" --out "$debs" >"$log" 2>&1
  rc=$?
  echo "packaging: build-debs.sh took $(( $(date +%s) - start )) s (exit $rc)"
  cat "$log"
  {
    if [ $rc -eq 1 ] || [ $rc -gt 3 ]; then
      echo "not ok 1 - dpkg-buildpackage -b (nocheck, parallel=2)"
      tail -n 60 "$log" | sed 's/^/# /'
      echo "not ok 2 - lintian: no warning or error # SKIP the packages were not built"
    else
      echo "ok 1 - dpkg-buildpackage -b (nocheck, parallel=2)"
      if [ $rc -eq 3 ]; then
        echo "not ok 2 - lintian: no warning or error"
        sed 's/^/# /' "$debs/lintian.txt"
      else
        echo "ok 2 - lintian: no warning or error"
      fi
    fi
    echo "1..2"
  } >"$tap"
  /usr/bin/python3 "$repo/scripts/tap_to_junit.py" packaging.build \
    "$reports/packaging.build.junit.xml" "$tap"

  if [ $rc -eq 1 ] || [ $rc -gt 3 ]; then
    /usr/bin/python3 "$repo/scripts/tap_to_junit.py" packaging.install \
      "$reports/packaging.junit.xml" --skip "the packages were not built"
    exit 1
  fi
  # lintian's findings (3) fail the suite, but the packages exist: --install goes on.
  [ $parts = build ] && exit $rc
fi

start=$(date +%s)
"$repo/scripts/deb-install-test.sh" "$reports" "$debs"
install_rc=$?
echo "packaging: deb-install-test.sh took $(( $(date +%s) - start )) s"
[ "${rc:-0}" -eq 0 ] && [ $install_rc -eq 0 ]
