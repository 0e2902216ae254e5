#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian packages that the build, the tests and the packaging need, by group.
# Idempotent: apt-get runs only when something is missing.
#
#   scripts/install-deps.sh                 every group (what scripts/run-tests.sh needs)
#   scripts/install-deps.sh --lib           the library, its plugins and programs only
#   scripts/install-deps.sh GROUP...        some groups; --list shows them
set -euo pipefail

declare -A groups
# The library, the plugins Debian has the libraries for, the programs and the Python
# package's install (meson's python module).
groups[build]="meson ninja-build g++ pkg-config python3
  libssl-dev zlib1g-dev libcli11-dev
  libdnnl-dev libucx-dev openmpi-bin libopenmpi-dev"
# The C/C++ and Python suites and the ABI guard (abidw/abidiff: tests/api/abi skips
# without them).
groups[test]="libgtest-dev libbenchmark-dev python3-pytest python3-numpy
  iproute2 openssh-client abigail-tools cmake"
# PyTorch for disttrain.torch and its tests. libopenblas0-openmp: the BLAS behind
# libblas.so.3 that Debian's torch (and numpy) call; without it the reference BLAS serves
# and PyTorch's matmuls run ~10x slower than in any PyTorch build users get elsewhere
# (tests/bench/torch_ddp_compare.py prints which one).
groups[torch]="python3-torch libopenblas0-openmp"
# The Rust binding's crates and their tests.
groups[rust]="cargo"
# Fashion-MNIST for disttrain-train and the main job.
groups[data]="dataset-fashion-mnist"
# Debian packages (scripts/build-debs.sh) and the install test in a throwaway Debian root
# (scripts/deb-install-test.sh).
groups[packaging]="debhelper dh-python help2man lintian mmdebstrap"
# A one-node Slurm cluster for tests/integration/slurm (slurmctld, slurmd, srun, munged),
# and Slurm's PMI2 client that jobs started by srun load at run time.
groups[slurm]="slurm-wlm slurm-client munge libpmi2-0"
order=(build test torch rust data packaging slurm)

usage() {
  sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'
  for g in "${order[@]}"; do printf '  %-10s %s\n' "$g" "$(echo ${groups[$g]})"; done
}

selected=()
for arg in "$@"; do
  case $arg in
    --lib) selected+=(build) ;;
    --all|all) selected+=("${order[@]}") ;;
    --list|-h|--help) usage; exit 0 ;;
    *)
      if [ -z "${groups[$arg]+set}" ]; then
        echo "install-deps.sh: unknown group '$arg'; groups: ${order[*]} (or --lib, --all)" >&2
        exit 2
      fi
      selected+=("$arg") ;;
  esac
done
[ ${#selected[@]} -gt 0 ] || selected=("${order[@]}")

packages=()
for g in "${selected[@]}"; do
  read -r -a more <<<"$(echo ${groups[$g]})"
  packages+=("${more[@]}")
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
