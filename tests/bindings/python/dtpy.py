# SPDX-License-Identifier: Apache-2.0
"""Helpers of the Python binding suites: import the package from the source tree, use the
build tree's library and plugins, and run Python jobs under disttrainrun."""
import os
import pathlib
import shutil
import signal
import subprocess

import pytest

from conftest import (BINDING_DIR, BUILD, REPO, binding_on_path, build_path,  # noqa: F401
                      clean_env, free_ports, run)

PACKAGE_DIR = BINDING_DIR
JOBS = pathlib.Path(__file__).resolve().parent / "jobs"
PYTHON = "/usr/bin/python3"

binding_on_path()


def library():
    return build_path("core", "libdisttrain.so")


def use_build_tree():
    """Points this process at the build tree (library, tcp transport plugin); in-process
    contexts are single-process, so no DISTTRAIN_RANK/SIZE may leak in. The transport is
    pinned: "auto" would take any faster one installed on this machine (ucx, mpi)."""
    os.environ["DISTTRAIN_LIBRARY"] = str(library())
    os.environ["DISTTRAIN_PLUGIN_PATH"] = str(BUILD / "plugins" / "transport" / "tcp")
    os.environ["DISTTRAIN_TRANSPORT"] = "tcp"
    for var in ("DISTTRAIN_RANK", "DISTTRAIN_SIZE", "DISTTRAIN_STORE_ADDR"):
        os.environ.pop(var, None)


def job_env(extra=None):
    env = {"PYTHONPATH": str(PACKAGE_DIR), "DISTTRAIN_LIBRARY": str(library()),
           "OMP_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    env.update(extra or {})
    return env


def run_python(script, *args, env=None, timeout=120):
    """Runs a job script as one plain process (size 1)."""
    return run([PYTHON, JOBS / script, *args], env=job_env(env), timeout=timeout)


def run_job(script, *args, np=2, env=None, timeout=120, launcher_args=()):
    """Runs a job script on np ranks through disttrainrun."""
    launcher = build_path("core", "launch", "disttrainrun")
    return run([launcher, "-np", np, "--timeout", timeout - 10, *launcher_args, "--",
                PYTHON, JOBS / script, *args], env=job_env(env), timeout=timeout)


MPIRUN = shutil.which("mpirun")


def run_mpirun(script, *args, np=2, env=None, timeout=120):
    """Runs a job script on np ranks under a bare `mpirun` (Open MPI numbers the ranks;
    no DISTTRAIN_RANK/SIZE). Output lines carry mpirun's tag, `[jobid,rank]<stdout>:`.
    On time-out the whole process group (mpirun and every rank) is killed, so a hang
    fails the test and leaves nothing behind."""
    cmd = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "--tag-output", "-np",
           str(np), PYTHON, str(JOBS / script), *map(str, args)]
    proc = subprocess.Popen(cmd, env=clean_env(job_env(env)), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"{cmd} did not finish within {timeout} s (hang); output so far:\n"
                    f"{out}\n{err}")
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def assert_ranks_ok(result, np=2, marker="OK"):
    out = result.stdout + result.stderr
    assert result.returncode == 0, f"job failed ({result.returncode}):\n{out}"
    for r in range(np):
        assert f"[{r}] {marker}" in result.stdout, f"rank {r} did not print {marker}:\n{out}"


