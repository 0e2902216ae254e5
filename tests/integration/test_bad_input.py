# SPDX-License-Identifier: Apache-2.0
"""Bad input at the public API and in the environment: each is a clear error, never a hang."""
import ctypes
import re
import socket
import threading
import time

import pytest

from conftest import binding_on_path, build_path, run

binding_on_path()
from disttrain import _lib  # noqa: E402  the binding's declarations of the C API


@pytest.fixture(scope="module")
def worker():
    return build_path("tests", "integration", "dt_worker")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_single_process_runs_without_any_variable(worker):
    # Without DISTTRAIN_TRANSPORT, "auto" takes the fastest transport installed (beside
    # the library, in the install folder), so which one depends on the machine.
    r = run([worker, "info"])
    assert r.returncode == 0, r.stderr
    assert re.search(r"^rank=0 size=1 local_rank=0 local_size=1 transport=[a-z0-9_]+$",
                     r.stdout, re.M), r.stdout
    r = run([worker, "info"], env={"DISTTRAIN_TRANSPORT": "tcp"})
    assert r.returncode == 0, r.stderr
    assert "rank=0 size=1 local_rank=0 local_size=1 transport=tcp" in r.stdout


def test_unknown_transport_lists_folders_searched(worker):
    r = run([worker, "info"], env={"DISTTRAIN_TRANSPORT": "foo"})
    assert r.returncode == 1
    assert "DT_ERR_PLUGIN_NOT_FOUND" in r.stderr
    assert "libdt-transport-foo.so" in r.stderr
    assert "DISTTRAIN_PLUGIN_PATH" in r.stderr


def test_malformed_transport_name(worker):
    r = run([worker, "info"], env={"DISTTRAIN_TRANSPORT": "TCP!"})
    assert r.returncode == 1
    assert "DT_ERR_INVALID_CONFIG" in r.stderr
    assert "'TCP!' is not a transport name" in r.stderr


@pytest.mark.parametrize("var,value,expect", [
    ("DISTTRAIN_TIMEOUT", "abc", "DISTTRAIN_TIMEOUT='abc' is not an integer"),
    ("DISTTRAIN_TIMEOUT", "-4", "DISTTRAIN_TIMEOUT='-4' is out of range"),
    ("DISTTRAIN_FUSION_THRESHOLD", "64MB", "DISTTRAIN_FUSION_THRESHOLD='64MB' is not an integer"),
    ("DISTTRAIN_CYCLE_TIME_MS", "1e3", "DISTTRAIN_CYCLE_TIME_MS='1e3' is not an integer"),
    # Digits only, as the plugins read DISTTRAIN_DEVICE and theirs: no blank, no '+'.
    ("DISTTRAIN_TIMEOUT", " 3", "DISTTRAIN_TIMEOUT=' 3' is not an integer; expected an "
     "integer in [0, 604800], in decimal digits (no spaces, '+' or suffix)"),
    ("DISTTRAIN_TIMEOUT", "+3", "DISTTRAIN_TIMEOUT='+3' is not an integer"),
    ("DISTTRAIN_FUSION_THRESHOLD", "+1", "DISTTRAIN_FUSION_THRESHOLD='+1' is not an integer"),
    ("DISTTRAIN_CYCLE_TIME_MS", "1 ", "DISTTRAIN_CYCLE_TIME_MS='1 ' is not an integer"),
    ("DISTTRAIN_STALL_WARN_S", " 60", "DISTTRAIN_STALL_WARN_S=' 60' is not an integer"),
    ("DISTTRAIN_TCP_SOCKBUF", "+65536", "DISTTRAIN_TCP_SOCKBUF='+65536' is not a whole number "
     "in [0, 1073741824] written in decimal digits"),
    ("DISTTRAIN_LOG_LEVEL", "loud", "DISTTRAIN_LOG_LEVEL='loud' is not a log level"),
    ("DISTTRAIN_JOB_ID", "a/b", "DISTTRAIN_JOB_ID='a/b' is not a job id"),
    ("DISTTRAIN_JOB_ID", "x" * 129, "is not a job id; use 1 to 128 letters"),
])
def test_malformed_variable_is_named(worker, var, value, expect):
    r = run([worker, "info"], env={var: value})
    assert r.returncode == 1
    assert "DT_ERR_INVALID_CONFIG" in r.stderr
    assert expect in r.stderr


@pytest.mark.parametrize("transport", [None, "auto", "tcp"])
@pytest.mark.parametrize("var,value", [("DISTTRAIN_TCP_SOCKBUF", "5x"),
                                       ("DISTTRAIN_TCP_CONGESTION", "BAD!")])
def test_a_malformed_transport_variable_is_invalid_config_however_chosen(worker, transport,
                                                                        var, value):
    # A bad variable is the fix, whatever else "auto" tried; the plugin was found.
    env = {var: value, **({"DISTTRAIN_TRANSPORT": transport} if transport else {})}
    r = run([worker, "info"], env=env)
    assert r.returncode == 1, r.stdout
    assert "DT_ERR_INVALID_CONFIG" in r.stderr, r.stderr
    assert "DT_ERR_PLUGIN_NOT_FOUND" not in r.stderr, r.stderr
    assert f"{var}='{value}'" in r.stderr, r.stderr


@pytest.mark.parametrize("env,expect", [
    ({"DISTTRAIN_SHM": "0", "DISTTRAIN_ALGORITHM": "bogus"},
     "DISTTRAIN_ALGORITHM='bogus' is not an allreduce algorithm; expected ring, "
     "halving_doubling, recursive_doubling, shm or auto"),
    ({"DISTTRAIN_SHM_SLICE": "128K"},
     "DISTTRAIN_SHM_SLICE='128K' is not an integer; expected an integer in [0, 1073741824]"),
    ({"DISTTRAIN_SHM": "0", "DISTTRAIN_SHM_SPIN_US": "-1"},
     "DISTTRAIN_SHM_SPIN_US='-1' is out of range"),
    ({"DISTTRAIN_SHM_ONESHOT": "big"}, "DISTTRAIN_SHM_ONESHOT='big' is not an integer"),
    ({"DISTTRAIN_SHM": "0", "DISTTRAIN_ALGORITHM": "shm"},
     "DISTTRAIN_ALGORITHM=shm forces allreduce into shared memory, but DISTTRAIN_SHM=0 "
     "turns shared memory off; unset one of them"),
])
def test_malformed_routing_variable_fails_create(worker, env, expect):
    # The routing policy is parsed once at dt_context_create: a setting of a path that
    # this job never takes (shared memory off, one rank) still fails there, not at the
    # first collective that would read it.
    r = run([worker, "info"], env=env)
    assert r.returncode == 1, r.stdout
    assert "DT_ERR_INVALID_CONFIG" in r.stderr
    assert expect in r.stderr, r.stderr


def test_multi_rank_without_store_address(worker):
    r = run([worker, "info"], env={"DISTTRAIN_RANK": "0", "DISTTRAIN_SIZE": "2",
                                   "DISTTRAIN_JOB_TOKEN": "t"})
    assert r.returncode == 1
    assert "DISTTRAIN_STORE_ADDR is not set" in r.stderr


OURS = {"DISTTRAIN_SIZE": "2", "DISTTRAIN_JOB_TOKEN": "t" * 16, "DISTTRAIN_TIMEOUT": "5"}


@pytest.mark.parametrize("env,expect", [
    ({**OURS, "DISTTRAIN_RANK": "0", "DISTTRAIN_STORE_ADDR": "[::1"},
     "DISTTRAIN_STORE_ADDR='[::1' has '[' without"),
    ({**OURS, "DISTTRAIN_RANK": "1", "DISTTRAIN_STORE_ADDR": "localhost"},
     "DISTTRAIN_STORE_ADDR='localhost' has no port"),
    ({"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "a b", "MASTER_PORT": "5",
      "DISTTRAIN_JOB_TOKEN": "t" * 16},
     "MASTER_ADDR:MASTER_PORT+1 (a b:5)='a b:6' has a host with spaces"),
])
def test_malformed_store_address_names_its_source(worker, env, expect):
    # Rank 0 binds the address and the others connect to it: either way the message
    # names the variables the user set, not the store's role.
    r = run([worker, "info"], env=env)
    assert r.returncode == 1
    assert "DT_ERR_INVALID_CONFIG" in r.stderr
    assert expect in r.stderr, r.stderr


def test_multi_rank_without_token(worker):
    r = run([worker, "info"], env={"DISTTRAIN_RANK": "0", "DISTTRAIN_SIZE": "2",
                                   "DISTTRAIN_STORE_ADDR": "127.0.0.1:1"})
    assert r.returncode == 1
    assert "DISTTRAIN_JOB_TOKEN is not set" in r.stderr


# What srun --mpi=pmi2 sets for task 0 of 2 (its PMI_RANK as mpirun's Hydra does).
SRUN_PMI2 = {"SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_STEP_ID": "0",
             "SLURM_JOB_ID": "7", "PMI_RANK": "0", "PMI_SIZE": "2"}


@pytest.mark.parametrize("given,missing", [
    ({"DISTTRAIN_JOB_TOKEN": "t" * 32}, "DISTTRAIN_STORE_ADDR"),
    ({"DISTTRAIN_STORE_ADDR": "127.0.0.1:1"}, "DISTTRAIN_JOB_TOKEN"),
])
def test_srun_task_with_store_or_token_alone_names_the_other(worker, given, missing):
    # Either alone keeps the ranks from meeting through Slurm's PMI2, which would replace
    # what was set by hand: the error names the one missing, before any transport or PMI2.
    r = run([worker, "info"], env={**SRUN_PMI2, **given}, timeout=30)
    assert r.returncode == 1
    assert "DT_ERR_INVALID_CONFIG" in r.stderr, r.stderr
    assert f"{next(iter(given))} is set but {missing} is not (rank 0 of 2 from srun)" \
        in r.stderr, r.stderr
    assert "Slurm's PMI2" in r.stderr, r.stderr


def test_store_that_never_answers_times_out(worker):
    """A server that accepts connections but never speaks: the rank must give up."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    port = server.getsockname()[1]
    held = []
    stop = threading.Event()

    def accept():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                pass

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    try:
        start = time.monotonic()
        r = run([worker, "info"], timeout=60, env={
            "DISTTRAIN_RANK": "1", "DISTTRAIN_SIZE": "2", "DISTTRAIN_JOB_TOKEN": "t",
            "DISTTRAIN_STORE_ADDR": f"127.0.0.1:{port}", "DISTTRAIN_STORE_SERVER": "launcher",
            "DISTTRAIN_TIMEOUT": "2"})
        elapsed = time.monotonic() - start
    finally:
        stop.set()
        t.join()
        for c in held:
            c.close()
        server.close()
    assert r.returncode == 1
    assert "DT_ERR_TIMEOUT" in r.stderr
    assert f"127.0.0.1:{port}" in r.stderr
    assert elapsed < 30


def test_wrong_job_token_is_refused(worker):
    """Rank 0 serves the store with one token; rank 1 arrives with another."""
    port = free_port()
    common = {"DISTTRAIN_SIZE": "2", "DISTTRAIN_STORE_ADDR": f"127.0.0.1:{port}",
              "DISTTRAIN_TIMEOUT": "4", "DISTTRAIN_STORE_SERVER": "rank0"}
    import subprocess
    from conftest import clean_env
    rank0 = subprocess.Popen([str(worker), "info"], text=True, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE,
                             env=clean_env({**common, "DISTTRAIN_RANK": "0",
                                            "DISTTRAIN_JOB_TOKEN": "right-token"}))
    try:
        time.sleep(0.5)
        r1 = run([worker, "info"], timeout=60,
                 env={**common, "DISTTRAIN_RANK": "1", "DISTTRAIN_JOB_TOKEN": "wrong-token"})
        out0, err0 = rank0.communicate(timeout=60)
    finally:
        rank0.kill()
    assert r1.returncode == 1
    assert "DT_ERR_AUTH" in r1.stderr
    assert "DISTTRAIN_JOB_TOKEN" in r1.stderr
    # Rank 0 logged the refusal and gave up waiting for its peer, saying that a process
    # came with another token rather than that nothing came.
    assert rank0.returncode == 1
    assert "refused" in err0
    assert "rank 1 of 2 did not reach the rendezvous store" in err0, err0
    assert ("meanwhile the store this rank serves refused 1 connection that proved another "
            "job token (the last from 127.0.0.1:") in err0, err0
    assert "a rank started with another DISTTRAIN_JOB_TOKEN cannot join" in err0, err0


def test_invalid_arguments_return_clear_errors(worker):
    r = run([worker, "badargs"])
    assert r.returncode == 0, r.stdout + r.stderr
    assert "negative count: DT_ERR_INVALID_ARGUMENT" in r.stdout
    assert "a negative number converted to size_t" in r.stdout
    assert "dtype 42 is not a dt_dtype_t" in r.stdout
    assert "sendbuf must not be NULL" in r.stdout or "sendbuf is NULL" in r.stdout
    assert "root 7 is not a rank" in r.stdout
    # Each error names the function the caller wrote, not the form it is built on.
    assert "null sendbuf: DT_ERR_INVALID_ARGUMENT: invalid argument: dt_allreduce: " in r.stdout
    assert "null sendbuf async: DT_ERR_INVALID_ARGUMENT: invalid argument: dt_allreduce_async: " \
        "sendbuf is NULL" in r.stdout
    assert "null request: DT_ERR_INVALID_ARGUMENT: invalid argument: dt_barrier_async: req " \
        "must not be NULL" in r.stdout


def test_ranks_disagreeing_on_count_fail_instead_of_hanging(worker, disttrainrun):
    cmd = [disttrainrun, "-np", "2", "sh", "-c",
           f'exec {worker} allreduce $((1000 + DISTTRAIN_RANK * 1000))']
    r = run(cmd, timeout=90, env={"DISTTRAIN_TIMEOUT": "20"})
    assert r.returncode != 0
    assert "error: dt_allreduce" in r.stderr


@pytest.mark.parametrize("create", ["dt_context_create_versioned", "dt_compute_create_versioned"])
@pytest.mark.parametrize("major,minor", [(0, 0), (2, 0), ("this", 1)])
def test_a_program_built_for_an_api_the_library_lacks_is_refused(create, major, minor):
    # What a program compiled against other headers passes: another major version, or a
    # minor one newer than the library provides ("this": the library's own major).
    lib = ctypes.CDLL(str(build_path("core", "libdisttrain.so.1")))
    lib.dt_last_error.restype = ctypes.c_char_p
    v = _lib.Version()
    assert lib.dt_get_version(ctypes.byref(v)) == 0
    if major == "this":
        major, minor = v.api_major, v.api_minor + 1
    handle = ctypes.c_void_p()
    status = getattr(lib, create)(major, minor, None, ctypes.byref(handle))
    message = lib.dt_last_error().decode()
    assert status == -3, message  # DT_ERR_VERSION
    assert handle.value is None
    assert f"compiled against libdisttrain API {major}.{minor} but the loaded library " \
           f"provides API {v.api_major}.{v.api_minor}" in message, message
