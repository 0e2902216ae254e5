# SPDX-License-Identifier: Apache-2.0
"""The mpi transport as users meet it: its own plugin test under mpirun, a bare `mpirun -np
N prog` with no DISTTRAIN_* variables, the clear error without mpirun, the logged fallback
to the next transport of DISTTRAIN_TRANSPORT, and `disttrainrun --launcher mpi`.

Skipped when the mpi plugin was not built or mpirun is missing. Every job has a timeout.
"""
import re
import shutil
import sys
import textwrap

import pytest

from conftest import BINDING_DIR, BUILD, build_path, run

PLUGINS = BUILD / "plugins" / "transport"
MPI_PLUGIN = PLUGINS / "mpi" / "libdt-transport-mpi.so"
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe"]
NOT_LAUNCHED = ("DISTTRAIN_TRANSPORT=mpi but this process was not started by "
                "mpirun/mpiexec; start the job with mpirun, or choose tcp")

pytestmark = [
    pytest.mark.skipif(not MPI_PLUGIN.exists(), reason=f"mpi transport not built ({MPI_PLUGIN})"),
    pytest.mark.skipif(shutil.which("mpirun") is None, reason="mpirun not installed"),
]


def plugin_path(*names):
    return ":".join(str(PLUGINS / n) for n in names)


@pytest.mark.parametrize("ranks", [1, 2, 3])
def test_plugin_under_mpirun(ranks):
    # A 1000-byte chunk makes the test's messages travel split, as > 2 GiB ones would.
    prog = build_path("tests", "plugins", "mpi", "mpi_plugin_test")
    r = run(MPIRUN + ["-np", ranks, prog], env={"DISTTRAIN_MPI_CHUNK_BYTES": "1000"},
            timeout=120)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-6000:]
    assert out.count("mpi_plugin_test: PASS") == ranks, out[-6000:]


@pytest.mark.parametrize("ranks", [2, 3])
def test_plugin_errors_are_statuses_not_aborts(ranks):
    """A truncated receive and a broadcast whose ranks disagree on the count fail their
    requests with MPI's text, and the instance goes on; before, Open MPI aborted the job
    (MPI_ERRORS_ARE_FATAL on MPI_COMM_WORLD). Every rank saw an error, so every rank
    reaches MPI_Finalize, time-limited after a failure, and the job ends cleanly."""
    prog = build_path("tests", "plugins", "mpi", "mpi_plugin_test")
    r = run(MPIRUN + ["-np", ranks, prog, "--errors"], timeout=120)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-6000:]
    assert out.count("mpi_plugin_test: PASS") == ranks, out[-6000:]
    assert "MPI_ERRORS_ARE_FATAL" not in out, out[-6000:]


def test_an_abort_lets_a_send_it_cannot_cancel_finish():
    """Open MPI cancels no send. An abort right after a send too large to go eagerly must
    let it complete (the receiver gets it whole) rather than leave it to MPI, which would
    cost the rank its MPI_Finalize and the job mpirun's exit 1 ("exiting improperly"),
    as a peer leaving cleanly during a negotiation once did on a loaded host."""
    prog = build_path("tests", "plugins", "mpi", "mpi_plugin_test")
    r = run(MPIRUN + ["-np", 2, prog, "--abort-sending"], timeout=120)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-6000:]
    assert out.count("mpi_plugin_test: PASS") == 2, out[-6000:]
    assert "exiting improperly" not in out, out[-6000:]


# Sums of int8 and uint8 wrap (C's arithmetic, and every other transport's), whatever the
# count: Open MPI 4.1's AVX reductions saturate them from 16 elements on.
WRAPPING_SUMS = textwrap.dedent("""
    import numpy as np
    import disttrain
    ctx = disttrain.init()
    n = ctx.size()
    for count in (1, 15, 16, 64, 1000):
        s = ctx.allreduce(np.full(count, 100, np.int8), op="sum")
        u = ctx.allreduce(np.full(count, 200, np.uint8), op="sum")
        a = ctx.allreduce(np.full(count, 100, np.int8), op="avg")
        want = np.int8((100 * n + 128) % 256 - 128)
        assert (s == want).all(), (count, s.tolist())
        assert (u == np.uint8(200 * n % 256)).all(), (count, u.tolist())
        assert (a == np.int8(int(want) // n if want >= 0 else -(-int(want) // n))).all(), \
            (count, a.tolist())
    print("wrapping sums ok", flush=True)
    disttrain.shutdown()
""")


def test_8bit_integer_sums_wrap_as_on_every_other_transport(tmp_path):
    job = tmp_path / "wrapping_sums.py"
    job.write_text(WRAPPING_SUMS)
    env = {"DISTTRAIN_TRANSPORT": "mpi", "DISTTRAIN_PLUGIN_PATH": plugin_path("mpi"),
           "DISTTRAIN_LIBRARY": build_path("core", "libdisttrain.so"),
           "PYTHONPATH": BINDING_DIR, "OMP_NUM_THREADS": "1"}
    r = run(MPIRUN + ["-np", "3", sys.executable, job], env=env, timeout=120)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-6000:]
    assert out.count("wrapping sums ok") == 3, out[-6000:]


# min and max of float32 and float64 are NaN wherever some rank's value is (core/reduce/
# ops.h, and every other transport), whichever rank holds it: MPI_MIN and MPI_MAX keep or
# drop a NaN by the order the values meet in.
NAN_MIN_MAX = textwrap.dedent("""
    import numpy as np
    import disttrain
    ctx = disttrain.init()
    n, me = ctx.size(), ctx.rank()

    def values(rank, count):
        v = np.arange(count, dtype=np.float64) + rank
        holder = np.arange(count) % (n + 1)  # the rank with a NaN there; n: none
        v[holder == rank] = np.nan
        return v, holder < n

    for dtype in (np.float32, np.float64):
        for op, fn in (("min", np.min), ("max", np.max)):
            mine, has_nan = values(me, 64)
            got = ctx.allreduce(mine.astype(dtype), op=op)
            ranks = np.array([values(r, 64)[0] for r in range(n)])
            want = np.where(has_nan, np.nan, fn(np.nan_to_num(ranks, nan=0), axis=0))
            np.testing.assert_array_equal(got, want.astype(dtype), err_msg=f"{dtype} {op}")
            mine, _ = values(me, 64 * n)
            got = ctx.reduce_scatter(mine.astype(dtype), op=op)
            block = slice(64 * me, 64 * (me + 1))
            ranks = np.array([values(r, 64 * n)[0] for r in range(n)])[:, block]
            _, has_nan = values(0, 64 * n)
            want = np.where(has_nan[block], np.nan, fn(np.nan_to_num(ranks, nan=0), axis=0))
            np.testing.assert_array_equal(got, want.astype(dtype), err_msg=f"{dtype} {op} rs")
    print("nan min max ok", flush=True)
    disttrain.shutdown()
""")


@pytest.mark.parametrize("shm", ["0", "1"])
def test_float_min_and_max_keep_nan_as_on_every_other_transport(tmp_path, shm):
    job = tmp_path / "nan_min_max.py"
    job.write_text(NAN_MIN_MAX)
    env = {"DISTTRAIN_TRANSPORT": "mpi", "DISTTRAIN_PLUGIN_PATH": plugin_path("mpi"),
           "DISTTRAIN_LIBRARY": build_path("core", "libdisttrain.so"),
           "PYTHONPATH": BINDING_DIR, "OMP_NUM_THREADS": "1", "DISTTRAIN_SHM": shm}
    r = run(MPIRUN + ["-np", "3", sys.executable, job], env=env, timeout=120)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-6000:]
    assert out.count("nan min max ok") == 3, out[-6000:]


@pytest.mark.parametrize("algorithm,path", [
    ("ring", "ring"), ("halving_doubling", "halving_doubling"),
    ("recursive_doubling", "recursive_doubling"), ("auto", "native"), ("shm", "native")])
def test_a_forced_allreduce_algorithm_runs_over_mpi_point_to_point(algorithm, path):
    """DISTTRAIN_ALGORITHM names the algorithm every allreduce runs, on mpi as on every
    transport; auto leaves it to MPI's own. Shared memory stays off beside MPI's native
    collectives, so shm is auto there, and the log says so."""
    worker = build_path("tests", "integration", "dt_worker")
    env = {"DISTTRAIN_PLUGIN_PATH": plugin_path("mpi"), "DISTTRAIN_ALGORITHM": algorithm,
           "DISTTRAIN_LOG_LEVEL": "debug"}
    r = run(MPIRUN + ["-np", "3", worker, "allreduce", "100000", "3"], env=env, timeout=120)
    assert r.returncode == 0, (r.stdout + r.stderr)[-6000:]
    assert r.stdout.count("allreduce ok") == 3, r.stdout
    ran = re.findall(r"routing: allreduce '[^']+' \(\d+ B, 3 ranks, host memory\): (\w+)",
                     r.stderr)
    assert ran and set(ran) == {path}, r.stderr[-6000:]
    told = "DISTTRAIN_ALGORITHM=shm: shared memory stays off beside the native collectives"
    assert (told in r.stderr) == (algorithm == "shm"), r.stderr[-6000:]


def test_plugin_declines_without_mpirun():
    prog = build_path("tests", "plugins", "mpi", "mpi_plugin_test")
    r = run([prog, "--decline"], timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "PASS decline" in r.stdout


def test_bare_mpirun_needs_no_disttrain_variables():
    """mpirun -np 2 prog: rank and size from Open MPI, no store, transport 'auto' is mpi."""
    worker = build_path("tests", "integration", "dt_worker")
    env = {"DISTTRAIN_PLUGIN_PATH": plugin_path("mpi", "tcp", "ucx")}
    r = run(MPIRUN + ["-np", "2", worker, "info"], env=env, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = sorted(l for l in r.stdout.splitlines() if l.startswith("rank="))
    assert lines == ["rank=0 size=2 local_rank=0 local_size=2 transport=mpi",
                     "rank=1 size=2 local_rank=1 local_size=2 transport=mpi"], r.stdout
    r = run(MPIRUN + ["-np", "3", worker, "allreduce", "100000", "5"], env=env, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("allreduce ok") == 3, r.stdout


def test_mpi_without_mpirun_is_a_clear_error(disttrainrun):
    worker = build_path("tests", "integration", "dt_worker")
    env = {"DISTTRAIN_TRANSPORT": "mpi", "DISTTRAIN_PLUGIN_PATH": plugin_path("mpi")}
    r = run([disttrainrun, "-np", "2", "--timeout", "60", "--", worker, "info"], env=env,
            timeout=90)
    assert r.returncode != 0
    assert NOT_LAUNCHED in r.stderr, r.stderr[-3000:]


def test_fallback_to_the_next_transport_is_logged(disttrainrun):
    worker = build_path("tests", "integration", "dt_worker")
    env = {"DISTTRAIN_TRANSPORT": "mpi,tcp", "DISTTRAIN_PLUGIN_PATH": plugin_path("mpi", "tcp")}
    r = run([disttrainrun, "-np", "2", "--timeout", "60", "--", worker, "info"], env=env,
            timeout=90)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.count("transport=tcp") == 2, r.stdout
    assert "transport 'mpi'" in r.stderr and "not started by mpirun" in r.stderr, r.stderr


@pytest.mark.parametrize("transport", ["mpi", "tcp"])
def test_disttrainrun_launcher_mpi(disttrainrun, transport):
    """mpirun starts the ranks; disttrainrun's store and token reach them through -x."""
    worker = build_path("tests", "integration", "dt_worker")
    env = {"DISTTRAIN_TRANSPORT": transport, "DISTTRAIN_PLUGIN_PATH": plugin_path(transport)}
    r = run([disttrainrun, "--launcher", "mpi", "-np", "3", "--timeout", "90", "--",
             worker, "allreduce", "10000", "3"], env=env, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("allreduce ok") == 3, r.stdout
    # mpirun tags the lines ([jobid,rank]<stdout>:), so every rank is told apart.
    for rank in range(3):
        assert f",{rank}]<stdout>:allreduce ok" in r.stdout, r.stdout


def test_disttrainrun_launcher_mpi_reports_a_failed_rank(disttrainrun):
    r = run([disttrainrun, "--launcher", "mpi", "-np", "2", "--timeout", "60", "--",
             "sh", "-c", "exit 3"], timeout=90)
    assert r.returncode != 0
    assert "disttrainrun:" in r.stderr, r.stderr
