#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The install test of the Debian packages: `apt-get install ./*.deb` into a throwaway
# Debian 12 root (mmdebstrap, root mode) whose other packages come from the host's Debian
# sources, then tests/packaging/installed_checks.sh in that root. Writes
# REPORTS/packaging.junit.xml with one testcase per check and prints how long it took.
#
#   scripts/deb-install-test.sh REPORTS [DEBS]    (DEBS: default build/debs)
#
# Skips, saying why, where it cannot run: not root, no mmdebstrap (install-deps.sh
# packaging), no Debian 12 source on the host, or the archive unreachable. Packages
# already in the host's /var/cache/apt/archives are hard-linked in, not downloaded.
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
reports=${1:?usage: scripts/deb-install-test.sh REPORTS [DEBS]}
debs=$(cd "${2:-${DISTTRAIN_BUILD_DIR:-$repo/build}/debs}" 2>/dev/null && pwd) || debs=""
mkdir -p "$reports"
junit=$reports/packaging.junit.xml
suite=packaging.install
to_junit() { /usr/bin/python3 "$repo/scripts/tap_to_junit.py" "$suite" "$junit" "$@"; }
skip() { echo "deb-install-test: SKIPPED: $*"; to_junit --skip "$*"; exit 0; }

[ "$(id -u)" -eq 0 ] || skip "needs root for mmdebstrap --mode=root"
command -v mmdebstrap >/dev/null || skip "mmdebstrap is missing: scripts/install-deps.sh packaging"
if [ -z "$debs" ] || ! ls "$debs"/*.deb >/dev/null 2>&1; then
  echo "deb-install-test: no .deb in ${2:-build/debs}: run scripts/build-debs.sh first"
  to_junit --fail "packages to install" /dev/null
  exit 1
fi

work=$(mktemp -d /var/tmp/disttrain-install-test.XXXXXX)
# --one-file-system: nothing mounted into the root (if mmdebstrap died before unmounting)
# is ever followed.
trap 'rm -rf --one-file-system "$work"' EXIT

# The host's Debian 12 entries only: other repositories' keys are not in the new root.
/usr/bin/python3 - "$work/bookworm.list" <<'PY' || skip "no Debian 12 (bookworm) entry in the host's /etc/apt sources"
import glob, re, sys
lines = []
for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
    for stanza in re.split(r"\n\s*\n", open(path).read()):
        fields = {}
        for m in re.finditer(r"^([A-Za-z-]+):[ \t]*(.*(?:\n[ \t]+.*)*)", stanza, re.M):
            fields[m.group(1).lower()] = m.group(2).split()
        if fields.get("enabled", ["yes"])[0] == "no" or "deb" not in fields.get("types", []):
            continue
        signed = fields.get("signed-by", [])
        option = f"[signed-by={signed[0]}] " if len(signed) == 1 else ""
        for uri in fields.get("uris", []):
            for suite in fields.get("suites", []):
                lines.append(f"deb {option}{uri} {suite} {' '.join(fields.get('components', []))}")
for path in ["/etc/apt/sources.list"] + sorted(glob.glob("/etc/apt/sources.list.d/*.list")):
    try:
        lines += [l.strip() for l in open(path) if l.strip().startswith("deb ")]
    except OSError:
        pass
keep = [l for l in lines if re.search(r"\sbookworm(-updates|-security)?\s", l)]
if not keep:
    sys.exit(1)
open(sys.argv[1], "w").write("\n".join(keep) + "\n")
PY
first=$(awk '{for (i = 2; i <= NF; i++) if ($i !~ /^\[/) {print $i "/dists/" $(i + 1) "/InRelease"; exit}}' \
        "$work/bookworm.list")
timeout 60 /usr/lib/apt/apt-helper download-file "$first" "$work/InRelease" >/dev/null 2>&1 ||
  skip "the Debian archive is unreachable ($first)"

mkdir -p "$work/files"
cp "$repo/tests/packaging/installed_checks.sh" "$repo/bindings/c/examples/allreduce_example.c" \
   "$repo/tests/bindings/python/jobs/numpy_job.py" "$work/files/"
cp -r "$repo/tests/packaging/cmake-example" "$work/files/"
export INSTALL_TEST_DEBS=$debs INSTALL_TEST_FILES=$work/files INSTALL_TEST_TAP=$work/checks.tap
# What the checks build and run with besides the packages: compilers, CMake, Open MPI's
# launcher and the data set of disttrain-train.
extra="gcc libc6-dev make pkg-config cmake openmpi-bin dataset-fashion-mnist"

echo "deb-install-test: Debian 12 root in $work/root; installing $(cd "$debs" && echo *.deb)"
start=$(date +%s)
timeout 1500 mmdebstrap --mode=root --variant=apt --format=directory \
  --aptopt='Acquire::Retries "3"' \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
  --setup-hook='mkdir -p "$1/var/cache/apt/archives" && { cp -al /var/cache/apt/archives/*.deb "$1/var/cache/apt/archives/" 2>/dev/null || true; }' \
  --customize-hook='mkdir -p "$1/srv/disttrain/debs" && cp "$INSTALL_TEST_DEBS"/*.deb "$1/srv/disttrain/debs/" && cp -r "$INSTALL_TEST_FILES" "$1/srv/disttrain/files"' \
  --customize-hook="chroot \"\$1\" sh -c 'cd /srv/disttrain/debs && DEBIAN_FRONTEND=noninteractive apt-get install -y -q ./*.deb $extra' > \"\$1/srv/disttrain/apt.log\" 2>&1 || { tail -n 40 \"\$1/srv/disttrain/apt.log\"; exit 1; }" \
  --customize-hook='chroot "$1" /srv/disttrain/files/installed_checks.sh /srv/disttrain/files > "$INSTALL_TEST_TAP" 2>&1 || true' \
  bookworm "$work/root" "$work/bookworm.list" >"$work/mmdebstrap.log" 2>&1
rc=$?
seconds=$(( $(date +%s) - start ))
if [ $rc -ne 0 ]; then
  tail -n 60 "$work/mmdebstrap.log"
  if grep -q "Failed to fetch\|Temporary failure resolving\|Could not connect" "$work/mmdebstrap.log"; then
    skip "the Debian archive failed half-way (see the log above)"
  fi
  echo "deb-install-test: the root could not be made or the packages not installed (${seconds} s)"
  to_junit --fail "apt-get install ./*.deb into a Debian 12 root" "$work/mmdebstrap.log"
  exit 1
fi
cat "$INSTALL_TEST_TAP"
echo "deb-install-test: root, install and checks took ${seconds} s"
to_junit "$INSTALL_TEST_TAP"
