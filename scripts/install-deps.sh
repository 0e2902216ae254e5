#!/usr/bin/env bash
# Installs the Debian packages the build and the tests need. Idempotent: apt-get runs only
# when something is missing.
set -euo pipefail

packages=(
  meson ninja-build g++ pkg-config
  libssl-dev zlib1g-dev libcli11-dev
  libgtest-dev libbenchmark-dev
  python3 python3-pytest python3-numpy
  openmpi-bin libopenmpi-dev
  iproute2 openssh-client
  cargo python3-torch dataset-fashion-mnist
  libdnnl-dev libucx-dev
  # abidw and abidiff: the ABI guard (tests/api/abi, api/abi/README.md) skips without them.
  abigail-tools
  # The BLAS behind libblas.so.3 that Debian's torch (and numpy) call: without it the
  # reference BLAS serves, and PyTorch's matmuls run ~10x slower than in any PyTorch
  # build users get elsewhere (tests/bench/torch_ddp_compare.py prints which one).
  libopenblas0-openmp
  # A one-node Slurm cluster for tests/integration/slurm (slurmctld, slurmd, srun, munged),
  # and Slurm's PMI2 client that jobs started by srun load at run time.
  slurm-wlm slurm-client munge libpmi2-0
)

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
