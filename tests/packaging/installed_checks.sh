#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs inside a Debian root where the libdisttrain packages were installed with apt-get,
# and checks them as a user would: no DISTTRAIN_* variable but the transport choice, no
# plugin path, no build tree. Prints TAP ("ok N - name" / "not ok N - name" and the
# output of a failed check as "# " lines); exits non-zero if a check failed.
#
#   installed_checks.sh FILES   (FILES holds allreduce_example.c, numpy_job.py and
#                                cmake-example/ from the source tree)
set -u
files=${1:?usage: installed_checks.sh FILES}
work=$(mktemp -d)
for var in $(env | sed -n 's/^\(DISTTRAIN_[A-Z_]*\)=.*/\1/p'); do unset "$var"; done
# Everything runs as root here; Open MPI refuses that unless told.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
n=0
failed=0

# check NAME COMMAND...: runs COMMAND (a function or program; every job has a
# disttrainrun --timeout, so none can hang), reports ok or not ok with its output.
check() {
  name=$1; shift
  n=$((n + 1))
  if "$@" >"$work/out" 2>&1; then
    echo "ok $n - $name"
  else
    echo "not ok $n - $name (exit $?)"
    sed 's/^/# /' "$work/out" | tail -n 40
    failed=$((failed + 1))
  fi
}

# expect_failure NAME PATTERN COMMAND...: COMMAND must fail and print PATTERN.
expect_failure() {
  name=$1; pattern=$2; shift 2
  n=$((n + 1))
  if "$@" >"$work/out" 2>&1; then
    echo "not ok $n - $name (it succeeded)"
    sed 's/^/# /' "$work/out" | tail -n 20
    failed=$((failed + 1))
  elif grep -q -- "$pattern" "$work/out"; then
    echo "ok $n - $name"
  else
    echo "not ok $n - $name (failed without naming '$pattern')"
    sed 's/^/# /' "$work/out" | tail -n 20
    failed=$((failed + 1))
  fi
}

# perf TRANSPORT LAUNCHER-OPTIONS [EXPECTED]: a checked 2-rank allreduce sweep; its header
# must name the transport that ran (EXPECTED, a grep pattern, default TRANSPORT) and it
# must count no wrong value.
perf() {
  env DISTTRAIN_TRANSPORT="$1" disttrainrun $2 -np 2 --timeout 100 -- \
    disttrain-perf -b 8 -e 1M -f 16 -n 5 -w 1 --check 1 >"$work/perf" 2>&1
  rc=$?
  cat "$work/perf"
  [ "$rc" -eq 0 ] && grep -q "transport ${3:-$1}, " "$work/perf" &&
    grep -q "# Wrong values: 0" "$work/perf"
}

check "disttrain-perf, 2 ranks on tcp" perf tcp ""
check "disttrain-perf, 2 ranks on ucx" perf ucx ""
check "disttrain-perf, 2 ranks on mpi (disttrainrun --launcher mpi)" perf mpi "--launcher mpi"

# on_both_ranks PATTERN COMMAND...: COMMAND succeeds and prints PATTERN once per rank.
on_both_ranks() {
  pattern=$1; shift
  "$@" >"$work/job" 2>&1
  rc=$?
  cat "$work/job"
  [ "$rc" -eq 0 ] && [ "$(grep -c -- "$pattern" "$work/job")" -eq 2 ]
}

cc_example() {
  cc -o "$work/example-pc" "$files/allreduce_example.c" $(pkg-config --cflags --libs disttrain) &&
    on_both_ranks "allreduce_example: OK" disttrainrun -np 2 --timeout 60 -- "$work/example-pc"
}
check "C example built with pkg-config, 2 ranks" cc_example

cmake_example() {
  cmake -S "$files/cmake-example" -B "$work/cmake" -DEXAMPLE_SOURCE="$files/allreduce_example.c" &&
    cmake --build "$work/cmake" &&
    on_both_ranks "allreduce_example: OK" \
      disttrainrun -np 2 --timeout 60 -- "$work/cmake/allreduce_example"
}
check "C example built with CMake find_package(disttrain), 2 ranks" cmake_example

check "import disttrain (the library by its soname)" \
  python3 -c 'import disttrain, sys; disttrain.version(); sys.exit(disttrain.library_path() != "libdisttrain.so.1")'
numpy_job() (
  cd "$work" && on_both_ranks "OK$" env DISTTRAIN_TRANSPORT=tcp \
    disttrainrun -np 2 --timeout 120 -- python3 "$files/numpy_job.py"
)
check "2-rank numpy job (python3-disttrain)" numpy_job

train() {
  env DISTTRAIN_TRANSPORT=tcp disttrainrun -np 2 --timeout 200 -- disttrain-train \
    --model mlp --epochs 1 --batch-size 100 --train-limit 2000 --test-limit 500 --threads 1
}
check "disttrain-train, 2 ranks, 1 short epoch on Fashion-MNIST" train

check "apt-get remove libdisttrain-transport-ucx" \
  apt-get remove -y -q libdisttrain-transport-ucx
expect_failure "DISTTRAIN_TRANSPORT=ucx names the package to install" \
  "install the libdisttrain-transport-ucx package" perf ucx ""
check "DISTTRAIN_TRANSPORT=auto still runs without the ucx package" perf auto "" "[a-tv-z][a-z]*"

echo "1..$n"
rm -rf "$work"
[ "$failed" -eq 0 ]
