# SPDX-License-Identifier: Apache-2.0
"""disttrain-train on the fake device (DISTTRAIN_COMPUTE=fakedevice): the trainer's tensors
are memory the CPU cannot touch, so a run that finishes shows that no host code of the
library or the trainer read a device pointer; the parameters it ends with must be the
oneDNN plugin's bit for bit (the fake computes with it), and, with two ranks, the same on
both ranks.
"""
import pathlib
import re

import pytest

from conftest import BUILD, build_path, run

DATA = pathlib.Path("/usr/share/datasets/fashion-mnist")
ONEDNN = BUILD / "plugins" / "compute" / "onednn"
TCP = BUILD / "plugins" / "transport" / "tcp"
FAKE = BUILD / "tests" / "plugins" / "fakedevice"

pytestmark = [
    pytest.mark.skipif(not (FAKE / "libdt-compute-fakedevice.so").exists(),
                       reason="the fake-device compute plugin was not built (it needs "
                              "the oneDNN plugin)"),
    pytest.mark.skipif(not (DATA / "train-images-idx3-ubyte.gz").exists(),
                       reason="Fashion-MNIST is not installed (apt-get install "
                              "dataset-fashion-mnist)"),
]

ENV = {"DISTTRAIN_PLUGIN_PATH": f"{TCP}:{FAKE}:{ONEDNN}", "DISTTRAIN_TIMEOUT": "60",
       "DISTTRAIN_LOG_LEVEL": "warn",
       "DISTTRAIN_FAKE_DEVICE_COMPUTE": str(ONEDNN / "libdt-compute-onednn.so")}
HOST = {"DISTTRAIN_COMPUTE": "onednn"}
DEVICE = {"DISTTRAIN_COMPUTE": "fakedevice", "DISTTRAIN_MEMORY": "fakedevice"}
# 2 epochs of 4 steps of 100 images (global batch), 200 test images: seconds per run.
ARGS = ["--model", "mlp", "--epochs", "2", "--lr", "0.05", "--seed", "7", "--train-limit",
        "400", "--test-limit", "200", "--threads", "1", "--no-progress", "--quiet",
        "--print-checksum"]
CHECKSUM = re.compile(r"rank (\d+) model checksum ([0-9a-f]{16})")


@pytest.fixture(scope="module")
def train():
    return build_path("models", "programs", "disttrain-train")


def job(disttrainrun, train, ranks, env):
    args = [*ARGS, "--batch-size", str(100 // ranks)]
    cmd = [train, *args] if ranks == 1 else [disttrainrun, "-np", ranks, "--", train, *args]
    return run(cmd, env={**ENV, **env}, timeout=180)


def checksums(result, ranks):
    found = {int(r): h for r, h in CHECKSUM.findall(result.stdout)}
    assert sorted(found) == list(range(ranks)), result.stdout + result.stderr
    return found


def test_one_rank_on_the_fake_device_ends_with_the_onednn_parameters(disttrainrun, train):
    host = job(disttrainrun, train, 1, HOST)
    assert host.returncode == 0, host.stderr
    device = job(disttrainrun, train, 1, DEVICE)
    assert device.returncode == 0, device.stderr
    assert "fake device (oneDNN on cpu" in device.stderr
    assert checksums(device, 1) == checksums(host, 1)


# The trainer loads the memory provider the compute plugin names (no DISTTRAIN_MEMORY):
# every collective on its tensors is staged through pinned host memory, ordered (the
# trainer's default, one call at a time) and negotiated (device batches fused), with
# copies slow enough that a result used before its copy finished would differ.
@pytest.mark.parametrize("ordered", ["1", "0"])
def test_two_ranks_on_the_fake_device_agree_with_each_other_and_with_onednn(disttrainrun,
                                                                           train, ordered):
    host = job(disttrainrun, train, 2, {**HOST, "DISTTRAIN_ORDERED": ordered})
    assert host.returncode == 0, host.stderr
    expected = checksums(host, 2)
    assert expected[0] == expected[1]
    device = job(disttrainrun, train, 2,
                 {"DISTTRAIN_COMPUTE": "fakedevice", "DISTTRAIN_ORDERED": ordered,
                  "DISTTRAIN_FAKE_DEVICE_DELAY_US": "50"})
    assert device.returncode == 0, device.stderr
    assert checksums(device, 2) == expected


# resnet20 (synthetic images, disttrain-bench) in both layouts: its batch norms with ReLU
# fused and its residual add + ReLU are composed by the core on the fake device (the fake
# plugin offers no fused ops), on memory the CPU cannot touch, and must end with the
# parameters of the oneDNN plugin, which fuses them.
@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
def test_resnet20_on_the_fake_device_ends_with_the_onednn_parameters(layout):
    bench = build_path("models", "programs", "disttrain-bench")
    args = [bench, "--model", "resnet20", "--batch-size", "4", "--threads", "1",
            "--num-warmup", "1", "--num-iters", "2", "--print-checksum"]
    env = {**ENV, "DISTTRAIN_LAYOUT": layout}
    host = run(args, env={**env, **HOST}, timeout=180)
    assert host.returncode == 0, host.stderr
    device = run(args, env={**env, **DEVICE}, timeout=180)
    assert device.returncode == 0, device.stderr
    assert "fake device (oneDNN on cpu" in device.stdout + device.stderr
    assert checksums(device, 1) == checksums(host, 1)
