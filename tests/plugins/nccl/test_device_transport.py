# SPDX-License-Identifier: Apache-2.0
"""A device transport beside the host transport (DISTTRAIN_DEVICE_TRANSPORT=nccl): device
memory of the fake device goes over the NCCL plugin's native collectives, here on the
test-only NCCL and CUDA runtime mocks (which move fake-device memory through its shadow;
the mock's ranks are processes of this host, joined through shared memory), on 1 and 2
ranks. A rank dying in the middle of a device collective fails the survivor promptly; a
rank without a GPU makes every rank decline alike. Setting errors fail create naming the
variable. Every job has a hard timeout."""
import os
import re
import socket
import subprocess
import time

import pytest

from conftest import BUILD, clean_env, run

NCCL = BUILD / "plugins" / "transport" / "nccl"
MOCKS = BUILD / "tests" / "plugins" / "nccl"
FAKE = BUILD / "tests" / "plugins" / "fakedevice"
CONFORMANCE = BUILD / "tests" / "plugins" / "conformance" / "dt_conformance"
WORKER = BUILD / "tests" / "integration" / "dt_worker"
LAUNCHER = BUILD / "core" / "launch" / "disttrainrun"

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


def launch(ranks, program, timeout_s=100, grace_s=None):
    if ranks == 1:
        return list(program)
    cmd = [LAUNCHER, "-np", ranks, "--timeout", timeout_s]
    if grace_s is not None:
        cmd += ["--grace", grace_s]
    return cmd + ["--"] + list(program)


def per_rank(rank, variables, program):
    """program run through a shell that exports variables on rank `rank` only."""
    exports = " ".join(f"export {k}={v};" for k, v in variables.items())
    return ["sh", "-c", f'if [ "$DISTTRAIN_RANK" = {rank} ]; then {exports} fi; exec "$@"',
            "sh"] + list(program)


@pytest.mark.parametrize("ranks", [1, 2])
@pytest.mark.parametrize("mode", [{}, {"DISTTRAIN_ORDERED": "1"},
                                  {"DISTTRAIN_FAKE_DEVICE_DELAY_US": "100"},
                                  {"DISTTRAIN_MOCK_NCCL_ENQUEUE": "sync"}],
                         ids=["negotiated", "ordered", "slowcopies", "syncenqueue"])
def test_device_memory_runs_on_the_device_transport(mode, ranks):
    r = run(launch(ranks, [CONFORMANCE, "--device", "--no-large"]),
            env=env({"DISTTRAIN_LOG_LEVEL": "debug", **mode}), timeout=120)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-6000:]
    assert f"PASS ranks={ranks} transport=tcp memory=fakedevice" in r.stdout, out[-3000:]
    paths = {}
    for kind, memory, path in re.findall(
            r"routing: (\w+) '[^']*' \(\d+ B, \d+ ranks, (\w+) memory\): (\w+)", r.stderr):
        # The uneven kinds have no native collective anywhere: they are staged.
        uneven = kind in ("allgatherv", "alltoallv")
        paths.setdefault(memory + ("-uneven" if uneven else ""), set()).add(path)
    assert paths.get("device") == {"device_native"}, paths
    assert paths.get("device-uneven", {"staging"}) == {"staging"}, paths
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


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_rank_dying_mid_collective_fails_the_survivor_promptly():
    # Two ranks started by hand (rank 0 serves the store), so nothing stops the survivor
    # but its own error. Rank 1 exits inside its third device collective, before its
    # part left. The survivor hears of it at once, not at a deadline: DISTTRAIN_TIMEOUT
    # is 60 s.
    common = {"DISTTRAIN_SIZE": "2", "DISTTRAIN_LOCAL_SIZE": "2",
              "DISTTRAIN_STORE_ADDR": f"127.0.0.1:{free_port()}",
              "DISTTRAIN_STORE_SERVER": "rank0", "DISTTRAIN_JOB_TOKEN": "dying-rank",
              "DISTTRAIN_TIMEOUT": "60", "DISTTRAIN_MOCK_NCCL_EXIT_AT": "1:3"}
    procs = []
    try:
        start = time.monotonic()
        for rank in (0, 1):
            procs.append(subprocess.Popen(
                [str(CONFORMANCE), "--device", "--no-large"], text=True,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                env=clean_env(env({**common, "DISTTRAIN_RANK": str(rank),
                                   "DISTTRAIN_LOCAL_RANK": str(rank)}))))
        out1 = procs[1].communicate(timeout=60)
        out0 = procs[0].communicate(timeout=60)
        elapsed = time.monotonic() - start
    finally:
        for p in procs:
            p.kill()
    assert procs[1].returncode == 3, out1[1][-3000:]
    assert procs[0].returncode not in (0, None), out0[1][-3000:]
    # NCCL's remote error or the host transport's lost connection, whichever comes first
    # (the plugin's own detection is checked alone in nccl_mock's NcclProcesses).
    err = out0[1]
    assert ("rank 1 (pid" in err and "exited" in err) or \
        "lost the connection to rank 1" in err, err[-3000:]
    assert elapsed < 20, f"the survivor took {elapsed:.1f} s: {out0[1][-3000:]}"


def test_a_rank_without_a_gpu_makes_every_rank_decline_alike(tmp_path):
    # Rank 1 leaves only once rank 0 has: the launcher stops every rank as soon as one
    # fails, which on a loaded host could cut rank 0 off before it says why it declined.
    done = tmp_path / "rank0-done"
    after_rank0 = (f'"$@"; s=$?; if [ "$DISTTRAIN_RANK" = 0 ]; then touch {done}; else '
                   f'n=0; while [ ! -e {done} ] && [ $n -lt 300 ]; do sleep 0.1; '
                   f'n=$((n + 1)); done; fi; exit $s')
    program = ["sh", "-c", after_rank0, "sh", WORKER, "info"]
    r = run(launch(2, per_rank(1, {"DISTTRAIN_MOCK_CUDA_DEVICES": "0"}, program)),
            env=env(), timeout=90)
    out = r.stdout + r.stderr
    assert r.returncode != 0, out[-4000:]
    lines = [l for l in out.splitlines() if "declined on every rank" in l]
    assert len(lines) >= 2, out[-4000:]  # both ranks, with one reason
    for line in lines:
        assert "rank 1: no GPU: cudaGetDeviceCount failed: cudaErrorNoDevice" in line, line
        assert "rank 0:" not in line, line


GROUPS = BUILD / "tests" / "plugins" / "nccl" / "dt_device_groups"
ROUTING = re.compile(r"routing: (\w+) '([^']*)' \(\d+ B, \d+ ranks, (\w+) memory\): (\w+)")


def device_paths(stderr, prefix):
    return {path for _, name, memory, path in ROUTING.findall(stderr)
            if memory == "device" and name.startswith(prefix)}


@pytest.mark.parametrize("mode", [{}, {"DISTTRAIN_ORDERED": "1"}], ids=["negotiated", "ordered"])
@pytest.mark.parametrize("ranks", [2, 3])
def test_a_group_runs_on_its_own_split_communicator(ranks, mode, tmp_path):
    # With 3 ranks, rank 1 is outside the group: it takes part in the split without a
    # color and gets no communicator.
    log = tmp_path / "nccl.log"
    r = run(launch(ranks, [GROUPS, "group"]),
            env=env({"DISTTRAIN_LOG_LEVEL": "debug", "DISTTRAIN_MOCK_NCCL_LOG": str(log),
                     **mode}),
            timeout=120)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-6000:]
    assert r.stdout.count("PASS group") == ranks, out[-3000:]
    assert device_paths(r.stderr, "g.") == {"device_native"}, out[-3000:]
    calls = log.read_text().splitlines()
    assert calls.count("ncclCommSplit") == ranks, calls
    # Two members' communicators and the job's: each destroyed once, none aborted.
    assert calls.count("ncclCommDestroy") == ranks + 2, calls
    assert calls.count("ncclCommAbort") == 0, calls


def test_without_ncclcommsplit_a_group_is_staged_saying_why():
    r = run(launch(2, [GROUPS, "group"]),
            env=env({"DISTTRAIN_LOG_LEVEL": "debug",
                     "DISTTRAIN_NCCL_LIBRARY": str(MOCKS / "libnccl-mock-nosplit.so")}),
            timeout=120)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-6000:]
    assert device_paths(r.stderr, "g.") == {"staging"}, out[-3000:]
    assert "device collectives are staged" in r.stderr and "has no ncclCommSplit" in r.stderr, \
        out[-3000:]


def test_a_ready_batch_of_device_allreduces_is_issued_as_one_nccl_group(tmp_path):
    log = tmp_path / "nccl.log"
    r = run(launch(2, [GROUPS, "batch"]),
            env=env({"DISTTRAIN_LOG_LEVEL": "debug", "DISTTRAIN_MOCK_NCCL_LOG": str(log)}),
            timeout=120)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-6000:]
    assert r.stdout.count("PASS batch") == 2, out[-3000:]
    groups = [int(line.split()[1]) for line in log.read_text().splitlines()
              if line.startswith("ncclGroupEnd ")]
    assert groups and max(groups) >= 2, groups  # several allreduces in one NCCL group
    assert "device_native_batch" in r.stderr, out[-3000:]
    assert device_paths(r.stderr, "fusion") == set(), out[-3000:]  # nothing staged


# DISTTRAIN_DEVICE_TRANSPORT=auto: nccl where every rank has a GPU of its own (the mock
# CUDA runtime's DISTTRAIN_MOCK_CUDA_DEVICES; local rank r takes GPU r), staging otherwise.
def auto_env(extra=None):
    return env({"DISTTRAIN_DEVICE_TRANSPORT": "auto", "DISTTRAIN_LOG_LEVEL": "debug",
                **(extra or {})})


def run_auto(extra, program=None):
    r = run(launch(2, program or [CONFORMANCE, "--device", "--no-large"]),
            env=auto_env(extra), timeout=120)
    assert r.returncode == 0, (r.stdout + r.stderr)[-6000:]
    return r


def device_kinds(stderr):
    return {path for kind, _, memory, path in ROUTING.findall(stderr)
            if memory == "device" and kind not in ("allgatherv", "alltoallv")}


def test_auto_picks_nccl_where_every_rank_has_a_gpu_of_its_own():
    r = run_auto({"DISTTRAIN_MOCK_CUDA_DEVICES": "2"})
    assert r.stderr.count("every rank has a GPU of its own") == 2, r.stderr[-3000:]
    assert device_kinds(r.stderr) == {"device_native"}, r.stderr[-3000:]


@pytest.mark.parametrize("case,extra,why", [
    ("shared_gpu", {"DISTTRAIN_MOCK_CUDA_DEVICES": "1"}, "would share the GPU"),
    ("no_plugin", {"DISTTRAIN_PLUGIN_PATH":
                   f"{BUILD / 'plugins/transport/tcp'}:{FAKE}"},
     "transport plugin 'nccl' not found"),
], ids=["shared_gpu", "no_plugin"])
def test_auto_stages_and_says_why(case, extra, why):
    r = run_auto(extra)
    lines = [l for l in r.stderr.splitlines() if "device memory is staged" in l]
    assert len(lines) == 2 and all(why in l for l in lines), r.stderr[-3000:]
    assert device_kinds(r.stderr) == {"staging"}, r.stderr[-3000:]


def test_auto_stages_on_every_rank_when_one_has_no_gpu():
    r = run(launch(2, per_rank(1, {"DISTTRAIN_MOCK_CUDA_DEVICES": "0"},
                               [CONFORMANCE, "--device", "--no-large"])),
            env=auto_env({"DISTTRAIN_MOCK_CUDA_DEVICES": "2"}), timeout=120)
    assert r.returncode == 0, (r.stdout + r.stderr)[-6000:]
    lines = [l for l in r.stderr.splitlines() if "device memory is staged" in l]
    assert len(lines) == 2 and all("rank 1: no GPU" in l for l in lines), r.stderr[-3000:]
    assert device_kinds(r.stderr) == {"staging"}, r.stderr[-3000:]


def test_auto_without_a_memory_provider_loads_nothing(tmp_path):
    log = tmp_path / "nccl.log"
    r = run(launch(2, [WORKER, "info"]),
            env=auto_env({"DISTTRAIN_MEMORY": "none", "DISTTRAIN_MOCK_NCCL_LOG": str(log),
                          "LD_DEBUG": "files"}), timeout=60)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "libdt-transport-nccl.so" not in r.stderr, "the nccl plugin was opened"
    assert "libcudart" not in r.stderr and not log.exists()
    assert "no memory provider" in r.stderr


def test_dt_context_abort_mid_allreduce_returns_within_a_second(tmp_path):
    # Ordered mode: rank 0's device allreduce goes straight to the nccl transport and
    # waits there for rank 1, which joins 3 s late; rank 0 aborts after 0.3 s.
    log = tmp_path / "nccl.log"
    r = run(launch(2, [GROUPS, "abort"], grace_s=10),
            env=env({"DISTTRAIN_ORDERED": "1", "DISTTRAIN_MOCK_NCCL_LOG": str(log)}),
            timeout=60)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    m = re.search(r"returned DT_ERR_ABORTED.* (\d+) ms after dt_context_abort", r.stdout)
    assert m and int(m.group(1)) < 1000, out[-4000:]
    assert "ncclCommAbort" in log.read_text().splitlines(), out[-4000:]


# The producer's stream. Every call of `dt_device_groups producer` is made while the last
# write of its input is still queued on the producer's stream (a copy 100 ms slow): it
# passes only if the collective waited for that write, on the GPU or on the host. With
# the cuda memory provider (here on the mock CUDA runtime, libcudart.so.13 of
# MOCKS/cudart13, which the provider links and the plugin opens: one runtime in the
# process) the core runs each blocking call on the producer's stream (launch_on_stream)
# and hands each asynchronous call's event to the plugin, whose stream waits for it
# (cudaStreamWaitEvent in the mock's log); the host waits for nothing.
CUDA_PROVIDER = BUILD / "plugins" / "memory" / "cuda"
CUDART13 = MOCKS / "cudart13"
SUMMARY = re.compile(r"device transport 'nccl': (\d+) calls ran on their producer's stream, "
                     r"(\d+) waited for their producer on the device, (\d+) on the host")


def producer_env(tmp_path, extra=None):
    if not (CUDA_PROVIDER / "libdt-memory-cuda.so").exists() or \
            not (CUDART13 / "libcudart.so.13").exists():
        pytest.skip("the cuda memory provider (cudart under /usr/local/cuda) or the mock "
                    "libcudart.so.13 was not built")
    ld_path = os.environ.get("LD_LIBRARY_PATH", "")
    return env({"DISTTRAIN_PLUGIN_PATH":
                f"{BUILD / 'plugins/transport/tcp'}:{NCCL}:{CUDA_PROVIDER}",
                "DISTTRAIN_MEMORY": "cuda",
                "LD_LIBRARY_PATH": f"{CUDART13}:{ld_path}" if ld_path else str(CUDART13),
                "DISTTRAIN_CUDA_RUNTIME_LIBRARY": str(CUDART13 / "libcudart.so.13"),
                "DISTTRAIN_MOCK_CUDA_COPY_DELAY_US": "100000",
                "DISTTRAIN_MOCK_CUDA_LOG": str(tmp_path / "cuda.log"),
                "DISTTRAIN_LOG_LEVEL": "debug", **(extra or {})})


def run_producer(ranks, e):
    r = run(launch(ranks, [GROUPS, "producer"]), env=e, timeout=120)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-6000:]
    assert r.stdout.count("PASS producer") == ranks, out[-3000:]
    assert device_paths(r.stderr, "producer.") == {"device_native"}, out[-3000:]
    waits = [tuple(int(n) for n in counts) for counts in SUMMARY.findall(r.stderr)]
    assert len(waits) == ranks, out[-3000:]
    return r, waits


def blocking_calls(ranks):
    return 1 + (1 if ranks >= 2 else 0)  # one, the group's


def calls_per_rank(ranks):
    return blocking_calls(ranks) + 4  # and the batch of 4, asynchronous


@pytest.mark.parametrize("ranks,mode", [(1, {}), (2, {}), (2, {"DISTTRAIN_ORDERED": "1"}),
                                        (2, {"DISTTRAIN_MOCK_NCCL_ENQUEUE": "sync"})],
                         ids=["1-negotiated", "2-negotiated", "2-ordered", "2-syncenqueue"])
def test_device_calls_wait_for_the_producer_on_the_gpu(ranks, mode, tmp_path):
    # The blocking calls run on the producer's stream, which needs no wait; the
    # asynchronous ones wait for its event on the GPU.
    r, waits = run_producer(ranks, producer_env(tmp_path, mode))
    blocking = blocking_calls(ranks)
    asynchronous = calls_per_rank(ranks) - blocking
    assert waits == [(blocking, asynchronous, 0)] * ranks, r.stderr[-3000:]
    waited = (tmp_path / "cuda.log").read_text().splitlines()
    assert waited.count("cudaStreamWaitEvent") == asynchronous * ranks, waited
    assert "runs blocking calls on their producer's stream (memory provider 'cuda')" \
        in r.stderr, r.stderr[-3000:]
    assert "waits on the device for the producers' events of memory provider 'cuda'" \
        in r.stderr, r.stderr[-3000:]


def test_nccl_host_wait_makes_the_core_wait_on_the_host(tmp_path):
    r, waits = run_producer(2, producer_env(tmp_path, {"DISTTRAIN_NCCL_HOST_WAIT": "1"}))
    assert waits == [(0, 0, calls_per_rank(2))] * 2, r.stderr[-3000:]
    log = tmp_path / "cuda.log"
    assert not log.exists() or "cudaStreamWaitEvent" not in log.read_text()
    assert "DISTTRAIN_NCCL_HOST_WAIT=1 asks the core to wait" in r.stderr, r.stderr[-3000:]


def test_events_the_plugin_cannot_read_are_waited_for_on_the_host():
    # The fake device's events are not CUDA events: the plugin refuses them once, and the
    # core waits for each call's producer on the host (its copies are 100 ms slow).
    r = run(launch(2, [GROUPS, "producer"]),
            env=env({"DISTTRAIN_LOG_LEVEL": "debug",
                     "DISTTRAIN_FAKE_DEVICE_DELAY_US": "100000"}), timeout=120)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-6000:]
    assert r.stdout.count("PASS producer") == 2, out[-3000:]
    assert device_paths(r.stderr, "producer.") == {"device_native"}, out[-3000:]
    waits = [tuple(int(n) for n in counts) for counts in SUMMARY.findall(r.stderr)]
    assert waits == [(0, 0, calls_per_rank(2))] * 2, out[-3000:]
    assert r.stderr.count("memory provider 'fakedevice' are not CUDA events") == 2, \
        out[-3000:]
    assert r.stderr.count("memory provider 'fakedevice' are not CUDA streams") == 2, \
        out[-3000:]


def test_a_bad_nccl_host_wait_value_fails_create_naming_it():
    r = run([WORKER, "info"], env=env({"DISTTRAIN_NCCL_HOST_WAIT": "yes"}), timeout=60)
    assert r.returncode != 0, r.stdout
    assert "DISTTRAIN_NCCL_HOST_WAIT='yes'" in r.stderr, r.stderr
