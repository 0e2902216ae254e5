# SPDX-License-Identifier: Apache-2.0
"""Jobs started the way other frameworks start them, with no disttrainrun: torchrun's
env:// variables and TensorFlow's TF_CONFIG, and the settings check at dt_context_create
(ranks that disagree on the size, transport list or ordered mode fail fast on every rank).
Every process has a hard timeout; a hang fails the test."""
import json
import socket
import subprocess
import time

import pytest

from conftest import build_path, clean_env, free_ports, run

TOKEN = "d1sc0very-test-token-0123456789abcdef"
TIMEOUT_S = 60  # DISTTRAIN_TIMEOUT of these jobs: the fast failures must beat it by far


@pytest.fixture(scope="module")
def worker():
    return build_path("tests", "integration", "dt_worker")


def start(worker, args, env):
    return subprocess.Popen([str(worker), *args], env=clean_env(env), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def finish(procs, timeout=TIMEOUT_S + 30):
    """Waits for every process; a hang kills them all and fails the test."""
    out = []
    deadline = time.monotonic() + timeout
    try:
        for p in procs:
            stdout, stderr = p.communicate(timeout=max(0.1, deadline - time.monotonic()))
            out.append((p.returncode, stdout, stderr))
    except subprocess.TimeoutExpired:
        for p in procs:
            p.kill()
        for p in procs:
            p.communicate()
        pytest.fail(f"a rank did not finish within {timeout} s (hang)")
    return out


def torchrun_env(rank, size, port, **extra):
    env = {"RANK": str(rank), "WORLD_SIZE": str(size), "LOCAL_RANK": str(rank),
           "LOCAL_WORLD_SIZE": str(size), "MASTER_ADDR": "127.0.0.1",
           "MASTER_PORT": str(port), "DISTTRAIN_JOB_TOKEN": TOKEN,
           "DISTTRAIN_TRANSPORT": "tcp", "DISTTRAIN_TIMEOUT": str(TIMEOUT_S)}
    env.update(extra)
    return env


def tf_config(index, ports):
    return json.dumps({"cluster": {"worker": [f"127.0.0.1:{p}" for p in ports]},
                       "task": {"type": "worker", "index": index}})


def test_torchrun_variables_form_a_job(worker):
    port = free_ports(2)
    procs = [start(worker, ["allreduce", "1000", "3"],
                   torchrun_env(r, 2, port, DISTTRAIN_LOG_LEVEL="info")) for r in range(2)]
    results = finish(procs)
    for rank, (rc, stdout, stderr) in enumerate(results):
        assert rc == 0, f"rank {rank}:\n{stdout}\n{stderr}"
        assert "allreduce ok count=1000 iterations=3" in stdout
        assert f"rank {rank} of 2 (from torchrun (env://))" in stderr, stderr
    assert f"127.0.0.1:{port + 1}" in results[0][2], results[0][2]


def test_torchrun_run_id_serves_as_token_only_when_unguessable(worker):
    port = free_ports(2)
    env = torchrun_env(0, 2, port, TORCHELASTIC_RUN_ID="none")
    del env["DISTTRAIN_JOB_TOKEN"]
    r = run([worker, "info"], env=env, timeout=30)
    assert r.returncode == 1
    assert "DT_ERR_INVALID_CONFIG" in r.stderr
    assert "TORCHELASTIC_RUN_ID is 'none'" in r.stderr
    assert "DISTTRAIN_JOB_TOKEN" in r.stderr

    run_id = "4b7e1f0c-9a55-4e0e-8f3c-2a6d1c9e7b31"  # what torchrun --standalone makes
    procs = []
    for rank in range(2):
        env = torchrun_env(rank, 2, port, TORCHELASTIC_RUN_ID=run_id)
        del env["DISTTRAIN_JOB_TOKEN"]
        procs.append(start(worker, ["allreduce", "16"], env))
    for rank, (rc, stdout, stderr) in enumerate(finish(procs)):
        assert rc == 0, f"rank {rank}:\n{stdout}\n{stderr}"


def test_torchrun_rank_without_rank_0_names_master_addr_and_port(worker):
    # The store's address was made of MASTER_ADDR and MASTER_PORT, which are what to check.
    port = free_ports(2)
    r = run([worker, "info"], env=torchrun_env(1, 2, port, DISTTRAIN_TIMEOUT="1"), timeout=60)
    assert r.returncode == 1
    assert "DT_ERR_TIMEOUT" in r.stderr, r.stderr
    assert f"no rendezvous store answered at 127.0.0.1:{port + 1}" in r.stderr, r.stderr
    assert f"check MASTER_ADDR:MASTER_PORT+1 (127.0.0.1:{port}) and that" in r.stderr, r.stderr
    assert "DISTTRAIN_STORE_ADDR" not in r.stderr, r.stderr


def test_torchrun_rank_0_on_a_taken_store_port_names_master_port(worker):
    # Another job's store holds MASTER_PORT+1: the user can only change MASTER_PORT.
    port = free_ports(2)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port + 1))
        taken.listen(1)
        r = run([worker, "info"], env=torchrun_env(0, 2, port), timeout=60)
    assert r.returncode == 1
    assert "DT_ERR_CONNECT" in r.stderr, r.stderr
    assert (f"this address is MASTER_ADDR:MASTER_PORT+1 (127.0.0.1:{port}), and another job "
            "may hold its port: give the job another MASTER_PORT") in r.stderr, r.stderr
    assert "port 0" not in r.stderr, r.stderr


def test_torchrun_rank_meeting_another_jobs_store_names_master_port(worker):
    # Job A's rank 0 serves its store at MASTER_PORT+1; a rank of job B given the same
    # MASTER_PORT reaches it. No token was set by hand (both derive theirs from their own
    # TORCHELASTIC_RUN_ID), so the cause is the port, not the tokens.
    port = free_ports(2)
    env_a = torchrun_env(0, 2, port, TORCHELASTIC_RUN_ID="job-a-0123456789abcdef",
                         DISTTRAIN_TIMEOUT="20")
    del env_a["DISTTRAIN_JOB_TOKEN"]
    job_a = start(worker, ["info"], env_a)
    try:
        deadline = time.monotonic() + 15
        while True:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port + 1)) == 0:
                    break
            assert job_a.poll() is None and time.monotonic() < deadline, "no store of job A"
            time.sleep(0.05)
        env_b = torchrun_env(1, 2, port, TORCHELASTIC_RUN_ID="job-b-0123456789abcdef",
                             DISTTRAIN_TIMEOUT="5")
        del env_b["DISTTRAIN_JOB_TOKEN"]
        r = run([worker, "info"], env=env_b, timeout=30)
        assert r.returncode == 1
        assert "DT_ERR_AUTH" in r.stderr, r.stderr
        assert ("most likely another job or program listens on that port; give the job "
                "another MASTER_PORT") in r.stderr, r.stderr
        assert "same DISTTRAIN_JOB_TOKEN" not in r.stderr, r.stderr
        # A token set by hand may really differ between ranks: that is still what is said.
        r = run([worker, "info"], env=torchrun_env(1, 2, port, DISTTRAIN_TIMEOUT="5"),
                timeout=30)
        assert r.returncode == 1
        assert "same DISTTRAIN_JOB_TOKEN" in r.stderr, r.stderr
    finally:
        job_a.kill()
        job_a.communicate()


def test_tf_config_workers_started_out_of_order(worker):
    ports = [free_ports(1), free_ports(1)]
    base = {"DISTTRAIN_JOB_TOKEN": TOKEN, "DISTTRAIN_TRANSPORT": "tcp",
            "DISTTRAIN_TIMEOUT": str(TIMEOUT_S), "DISTTRAIN_LOG_LEVEL": "info"}
    # Worker 1 first: rank 0's store does not exist yet, so it must wait, not fail.
    w1 = start(worker, ["allreduce", "1000", "2"], dict(base, TF_CONFIG=tf_config(1, ports)))
    time.sleep(1.0)
    assert w1.poll() is None, "worker 1 gave up before worker 0 started"
    w0 = start(worker, ["allreduce", "1000", "2"], dict(base, TF_CONFIG=tf_config(0, ports)))
    results = finish([w0, w1])
    for rank, (rc, stdout, stderr) in enumerate(results):
        assert rc == 0, f"worker {rank}:\n{stdout}\n{stderr}"
        assert "allreduce ok count=1000 iterations=2" in stdout
        assert f"rank {rank} of 2 (from TF_CONFIG)" in stderr, stderr


@pytest.mark.parametrize("value,message", [
    ("{not json", "TF_CONFIG is not valid JSON"),
    ('{"cluster": {"worker": ["127.0.0.1:1"]}, "task": {"type": "worker", "index": 3}}',
     "TF_CONFIG: task.index is 3 but cluster.worker lists 1 member"),
    ('{"cluster": {"worker": ["127.0.0.1:1"]}, "task": {"type": "ps", "index": 0}}',
     'TF_CONFIG: task.type is "ps"'),
])
def test_malformed_tf_config_names_the_variable(worker, value, message):
    r = run([worker, "info"], env={"TF_CONFIG": value}, timeout=30)
    assert r.returncode == 1
    assert "DT_ERR_INVALID_CONFIG" in r.stderr
    assert message in r.stderr, r.stderr


def test_tf_config_without_token_is_refused(worker):
    r = run([worker, "info"], env={"TF_CONFIG": tf_config(1, [free_ports(1), 2])}, timeout=30)
    assert r.returncode == 1
    assert "DISTTRAIN_JOB_TOKEN is not set (rank 1 of 2 from TF_CONFIG)" in r.stderr, r.stderr


def test_conflicting_launchers_are_an_error(worker):
    env = torchrun_env(1, 2, free_ports(2), OMPI_COMM_WORLD_RANK="0", OMPI_COMM_WORLD_SIZE="2")
    r = run([worker, "info"], env=env, timeout=30)
    assert r.returncode == 1
    assert "DT_ERR_INVALID_CONFIG" in r.stderr
    assert ("conflicting launchers: torchrun (env://) says rank 1 of 2 (RANK=1, WORLD_SIZE=2)"
            " but Open MPI says rank 0 of 2") in r.stderr, r.stderr


def disagreeing_job(worker, envs):
    """Starts one rank per env (torchrun variables); returns results and the seconds taken."""
    started = time.monotonic()
    procs = [start(worker, ["allreduce", "16"], env) for env in envs]
    results = finish(procs)
    return results, time.monotonic() - started


@pytest.mark.parametrize("sizes", [(2, 3), (3, 2)])
def test_disagreeing_sizes_fail_fast_on_every_rank(worker, sizes):
    port = free_ports(2)
    results, took = disagreeing_job(
        worker, [torchrun_env(r, size, port, LOCAL_RANK="0", LOCAL_WORLD_SIZE="1")
                 for r, size in enumerate(sizes)])
    message = (f"ranks disagree on the job size: rank 0 says {sizes[0]}, "
               f"rank 1 says {sizes[1]}")
    for rank, (rc, stdout, stderr) in enumerate(results):
        assert rc == 1, f"rank {rank}:\n{stdout}\n{stderr}"
        assert "DT_ERR_INVALID_CONFIG" in stderr
        assert message in stderr, f"rank {rank}: {stderr}"
    assert took < TIMEOUT_S / 3, f"took {took:.1f} s against DISTTRAIN_TIMEOUT={TIMEOUT_S}"


@pytest.mark.parametrize("var,values,message", [
    ("DISTTRAIN_ORDERED", ("0", "1"),
     "ranks disagree on ordered mode (DISTTRAIN_ORDERED): rank 0 says 0, rank 1 says 1"),
    ("DISTTRAIN_TRANSPORT", ("tcp", "auto"),
     "ranks disagree on the transport list (DISTTRAIN_TRANSPORT): rank 0 says 'tcp', "
     "rank 1 says 'auto'"),
])
def test_disagreeing_settings_fail_fast_on_every_rank(worker, var, values, message):
    port = free_ports(2)
    results, took = disagreeing_job(
        worker, [torchrun_env(r, 2, port, **{var: v}) for r, v in enumerate(values)])
    for rank, (rc, stdout, stderr) in enumerate(results):
        assert rc == 1, f"rank {rank}:\n{stdout}\n{stderr}"
        assert "DT_ERR_INVALID_CONFIG" in stderr
        assert message in stderr, f"rank {rank}: {stderr}"
    assert took < TIMEOUT_S / 3, f"took {took:.1f} s against DISTTRAIN_TIMEOUT={TIMEOUT_S}"


def plugin_path(*transports):
    return ":".join(str(build_path("plugins", "transport", t)) for t in transports)


@pytest.mark.parametrize("rank1_env,chosen", [
    ({}, "ucx"),                                   # both can: the first candidate wins
    ({"DISTTRAIN_PLUGIN_PATH": "tcp"}, "tcp"),     # rank 1 has only tcp installed
    ({"UCX_TLS": "no-such-transport"}, "tcp"),     # rank 1's ucx fails to start
])
def test_auto_moves_on_together_when_a_rank_cannot_start_a_transport(worker, rank1_env,
                                                                     chosen):
    """With DISTTRAIN_TRANSPORT=auto, rank 0 can start ucx but rank 1 cannot: both must
    end on the same transport at once, not after rank 0 waited out DISTTRAIN_TIMEOUT."""
    port = free_ports(2)
    envs = []
    for rank in range(2):
        env = torchrun_env(rank, 2, port, DISTTRAIN_TRANSPORT="auto",
                           DISTTRAIN_PLUGIN_PATH=plugin_path("ucx", "tcp"))
        if rank == 1:
            env.update(rank1_env)
            if env["DISTTRAIN_PLUGIN_PATH"] == "tcp":  # only tcp, on rank 1
                env["DISTTRAIN_PLUGIN_PATH"] = plugin_path("tcp")
        envs.append(env)
    started = time.monotonic()
    results = finish([start(worker, ["info"], env) for env in envs])
    took = time.monotonic() - started
    for rank, (rc, stdout, stderr) in enumerate(results):
        assert rc == 0, f"rank {rank}:\n{stdout}\n{stderr}"
        assert f"transport={chosen}" in stdout, f"rank {rank}: {stdout}\n{stderr}"
    assert took < TIMEOUT_S / 3, f"took {took:.1f} s against DISTTRAIN_TIMEOUT={TIMEOUT_S}"


def test_a_rank_that_cannot_start_the_only_transport_fails_the_others_promptly(worker):
    port = free_ports(2)
    envs = [torchrun_env(rank, 2, port, DISTTRAIN_TRANSPORT="ucx",
                         DISTTRAIN_PLUGIN_PATH=plugin_path("ucx")) for rank in range(2)]
    envs[1]["UCX_TLS"] = "no-such-transport"
    started = time.monotonic()
    results = finish([start(worker, ["info"], env) for env in envs])
    took = time.monotonic() - started
    for rank, (rc, stdout, stderr) in enumerate(results):
        assert rc == 1, f"rank {rank}:\n{stdout}\n{stderr}"
    assert "rank 1 could not start it" in results[0][2], results[0][2]
    assert took < TIMEOUT_S / 3, f"took {took:.1f} s against DISTTRAIN_TIMEOUT={TIMEOUT_S}"


def serve_store_outside_the_jobs(disttrainrun, tmp_path):
    """A one-rank disttrainrun job that only keeps its store up: (launcher, address, token)."""
    where = tmp_path / "store.txt"
    launcher = subprocess.Popen(
        [str(disttrainrun), "-np", "1", "--", "sh", "-c",
         f'echo "$DISTTRAIN_STORE_ADDR $DISTTRAIN_JOB_TOKEN" > {where}.part && '
         f'mv {where}.part {where} && exec sleep 120'],
        env=clean_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not where.exists():
        if launcher.poll() is not None or time.monotonic() > deadline:
            launcher.kill()
            pytest.fail("the store's disttrainrun did not start")
        time.sleep(0.05)
    address, token = where.read_text().split()
    return launcher, address, token


def test_jobs_sharing_a_store_served_outside_them(worker, disttrainrun, tmp_path):
    """Jobs meet in one store under DISTTRAIN_JOB_ID; without one, a second job is told that
    the store served one already, where it read the first job's entries as its own."""
    launcher, address, token = serve_store_outside_the_jobs(disttrainrun, tmp_path)

    def job(size, **extra):
        return finish([start(worker, ["allreduce", "1000", "2"],
                             {"DISTTRAIN_RANK": str(r), "DISTTRAIN_SIZE": str(size),
                              "DISTTRAIN_STORE_ADDR": address, "DISTTRAIN_JOB_TOKEN": token,
                              "DISTTRAIN_STORE_SERVER": "launcher",
                              "DISTTRAIN_TRANSPORT": "tcp", "DISTTRAIN_TIMEOUT": "20",
                              **extra})
                       for r in range(size)])

    try:
        for rank, (rc, stdout, stderr) in enumerate(job(2)):
            assert rc == 0, f"first job, rank {rank}:\n{stdout}\n{stderr}"
        for rank, (rc, stdout, stderr) in enumerate(job(3)):
            assert rc == 1, f"second job, rank {rank}:\n{stdout}\n{stderr}"
            assert "DT_ERR_INVALID_CONFIG" in stderr, stderr
            assert "a DISTTRAIN_JOB_ID of its own" in stderr, stderr
            if rank < 2:  # the numbers the first job had
                assert "this store already served a job" in stderr, stderr
        for job_id in ("second", "third"):
            for rank, (rc, stdout, stderr) in enumerate(job(3, DISTTRAIN_JOB_ID=job_id)):
                assert rc == 0, f"job {job_id}, rank {rank}:\n{stdout}\n{stderr}"
                assert "allreduce ok count=1000 iterations=2" in stdout
    finally:
        launcher.terminate()
        launcher.wait(timeout=30)

