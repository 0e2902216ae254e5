# SPDX-License-Identifier: Apache-2.0
"""fork() after a context exists (dt_fork_worker.c): the child's calls on its copies of
the context, a group and a request fail naming the parent, destroying them releases
nothing of the parent's (no hang in the child, no departure seen by the peers), and the
parent's job goes on. Each job has a hard timeout, and the worker kills a child that
hangs, so a hang is a failure that leaves no process behind."""
import pytest

from conftest import build_path, run


@pytest.fixture(scope="module")
def worker():
    return build_path("tests", "integration", "dt_fork_worker")


def assert_forked_ok(r, np):
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "error:" not in out, out
    assert out.count("[fork] child done, 0 failures") == np, out
    assert out.count("[fork] ok") == np, out


@pytest.mark.parametrize("shm", ["0", "1"])
def test_a_forked_child_leaves_the_parents_job_alone(disttrainrun, worker, shm):
    r = run([disttrainrun, "-np", "2", "--timeout", "60", worker],
            env={"DISTTRAIN_SHM": shm}, timeout=90)
    assert_forked_ok(r, 2)


def test_a_forked_child_of_a_single_process(worker):
    assert_forked_ok(run([worker], timeout=60), 1)
