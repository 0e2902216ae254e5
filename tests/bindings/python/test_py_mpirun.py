# SPDX-License-Identifier: Apache-2.0
"""disttrain.torch under a bare `mpirun -np 2` (as Horovod users start jobs): rank, size
and local rank come from Open MPI's environment, not from disttrainrun. The 2-rank torch
job (collectives, broadcast helpers, metrics, DistributedOptimizer against single-process
training) runs over the tcp transport (rank 0 serves the rendezvous store at
DISTTRAIN_STORE_ADDR) and over the mpi transport (no store at all).

Skipped with the reason when mpirun, PyTorch or the mpi plugin is missing; every job has
a hard timeout that kills mpirun and its ranks."""
import secrets
import socket

import pytest

import dtpy
from conftest import BUILD

pytest.importorskip("torch", reason="PyTorch is not installed (apt-get install python3-torch)")
pytestmark = pytest.mark.skipif(dtpy.MPIRUN is None,
                                reason="mpirun is not installed (apt-get install openmpi-bin)")

PLUGINS = BUILD / "plugins" / "transport"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def transport_env(transport):
    plugin = PLUGINS / transport / f"libdt-transport-{transport}.so"
    if not plugin.exists():
        pytest.skip(f"the {transport} transport was not built ({plugin})")
    env = {"DISTTRAIN_TRANSPORT": transport, "DISTTRAIN_PLUGIN_PATH": str(plugin.parent),
           "DISTTRAIN_TIMEOUT": "60"}
    if transport == "tcp":
        # mpirun gives ranks but no rendezvous: rank 0 serves the store at this address
        # and every rank proves the shared token.
        env.update(DISTTRAIN_STORE_ADDR=f"127.0.0.1:{free_port()}",
                   DISTTRAIN_JOB_TOKEN=secrets.token_hex(16))
    return env


@pytest.mark.parametrize("transport", ["tcp", "mpi"])
def test_torch_job_under_mpirun(transport):
    r = dtpy.run_mpirun("torch_job.py", np=2, env=transport_env(transport), timeout=150)
    out = r.stdout + r.stderr
    assert r.returncode == 0, f"mpirun job failed ({r.returncode}):\n{out[-6000:]}"
    for rank in range(2):
        want = f",{rank}]<stdout>:OK rank={rank} size=2 transport={transport}"
        assert want in r.stdout, f"rank {rank} did not report {want!r}:\n{out[-6000:]}"
