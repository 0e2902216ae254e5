# SPDX-License-Identifier: Apache-2.0
"""A 3-host job on one machine: one rank per network namespace (netns_fabric.Fabric),
rank 0 serving the store at 10.77.0.1, with tcp and ucx (ucx over its tcp transport on
eth0, so shared memory cannot bypass the network). Checks allreduce results, then takes
one host's link down mid-run and checks that every rank fails with a clear error within
the timeout instead of hanging. Skipped where namespaces cannot be made.
Also jobs that meet where hosts differ: the store's name is loopback on rank 0's host only;
every host lists a container bridge before eth0 and tcp is given no address.
"""
import os
import pathlib
import random
import secrets
import subprocess
import time

import pytest

from conftest import BUILD, build_path
from netns_fabric import Fabric, Unavailable, probe

HOSTS = 3
TIMEOUT_S = 6       # DISTTRAIN_TIMEOUT of the cut-link job: how long a silent peer is waited for
SLOW_TIMEOUT_S = 60 # DISTTRAIN_TIMEOUT of the plain job: a loaded machine is no failure
# DISTTRAIN_TIMEOUT of jobs whose ranks may never meet: ample to meet on a loaded machine,
# short enough that a job that cannot fails the test soon.
MEET_TIMEOUT_S = 30
JOB_LIMIT_S = 120   # hard limit on any rank of any job here


@pytest.fixture(scope="module")
def usable():
    try:
        probe()
    except Unavailable as e:
        pytest.skip(str(e))


@pytest.fixture
def fabric(usable):
    with Fabric(HOSTS) as f:
        yield f


def plugin_built(transport):
    return (BUILD / "plugins" / "transport" / transport /
            f"libdt-transport-{transport}.so").exists()


def rank_env(fabric, rank, transport, port, token, timeout_s, store_host=None, tcp_addr=True):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DISTTRAIN_", "OMPI_", "PMI_", "PMIX_", "SLURM_", "UCX_"))}
    env.update({
        "DISTTRAIN_RANK": str(rank), "DISTTRAIN_SIZE": str(HOSTS),
        # One rank per "host": no shared memory between them.
        "DISTTRAIN_LOCAL_RANK": "0", "DISTTRAIN_LOCAL_SIZE": "1", "DISTTRAIN_SHM": "0",
        "DISTTRAIN_STORE_ADDR": f"{store_host or fabric.address(0)}:{port}",
        "DISTTRAIN_STORE_SERVER": "rank0", "DISTTRAIN_JOB_TOKEN": token,
        "DISTTRAIN_TRANSPORT": transport,
        "DISTTRAIN_PLUGIN_PATH": str(BUILD / "plugins" / "transport" / transport),
        "DISTTRAIN_TIMEOUT": str(timeout_s), "DISTTRAIN_LOG_LEVEL": "info",
        # The namespaces share one kernel, so UCX would take them for one host: only its
        # tcp transport on eth0 crosses the bridge, and peer failure handling stays on.
        "UCX_TLS": "tcp", "UCX_NET_DEVICES": "eth0", "DISTTRAIN_UCX_ERR_HANDLING": "peer",
    })
    if tcp_addr:
        env["DISTTRAIN_TCP_ADDR"] = fabric.address(rank)
    return env


class Job:
    """The ranks of one job, each in its namespace, output to files in tmp."""

    def __init__(self, fabric, transport, args, tmp, timeout_s, store_host=None,
                 tcp_addr=True):
        worker = build_path("tests", "integration", "dt_worker")
        port = random.randint(20000, 60000)
        token = secrets.token_hex(32)
        self.procs, self.errs = [], []
        for rank in range(HOSTS):
            err = pathlib.Path(tmp) / f"rank{rank}.err"
            self.errs.append(err)
            with open(err, "w") as ef, open(pathlib.Path(tmp) / f"rank{rank}.out", "w") as of:
                self.procs.append(subprocess.Popen(
                    fabric.exec_prefix(rank) + [str(worker), *map(str, args)],
                    env=rank_env(fabric, rank, transport, port, token, timeout_s, store_host,
                                 tcp_addr),
                    stdout=of, stderr=ef))
        self.tmp = pathlib.Path(tmp)
        self.args = args

    def assert_allreduce_ok(self, limit_s):
        """For a job of args ["allreduce", COUNT, ITERATIONS]: every rank exits 0 within
        limit_s and says its allreduces were right."""
        try:
            codes = self.wait_all(limit_s)
        finally:
            self.kill()
        assert codes == [0] * HOSTS, f"exit codes {codes}\n{self.report()}"
        _, count, iterations = self.args
        for rank in range(HOSTS):
            assert f"allreduce ok count={count} iterations={iterations}" in self.stdout(rank), \
                self.report()

    def stderr(self, rank):
        return self.errs[rank].read_text(errors="replace")

    def stdout(self, rank):
        return (self.tmp / f"rank{rank}.out").read_text(errors="replace")

    def wait_all(self, limit_s):
        """Exit codes, or None for a rank still running at the limit (then killed)."""
        deadline = time.monotonic() + limit_s
        codes = []
        for p in self.procs:
            try:
                codes.append(p.wait(timeout=max(0.1, deadline - time.monotonic())))
            except subprocess.TimeoutExpired:
                codes.append(None)
        self.kill()
        return codes

    def kill(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=10)

    def report(self):
        return "\n".join(f"--- rank {r} stderr:\n{self.stderr(r)[-2500:]}"
                         for r in range(HOSTS))


TRANSPORTS = ["tcp", "ucx"]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_allreduce_across_hosts(fabric, transport, tmp_path):
    if not plugin_built(transport):
        pytest.skip(f"transport '{transport}' was not built")
    job = Job(fabric, transport, ["allreduce", 300000, 10], tmp_path, SLOW_TIMEOUT_S)
    job.assert_allreduce_ok(JOB_LIMIT_S)
    # Rank 0 served the store on its own address, reached by the others through the bridge.
    assert f"serves the rendezvous store at {fabric.address(0)}:" in job.stderr(0), job.report()


def test_store_named_by_a_host_that_is_loopback_on_rank0s_own_host(fabric, tmp_path):
    """Every rank is given the store as node0:PORT. On node0 itself the name is 127.0.1.1,
    as Debian's /etc/hosts maps a host's own name; elsewhere it is node0's network address.
    Rank 0 must still serve the other hosts, and say why it listens on every interface."""
    if not plugin_built("tcp"):
        pytest.skip("transport 'tcp' was not built")
    fabric.hosts_file(0, "127.0.0.1 localhost\n127.0.1.1 node0\n")
    for i in range(1, HOSTS):
        fabric.hosts_file(i, f"127.0.0.1 localhost\n{fabric.address(0)} node0\n")
    job = Job(fabric, "tcp", ["allreduce", 1000, 3], tmp_path, MEET_TIMEOUT_S,
              store_host="node0")
    job.assert_allreduce_ok(JOB_LIMIT_S)
    assert "DISTTRAIN_STORE_ADDR='node0:" in job.stderr(0), job.report()
    assert "' resolves to 127.0.1.1 on this host, a loopback address" in job.stderr(0), \
        job.report()
    assert "rank 0 serves the store on every interface at port" in job.stderr(0), job.report()


def test_tcp_listens_towards_the_store_not_on_a_container_bridge_listed_first(usable,
                                                                             tmp_path):
    """Every host has docker0 (172.17.0.1, up, as on every host that runs Docker) listed
    before eth0, and no DISTTRAIN_TCP_ADDR or DISTTRAIN_TCP_IFNAME: a rank that listened on
    the first interface would be unreachable. Each must listen on the address its host
    reaches the store's host from, and say so."""
    if not plugin_built("tcp"):
        pytest.skip("transport 'tcp' was not built")
    with Fabric(HOSTS, decoy_bridge=True) as fabric:
        for i in range(HOSTS):
            listing = subprocess.run(["ip", "-n", fabric.names[i], "-o", "-4", "addr", "show"],
                                     capture_output=True, text=True, timeout=30).stdout
            assert listing.index(" docker0 ") < listing.index(" eth0 "), listing
        job = Job(fabric, "tcp", ["allreduce", 1000, 3], tmp_path, MEET_TIMEOUT_S,
                  tcp_addr=False)
        job.assert_allreduce_ok(JOB_LIMIT_S)
    for rank in range(HOSTS):
        assert (f"tcp: listening on {fabric.address(rank)}:" in job.stderr(rank) and
                f"the address this host reaches the rendezvous store at {fabric.address(0)}:"
                in job.stderr(rank)), job.report()


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_cut_link_fails_every_rank_clearly(fabric, transport, tmp_path):
    if not plugin_built(transport):
        pytest.skip(f"transport '{transport}' was not built")
    # Enough iterations to still be running when the link goes down.
    job = Job(fabric, transport, ["allreduce", 1000, 100000000], tmp_path, TIMEOUT_S)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if all("using transport" in job.stderr(r) for r in range(HOSTS)):
                break
            assert all(p.poll() is None for p in job.procs), job.report()
            time.sleep(0.1)
        else:
            pytest.fail(f"the job did not start within 30 s\n{job.report()}")
        time.sleep(1.0)  # collectives in full flow
        assert all(p.poll() is None for p in job.procs), job.report()
        cut_at = time.monotonic()
        fabric.cut(1)
        # Every rank must notice within the timeout (plus the slack of a few exchanges).
        codes = job.wait_all(TIMEOUT_S * 4 + 10)
        elapsed = time.monotonic() - cut_at
    finally:
        job.kill()
    assert None not in codes, f"ranks still running {elapsed:.0f} s after the cut: " \
                              f"{codes}\n{job.report()}"
    assert all(c != 0 for c in codes), f"exit codes {codes}\n{job.report()}"
    for rank in range(HOSTS):
        err = job.stderr(rank)
        # dt_worker prints "error: <call>: <status>: <the library's message>".
        line = next((l for l in err.splitlines() if l.startswith("error: ")), "")
        assert line, f"rank {rank} gave no error line\n{job.report()}"
        assert any(s in line for s in ("DT_ERR_TIMEOUT", "DT_ERR_PEER_LOST", "timed out",
                                       "lost")), line
        assert "rank" in line, line


def test_mpi_across_namespaces_is_not_run():
    pytest.skip("mpi: mpirun forks every local rank in its own network namespace; one "
                "rank per namespace would need an rsh agent wrapping `ip netns exec` and "
                "orted daemons reaching mpirun through the bridge (not done)")
