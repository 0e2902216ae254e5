# SPDX-License-Identifier: Apache-2.0
"""dt_allgatherv and dt_alltoallv across processes (dt_uneven_worker.c): uneven and empty
blocks, bad arguments, and ranks that disagree on the counts, which must fail on every
rank with the ranks and counts named, and leave the context working. Each job has a hard
timeout, so a hang is a failure."""
import pytest

from conftest import build_path, run


@pytest.fixture(scope="module")
def worker():
    return build_path("tests", "integration", "dt_uneven_worker")


def uneven_job(disttrainrun, worker, np, env):
    r = run([disttrainrun, "-np", str(np), "--timeout", "60", worker], env=env,
            timeout=90)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    for what in ("allgatherv ok", "alltoallv ok", "bad arguments ok", "[uneven] ok"):
        assert out.count(what) == np, f"{what!r} not on every rank:\n{out}"
    return out


@pytest.mark.parametrize("ordered", ["0", "1"])
@pytest.mark.parametrize("np", [2, 3, 4])
def test_uneven_collectives(disttrainrun, worker, np, ordered):
    out = uneven_job(disttrainrun, worker, np, {"DISTTRAIN_ORDERED": ordered})
    assert out.count("mismatch ok") == np, out


@pytest.mark.parametrize("ordered", ["0", "1"])
def test_uneven_collectives_without_shared_memory(disttrainrun, worker, ordered):
    out = uneven_job(disttrainrun, worker, 3,
                     {"DISTTRAIN_ORDERED": ordered, "DISTTRAIN_SHM": "0"})
    assert out.count("mismatch ok") == 3, out


def test_single_process_without_launcher(worker):
    r = run([worker], timeout=60)
    assert r.returncode == 0 and "[uneven] ok" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("np", [2, 3])
def test_cxx_binding_uneven_groups_and_join(disttrainrun, np):
    # Join needs the engine's negotiation: the default mode.
    worker = build_path("tests", "integration", "dt_cxx_uneven_worker")
    r = run([disttrainrun, "-np", str(np), "--timeout", "60", worker], timeout=90)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("cxx uneven ok") == np, r.stdout + r.stderr
