# SPDX-License-Identifier: Apache-2.0
"""The Horovod-parity API of the Python binding: one default reduction (average) and one
root spelling (root_rank=) across numpy and torch, grouped_allreduce, allgather_object and
broadcast_object, torch's uneven allgather and alltoall with splits. In one process, and
on 2 ranks (jobs/parity_job.py) where the results tell the operators apart."""
import inspect
import warnings

import numpy as np
import pytest

torch = pytest.importorskip(
    "torch", reason="PyTorch is not installed (Debian: apt-get install python3-torch)")

import dtpy  # noqa: E402

dtpy.use_build_tree()
import disttrain  # noqa: E402
import disttrain.torch as dt  # noqa: E402


@pytest.fixture(scope="module")
def ctx():
    c = disttrain.init()
    yield c
    disttrain.shutdown()


def test_parity_api_on_two_ranks():
    dtpy.assert_ranks_ok(dtpy.run_job("parity_job.py", np=2, timeout=90), np=2)


def test_parity_api_on_two_ranks_ordered():
    dtpy.assert_ranks_ok(dtpy.run_job("parity_job.py", np=2, timeout=90,
                                      env={"DISTTRAIN_ORDERED": "1"}), np=2)


@pytest.mark.parametrize("fn", [disttrain.allreduce, disttrain.allreduce_,
                                disttrain.Context.allreduce_async, dt.allreduce,
                                dt.allreduce_async_, disttrain.Context.reduce_scatter,
                                dt.reduce_scatter, disttrain.Context.grouped_allreduce,
                                dt.grouped_allreduce])
def test_every_reduction_defaults_to_average(fn):
    target = getattr(disttrain.Context, fn.__name__) if fn.__module__ == "disttrain" else fn
    default = inspect.signature(target).parameters["op"].default
    assert disttrain.types.to_op(default) == disttrain.Average, (fn, default)


@pytest.mark.parametrize("call", [
    lambda: disttrain.broadcast(np.ones(2), root=0),
    lambda: disttrain.broadcast_(np.ones(2), root=0),
    lambda: disttrain.broadcast_async(np.ones(2), root=0).wait(),
    lambda: disttrain.broadcast_async_(np.ones(2), root=0).wait(),
    lambda: disttrain.broadcast_object("x", root=0),
    lambda: dt.broadcast(torch.ones(2), root=0),
    lambda: dt.broadcast_(torch.ones(2), root=0),
    lambda: dt.broadcast_parameters({"w": torch.ones(2)}, root=0),
    lambda: dt.broadcast_object("x", root=0),
])
def test_root_is_deprecated_for_root_rank(ctx, call):
    with pytest.warns(DeprecationWarning, match="root_rank="):
        call()


@pytest.mark.parametrize("call", [
    lambda: disttrain.broadcast(np.ones(2), root_rank=0, root=0),
    lambda: disttrain.broadcast_(np.ones(2), 0, root=0),
    lambda: dt.broadcast(torch.ones(2), root_rank=0, root=0),
    lambda: dt.broadcast_parameters({"w": torch.ones(2)}, 0, root=0),
])
def test_root_and_root_rank_together_is_a_type_error(ctx, call):
    with pytest.raises(TypeError, match="both root_rank=0 and root=0"):
        call()


def test_root_rank_spelling_gives_no_warning(ctx):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(disttrain.broadcast(np.ones(2), root_rank=0), [1, 1])
        assert disttrain.broadcast_object({"a": 1}, root_rank=0) == {"a": 1}
    with pytest.raises(disttrain.UsageError, match="root_rank=3 is not a rank"):
        disttrain.broadcast(np.ones(2), root_rank=3)


def test_grouped_and_object_collectives_in_one_process(ctx):
    arrays = [np.arange(3, dtype=np.float32), np.ones((2, 2), np.int64)]
    out = disttrain.grouped_allreduce(arrays)
    assert len(out) == 2 and all(np.array_equal(a, b) for a, b in zip(out, arrays))
    assert out[0] is not arrays[0]
    assert disttrain.allgather_object({"k": [1, 2]}) == [{"k": [1, 2]}]
    t = dt.grouped_allreduce([torch.ones(3, dtype=torch.bfloat16)], name="g")
    assert t[0].dtype == torch.bfloat16 and t[0].tolist() == [1, 1, 1]
    assert dt.allgather_object(torch.tensor([5]))[0].tolist() == [5]
    with pytest.raises(disttrain.UsageError, match="list"):
        dt.grouped_allreduce(torch.ones(3))


def test_a_bad_member_fails_the_group_and_the_context_goes_on(ctx):
    with pytest.raises(disttrain.UsageError, match="not supported"):
        disttrain.grouped_allreduce([np.ones(2, np.float32), np.ones(2, np.complex64)])
    # The context goes on: the first member was waited for, not left in flight.
    np.testing.assert_array_equal(disttrain.allreduce(np.ones(2)), [1, 1])


def test_root_warning_names_the_users_line_and_shows_by_default(tmp_path):
    # Python hides DeprecationWarnings attributed to library modules; one attributed to
    # the script's own line is shown without any -W option.
    script = tmp_path / "old_spelling.py"
    script.write_text("import numpy as np, disttrain\n"
                      "disttrain.init()\n"
                      "disttrain.broadcast_(np.ones(2), root=0)\n")
    r = dtpy.run([dtpy.PYTHON, script], env=dtpy.job_env(), timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"{script}:3: DeprecationWarning: broadcast_(root=...) is deprecated; spell " \
           f"it root_rank=" in r.stderr, r.stderr
