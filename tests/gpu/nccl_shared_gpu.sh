#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# tests/gpu/run.sh's step "nccl-2-shared": 2 ranks of the nccl transport on the one GPU.
# NCCL up to 2.29 refuses two ranks on one GPU ("Duplicate GPU detected"): then the job
# must fail fast and say so; a newer NCCL that allows it must run the conformance suite.
#
#     bash tests/gpu/nccl_shared_gpu.sh DISTTRAINRUN DT_CONFORMANCE
set -u
RUN=$1 CONFORMANCE=$2
start=$SECONDS
log=/tmp/nccl-shared-gpu.log
timeout -k 5 90 "$RUN" -np 2 --timeout 80 -- "$CONFORMANCE" --device --no-large >"$log" 2>&1
rc=$?
took=$((SECONDS - start))
tail -20 "$log"
if [ "$rc" -eq 0 ]; then
    echo "nccl-2-shared: 2 ranks ran on one GPU (this NCCL allows it) in ${took} s"
    exit 0
fi
if grep -q "Duplicate GPU\|share one GPU" "$log" && [ "$took" -lt 30 ]; then
    echo "nccl-2-shared: refused cleanly in ${took} s (NCCL takes one rank per GPU)"
    exit 0
fi
echo "nccl-2-shared: failed after ${took} s (exit $rc) without naming the shared GPU"
exit 1
