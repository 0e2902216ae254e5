# SPDX-License-Identifier: Apache-2.0
"""Shared pytest fixtures for the multi-process and binding suites.

The build tree is DISTTRAIN_BUILD_DIR (set by scripts/run-tests.sh), default ./build.
Every job runs with a hard timeout so that a hang is a failure, never a stuck suite.
"""
import os
import pathlib
import socket
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent
BUILD = pathlib.Path(os.environ.get("DISTTRAIN_BUILD_DIR", REPO / "build")).resolve()


# The Python binding, imported from the source tree by the suites that use it.
BINDING_DIR = REPO / "bindings" / "python"


def binding_on_path():
    """Puts the binding's source tree first on sys.path (once), so `import disttrain`
    finds it."""
    if str(BINDING_DIR) not in sys.path:
        sys.path.insert(0, str(BINDING_DIR))


def build_path(*parts):
    path = BUILD.joinpath(*parts)
    if not path.exists():
        pytest.fail(f"{path} is missing: build the project first (ninja -C {BUILD})")
    return path


# What the framework-free trainer's tests need: its data and the plugins it runs on.
FASHION_MNIST = pathlib.Path("/usr/share/datasets/fashion-mnist")
ONEDNN_PLUGIN_DIR = BUILD / "plugins" / "compute" / "onednn"
TCP_PLUGIN_DIR = BUILD / "plugins" / "transport" / "tcp"
NEEDS_TRAINER = [
    pytest.mark.skipif(not (ONEDNN_PLUGIN_DIR / "libdt-compute-onednn.so").exists(),
                       reason="the oneDNN compute plugin was not built"),
    pytest.mark.skipif(not (FASHION_MNIST / "train-images-idx3-ubyte.gz").exists(),
                       reason="Fashion-MNIST is not installed (apt-get install "
                              "dataset-fashion-mnist)"),
]


@pytest.fixture(scope="session")
def build_dir():
    return BUILD


@pytest.fixture(scope="session")
def disttrainrun():
    return build_path("core", "launch", "disttrainrun")


# Rank variables of torchrun (env://) and TensorFlow that the library also reads.
LAUNCHER_VARIABLES = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
                      "MASTER_PORT", "TF_CONFIG"}


def clean_env(extra=None):
    """The environment of a test job: no inherited DISTTRAIN_*/MPI/Slurm/torchrun/TF_CONFIG
    variables."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DISTTRAIN_", "OMPI_", "PMI_", "PMIX_", "SLURM_",
                                "TORCHELASTIC_"))
           and k not in LAUNCHER_VARIABLES}
    env["DISTTRAIN_PLUGIN_PATH"] = str(BUILD / "plugins" / "transport" / "tcp")
    if extra:
        env.update(extra)
    return env


def run(cmd, env=None, timeout=120, **kwargs):
    """Runs cmd, returning CompletedProcess with text output; a hang fails the test."""
    try:
        return subprocess.run([str(c) for c in cmd], env=clean_env(env), timeout=timeout,
                              capture_output=True, text=True, **kwargs)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{cmd} did not finish within {timeout} s (hang); output so far:\n"
                    f"{e.stdout}\n{e.stderr}")


def free_ports(count):
    """The first of `count` consecutive free TCP ports on loopback (a torchrun-started
    job uses MASTER_PORT for torch's store and MASTER_PORT+1 for disttrain's)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + count > 65535:
            continue
        socks = []
        try:
            for port in range(base, base + count):
                sk = socket.socket()
                socks.append(sk)
                sk.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for sk in socks:
                sk.close()
    pytest.fail("no run of free ports found on loopback")


# Modules whose jobs mostly wait (a stopped rank's DISTTRAIN_TIMEOUT, a launcher's or
# mpirun's teardown, a cut link, Slurm's daemons): each used under 30% of the two CPUs of
# the CI machine while it ran alone (wall and CPU seconds of each module, pytest run per
# module). They carry the marker `waits`, and scripts/run-tests.sh runs them beside the
# others, whose CPU they barely take. Modules that assert latencies of milliseconds
# (test_engine.py) stay with the others whatever their CPU share.
WAITING_MODULES = {
    "integration/test_fault_matrix.py",
    "integration/test_mismatch_matrix.py",
    "integration/test_elastic.py",
    "integration/test_launcher.py",
    "integration/test_bad_input.py",
    "integration/test_discovery.py",
    "integration/netns/test_netns.py",
    "integration/slurm/test_slurm.py",
    "plugins/mpi/test_mpi.py",
    "plugins/mpi/test_mpi_faults.py",
}


def pytest_configure(config):
    missing = sorted(m for m in WAITING_MODULES if not (REPO / "tests" / m).exists())
    if missing:  # a renamed module would silently join the other stream
        raise pytest.UsageError(f"tests/conftest.py: WAITING_MODULES names {missing}, "
                                "which do not exist under tests/")
    config.addinivalue_line("markers", "waits: the module's jobs mostly wait; "
                                       "scripts/run-tests.sh runs these beside the others")


def pytest_collection_modifyitems(config, items):
    tests = REPO / "tests"
    for item in items:
        module = pathlib.Path(str(item.fspath))
        if module.is_relative_to(tests) and \
                module.relative_to(tests).as_posix() in WAITING_MODULES:
            item.add_marker(pytest.mark.waits)
