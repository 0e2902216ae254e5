#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the Debian packages of debian/ from the working tree into a folder (default
# build/debs) and checks them with lintian. The build runs in a copy of the tree, so the
# checkout gets no debian/tmp, obj-* or stamp files.
#
#   scripts/build-debs.sh [--out DIR] [--cuda] [--check] [--no-lintian]
#
# By default the test suites are neither built nor run (nocheck: CI runs them from
# ./build) and make runs 2 jobs. --cuda adds the CUDA plugins' packages (build profile
# pkg.disttrain.cuda; needs CUDA and cuDNN under /usr/local/cuda). --check builds and runs
# the suites inside the package build. Prints the time the package build took. Exits 1
# when the build fails, 3 when lintian reports a warning or an error.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
out=${DISTTRAIN_BUILD_DIR:-$repo/build}/debs
profiles=(nocheck)
options=(nocheck)
lintian=1
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=${2:?--out needs a folder}; shift 2 ;;
    --cuda) profiles+=(pkg.disttrain.cuda); shift ;;
    --check) profiles=("${profiles[@]/nocheck}"); options=(); shift ;;
    --no-lintian) lintian=0; shift ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-debs.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
for tool in dpkg-buildpackage dh git; do
  command -v "$tool" >/dev/null || {
    echo "build-debs.sh: $tool is missing: run scripts/install-deps.sh --packaging" >&2
    exit 1
  }
done

version=$(dpkg-parsechangelog -l "$repo/debian/changelog" -S Version)
work=$(mktemp -d "${TMPDIR:-/tmp}/disttrain-debs.XXXXXX")
trap 'rm -rf "$work"' EXIT
src=$work/libdisttrain-$version
mkdir -p "$src"
# The files git knows of or would add (tracked, and new ones not ignored): never ./build.
(cd "$repo" && git ls-files -z --cached --others --exclude-standard |
   tar --null --files-from=- --ignore-failed-read -cf - 2>/dev/null) | tar -xf - -C "$src"

profile_list=$(printf '%s\n' "${profiles[@]}" | grep -v '^$' | paste -sd, || true)
export DEB_BUILD_PROFILES=${profile_list//,/ }
export DEB_BUILD_OPTIONS="${options[*]} parallel=2 ${DEB_BUILD_OPTIONS:-}"
echo "build-debs: dpkg-buildpackage -b (profiles: ${DEB_BUILD_PROFILES:-none}; options: $DEB_BUILD_OPTIONS)"
start=$(date +%s)
if ! (cd "$src" && dpkg-buildpackage -b -uc -us ${profile_list:+-P"$profile_list"} \
        >"$work/build.log" 2>&1); then
  tail -n 60 "$work/build.log"
  mkdir -p "$out" && cp "$work/build.log" "$out/build.log"
  echo "build-debs: dpkg-buildpackage failed; the whole log is $out/build.log" >&2
  exit 1
fi
seconds=$(( $(date +%s) - start ))

mkdir -p "$out"
# Only what an earlier run put there: --out may name a folder that holds other files.
rm -f "$out"/*.deb "$out"/dbgsym/*.deb "$out"/*.changes "$out"/*.buildinfo "$out"/lintian.txt
# The debug symbols go to dbgsym/, so that `apt-get install ./*.deb` takes the packages.
mkdir -p "$out/dbgsym"
mv "$work"/*-dbgsym_*.deb "$out/dbgsym/" 2>/dev/null || true
cp "$work"/*.deb "$work"/*.changes "$work"/*.buildinfo "$work/build.log" "$out/"
echo "build-debs: built in ${seconds} s into $out:"
(cd "$out" && for deb in *.deb; do
   printf '  %-60s %6s KiB installed\n' "$deb" "$(dpkg-deb -f "$deb" Installed-Size)"
 done)

if [ "$lintian" -eq 1 ]; then
  echo "build-debs: lintian"
  # Warnings and errors fail (exit 3, apart from a failed build's 1); info tags are
  # printed only. Overrides: debian/*.lintian-overrides, each with its reason.
  if ! lintian --fail-on error,warning --display-info "$out"/*.deb \
       $(ls "$out"/dbgsym/*.deb 2>/dev/null) >"$out/lintian.txt" 2>&1; then
    cat "$out/lintian.txt"
    echo "build-debs: lintian found warnings or errors ($out/lintian.txt)" >&2
    exit 3
  fi
  cat "$out/lintian.txt"
  echo "build-debs: lintian: no warning or error"
fi
