# SPDX-License-Identifier: Apache-2.0
"""Conformance of the collectives on every transport plugin that was built.

Runs dt_conformance (every collective x dtype x op x size, blocking and async, checked
against a local reference on every rank) with 1, 2, 3 and 4 ranks. Transports that were
not built are skipped with the reason. Every job has a hard timeout.
"""
import re

import pytest

from conftest import BUILD, build_path, run

# Every transport the project knows; the ones whose plugin is missing from the build
# directory are skipped, so adding a plugin only means adding its name here.
TRANSPORTS = ["tcp", "ucx", "mpi"]
RANK_COUNTS = [1, 2, 3, 4]
# The whole plan runs in a few seconds per job; the limit only turns a hang into a failure.
TIMEOUT_S = 120


def plugin_dir(transport):
    return BUILD / "plugins" / "transport" / transport


def plugin_built(transport):
    return (plugin_dir(transport) / f"libdt-transport-{transport}.so").exists()


def launch_command(transport, ranks):
    program = build_path("tests", "plugins", "conformance", "dt_conformance")
    if transport == "mpi":
        # The MPI transport finds its peers through Open MPI, so mpirun starts the ranks.
        return ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", ranks, program]
    launcher = build_path("core", "launch", "disttrainrun")
    return [launcher, "-np", ranks, "--timeout", TIMEOUT_S - 10, "--", program]


# Shared memory between the ranks of this host (core/shm) on and off. "hier" makes 4
# ranks look like 2 hosts x 2 (DISTTRAIN_SHM_LOCAL_SIZE), so allreduce runs hierarchically:
# shm within each pretend host, the transport between their leaders.
SHM_MODES = {"shm0": {"DISTTRAIN_SHM": "0"}, "shm1": {"DISTTRAIN_SHM": "1"},
             "hier": {"DISTTRAIN_SHM": "1", "DISTTRAIN_SHM_LOCAL_SIZE": "2"}}


def jobs():
    """(transport, ranks, shm) of every job that tests something of its own: shared memory
    plays a part only with 2 ranks or more on the core's algorithms (not MPI's own
    collectives), and the 2 hosts x 2 split needs 4 ranks."""
    for transport in TRANSPORTS:
        for ranks in RANK_COUNTS:
            for shm in sorted(SHM_MODES):
                if shm != "shm1" and (ranks == 1 or transport == "mpi"):
                    continue
                if shm == "hier" and ranks != 4:
                    continue
                yield transport, ranks, shm


@pytest.mark.parametrize("transport,ranks,shm", list(jobs()))
def test_conformance(transport, ranks, shm):
    if not plugin_built(transport):
        pytest.skip(f"transport '{transport}' was not built "
                    f"(no {plugin_dir(transport)}/libdt-transport-{transport}.so)")
    env = {"DISTTRAIN_TRANSPORT": transport,
           "DISTTRAIN_PLUGIN_PATH": str(plugin_dir(transport)),
           "DISTTRAIN_TIMEOUT": "60", **SHM_MODES[shm]}
    result = run(launch_command(transport, ranks), env=env, timeout=TIMEOUT_S)
    output = result.stdout + result.stderr
    assert result.returncode == 0, (
        f"dt_conformance failed on {transport} with {ranks} ranks "
        f"(exit {result.returncode}):\n{output[-8000:]}")
    summary = [line for line in result.stdout.splitlines() if "dt_conformance:" in line]
    assert summary, f"no summary line in the output:\n{output[-4000:]}"
    assert f"PASS ranks={ranks} transport={transport}" in summary[-1], summary[-1]
    assert "failed=0" in summary[-1], summary[-1]


def test_conformance_rejects_unknown_flags():
    """A typo in the suite's own flags is an error, not a silently shorter run."""
    program = build_path("tests", "plugins", "conformance", "dt_conformance")
    result = run([program, "--no-such-flag"], timeout=30)
    assert result.returncode == 2
    assert "--no-such-flag" in result.stderr


# Device memory: the same plan on buffers of the fake device (tests/plugins/fakedevice),
# whose memory the CPU cannot touch, so every call must go through staging. Its copies
# take a delay, so a result read before its copy has finished is caught too.
FAKE_DEVICE_DIR = BUILD / "tests" / "plugins" / "fakedevice"
DEVICE_MODES = {
    "shm1": {"DISTTRAIN_SHM": "1"},
    "shm0": {"DISTTRAIN_SHM": "0"},
    "ordered": {"DISTTRAIN_ORDERED": "1"},
    "nofusion": {"DISTTRAIN_FUSION_THRESHOLD": "0"},
    "slowcopies": {"DISTTRAIN_FAKE_DEVICE_DELAY_US": "200"},
}


# tcp runs every mode on 2 and 4 ranks; the other transports one job each.
DEVICE_JOBS = ([("tcp", ranks, mode) for ranks in (2, 4) for mode in sorted(DEVICE_MODES)] +
               [(transport, 2, "shm1") for transport in TRANSPORTS if transport != "tcp"])


@pytest.mark.parametrize("transport,ranks,mode", DEVICE_JOBS)
def test_conformance_on_device_memory(transport, ranks, mode):
    if not plugin_built(transport):
        pytest.skip(f"transport '{transport}' was not built")
    if not (FAKE_DEVICE_DIR / "libdt-memory-fakedevice.so").exists():
        pytest.skip("the fake device was not built")
    env = {"DISTTRAIN_TRANSPORT": transport,
           "DISTTRAIN_PLUGIN_PATH": f"{plugin_dir(transport)}:{FAKE_DEVICE_DIR}",
           "DISTTRAIN_MEMORY": "fakedevice",
           "DISTTRAIN_TIMEOUT": "60", **DEVICE_MODES[mode]}
    result = run(launch_command(transport, ranks) + ["--device", "--no-large"], env=env,
                 timeout=TIMEOUT_S)
    output = result.stdout + result.stderr
    assert result.returncode == 0, (
        f"dt_conformance --device failed on {transport} with {ranks} ranks, {mode} "
        f"(exit {result.returncode}):\n{output[-8000:]}")
    summary = [line for line in result.stdout.splitlines() if "dt_conformance:" in line]
    assert summary, f"no summary line in the output:\n{output[-4000:]}"
    assert f"PASS ranks={ranks} transport={transport} memory=fakedevice" in summary[-1], \
        summary[-1]
    assert "failed=0" in summary[-1], summary[-1]


@pytest.mark.parametrize("device", [False, True], ids=["host", "device"])
def test_the_suite_fails_every_check_of_a_rank_whose_results_are_wrong(device):
    """The checker itself: with --spoil the last rank flips one element of every result
    (an output element, or a guard where the output is empty) before comparing it, as a
    wrong library would. Every one of its checks must fail and be counted, the others
    pass, and the job must fail naming the elements."""
    if not plugin_built("tcp"):
        pytest.skip("the tcp transport was not built")
    env = {"DISTTRAIN_TRANSPORT": "tcp", "DISTTRAIN_PLUGIN_PATH": str(plugin_dir("tcp")),
           "DISTTRAIN_TIMEOUT": "60"}
    flags = ["--no-large", "--spoil"]
    if device:
        if not (FAKE_DEVICE_DIR / "libdt-memory-fakedevice.so").exists():
            pytest.skip("the fake device was not built")
        env.update({"DISTTRAIN_PLUGIN_PATH": f"{plugin_dir('tcp')}:{FAKE_DEVICE_DIR}",
                    "DISTTRAIN_MEMORY": "fakedevice"})
        flags.append("--device")
    ranks = 2
    result = run(launch_command("tcp", ranks) + flags, env=env, timeout=TIMEOUT_S)
    output = result.stdout + result.stderr
    assert result.returncode == 1, f"exit {result.returncode}:\n{output[-4000:]}"
    summary = re.search(r"dt_conformance: FAIL ranks=2 .* checks=(\d+) failed=(\d+)",
                        result.stdout)
    assert summary, f"no FAIL summary line:\n{output[-4000:]}"
    checks, failed = int(summary.group(1)), int(summary.group(2))
    assert checks > 1000 and failed == checks // ranks, summary.group(0)
    mismatches = [line for line in output.splitlines() if "MISMATCH" in line]
    assert mismatches and all(f"rank {ranks - 1} " in line for line in mismatches), \
        "\n".join(mismatches[:20])
