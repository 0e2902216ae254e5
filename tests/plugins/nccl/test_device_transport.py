# SPDX-License-Identifier: Apache-2.0
"""A device transport beside the host transport (DISTTRAIN_DEVICE_TRANSPORT=nccl): device
memory of the fake device goes over the NCCL plugin's native collectives, here on the
test-only NCCL and CUDA runtime mocks (which move fake-device memory through its shadow),
one rank, since the mocks move no data between processes. Setting errors fail create
naming the variable. Every job has a hard timeout."""
import os
import re

import pytest

from conftest import BUILD, clean_env, run

NCCL = BUILD / "plugins" / "transport" / "nccl"
MOCKS = BUILD / "tests" / "plugins" / "nccl"
FAKE = BUILD / "tests" / "plugins" / "fakedevice"
CONFORMANCE = BUILD / "tests" / "plugins" / "conformance" / "dt_conformance"
WORKER = BUILD / "tests" / "integration" / "dt_worker"

pytestmark = pytest.mark.skipif(
    not (NCCL / "libdt-transport-nccl.so").exists() or
    not (MOCKS / "libnccl-mock.so").exists() or
    not (FAKE / "libdt-memory-fakedevice.so").exists(),
    reason="the NCCL transport (needs nccl.h under /usr/local/cuda), its mocks or the fake "
           "device were not built")


def env(extra=None):
    e = clean_env({
        "DISTTRAIN_PLUGIN_PATH": f"{BUILD / 'plugins/transport/tcp'}:{NCCL}:{FAKE}",
        "DISTTRAIN_TRANSPORT": "tcp", "DISTTRAIN_MEMORY": "fakedevice",
        "DISTTRAIN_DEVICE_TRANSPORT": "nccl",
        "DISTTRAIN_NCCL_LIBRARY": str(MOCKS / "libnccl-mock.so"),
        "DISTTRAIN_CUDA_RUNTIME_LIBRARY": str(MOCKS / "libcudart-mock.so"),
        "DISTTRAIN_TIMEOUT": "30"})
    e.update(extra or {})
    return e


@pytest.mark.parametrize("mode", [{}, {"DISTTRAIN_ORDERED": "1"},
                                  {"DISTTRAIN_FAKE_DEVICE_DELAY_US": "100"}],
                         ids=["negotiated", "ordered", "slowcopies"])
def test_device_memory_runs_on_the_device_transport(mode):
    r = run([CONFORMANCE, "--device", "--no-large"],
            env=env({"DISTTRAIN_LOG_LEVEL": "debug", **mode}), timeout=120)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-6000:]
    assert "PASS ranks=1 transport=tcp memory=fakedevice" in r.stdout
    paths = {}
    for kind, memory, path in re.findall(
            r"routing: (\w+) '[^']*' \(\d+ B, \d+ ranks, (\w+) memory\): (\w+)", r.stderr):
        paths.setdefault(memory, set()).add(path)
    assert paths.get("device") == {"device_native"}, paths
    assert "device_native" not in paths.get("host", set()), paths


@pytest.mark.parametrize("extra,status,words", [
    ({"DISTTRAIN_MEMORY": "none"}, "DT_ERR_INVALID_CONFIG", "needs a memory provider"),
    ({"DISTTRAIN_DEVICE_TRANSPORT": "tcp"}, "DT_ERR_INVALID_CONFIG",
     "runs no collective on device memory"),
    ({"DISTTRAIN_DEVICE_TRANSPORT": "nccl,tcp"}, "DT_ERR_INVALID_CONFIG",
     "must name one device transport"),
    ({"DISTTRAIN_CUDA_RUNTIME_LIBRARY": "", "DISTTRAIN_NCCL_LIBRARY": ""},
     "DT_ERR_UNSUPPORTED", "no GPU"),  # this machine's real CUDA runtime: no driver
], ids=["no_provider", "host_transport", "two_names", "no_gpu"])
def test_a_bad_device_transport_fails_create_naming_the_variable(extra, status, words):
    if words == "no GPU" and os.path.exists("/dev/nvidia0"):
        pytest.skip("a GPU is present: the real libraries would start NCCL")
    r = run([WORKER, "info"], env=env(extra), timeout=60)
    assert r.returncode != 0, r.stdout
    assert status in r.stderr and words in r.stderr, r.stderr
    assert "DISTTRAIN_DEVICE_TRANSPORT=" in r.stderr or \
        "DISTTRAIN_DEVICE_TRANSPORT='" in r.stderr, r.stderr
