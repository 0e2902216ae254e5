# SPDX-License-Identifier: Apache-2.0
"""disttrain (numpy) in one process: results, asynchronous handles and clear errors."""

import numpy as np
import pytest

import dtpy

dtpy.use_build_tree()
import disttrain  # noqa: E402


@pytest.fixture(scope="module")
def ctx():
    c = disttrain.init()
    yield c
    disttrain.shutdown()


def test_identity_of_a_single_process(ctx):
    assert (disttrain.rank(), disttrain.size()) == (0, 1)
    assert (disttrain.local_rank(), disttrain.local_size()) == (0, 1)
    assert disttrain.transport() == "tcp"
    assert disttrain.init() is ctx  # idempotent
    assert disttrain.library_path() == str(dtpy.library())
    assert disttrain.version().count(".") == 2


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int8, np.uint8,
                                   np.int32, np.int64])
def test_every_numpy_dtype_round_trips(ctx, dtype):
    x = (np.arange(24) % 7).astype(dtype).reshape(2, 3, 4)
    for op in ("sum", "avg", "min", "max", "prod"):
        y = disttrain.allreduce(x, op=op)
        assert y.dtype == x.dtype and y.shape == x.shape and y is not x
        np.testing.assert_array_equal(y, x)


def test_out_and_in_place_forms(ctx):
    x = np.arange(5, dtype=np.float32)
    out = np.zeros_like(x)
    assert disttrain.allreduce(x, out=out) is out
    np.testing.assert_array_equal(out, x)
    assert disttrain.allreduce(x, out=x) is x
    assert disttrain.allreduce_(x, op=disttrain.Average) is x
    b = np.arange(3, dtype=np.int64)
    assert disttrain.broadcast_(b, root_rank=0) is b
    np.testing.assert_array_equal(disttrain.broadcast([1, 2], 0), [1, 2])


def test_wait_takes_any_number_of_seconds_and_refuses_what_is_not_one(ctx):
    for timeout in (float("inf"), 1e12, 30, 0.5):
        h = disttrain.allreduce_async(np.ones(3, np.float32))
        np.testing.assert_array_equal(h.wait(timeout=timeout), np.ones(3))
    for timeout in (float("nan"), "1", True):
        h = disttrain.allreduce_async(np.ones(3, np.float32))
        with pytest.raises(disttrain.UsageError, match="must be a number of seconds"):
            h.wait(timeout=timeout)
        h.wait()  # the handle stays valid


def test_shape_changing_collectives(ctx):
    x = np.arange(6, dtype=np.int32).reshape(3, 2)
    np.testing.assert_array_equal(disttrain.allgather(x), x)
    assert disttrain.allgather(np.float64(2.5)).shape == (1,)
    np.testing.assert_array_equal(disttrain.reduce_scatter(x, op="sum"), x)
    np.testing.assert_array_equal(disttrain.alltoall(x), x)
    disttrain.barrier(name="sync")


def test_non_contiguous_input_is_copied_out_of_place(ctx):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]
    np.testing.assert_array_equal(disttrain.allreduce(x), x)


def test_async_handles_return_results_and_hold_buffers(ctx):
    handles = [disttrain.allreduce_async(np.full(100, i, np.float64), name=f"h{i}")
               for i in range(20)]  # the temporaries live only in the handles
    for i, h in enumerate(handles):
        np.testing.assert_array_equal(h.wait(timeout=30), np.full(100, i))
        assert h.test() and h.wait() is h.wait()  # done stays done
    x = np.ones(4, np.int32)
    h = disttrain.allreduce_async_(x, op="max")
    assert h.wait() is x
    assert disttrain.barrier_async().wait() is None
    g = disttrain.allgather_async(np.ones((2, 2), np.uint8))
    while not g.test():
        pass
    assert g.wait().shape == (2, 2)


def test_non_contiguous_in_place_is_refused(ctx):
    x = np.zeros((4, 4), np.float32)[:, 1]
    with pytest.raises(disttrain.UsageError, match="not C-contiguous"):
        disttrain.allreduce_(x)
    with pytest.raises(disttrain.UsageError, match="not C-contiguous"):
        disttrain.broadcast_(x, 0)


def test_a_bad_out_is_told_what_out_must_be(ctx):
    # The caller already uses the out-of-place form: the advice is about out itself.
    x = np.ones(3, np.float32)
    strided = np.ones(6, np.float32)[::2]
    for call in (lambda: disttrain.allreduce(x, out=strided),
                 lambda: disttrain.allreduce(strided, out=strided),
                 lambda: disttrain.allreduce_async(x, out=strided)):
        with pytest.raises(disttrain.UsageError) as e:
            call()
        assert e.value.message.startswith("out must be C-contiguous (shape (3,), strides "
                                          "(8,)): the result is written straight into its "
                                          "memory"), e.value.message
        assert "out-of-place form" not in e.value.message
    with pytest.raises(disttrain.UsageError, match="out must be a numpy.ndarray, got list"):
        disttrain.allreduce(x, out=[0.0, 0.0, 0.0])
    read_only = np.zeros(3, np.float32)
    read_only.flags.writeable = False
    with pytest.raises(disttrain.UsageError, match="out is read-only; the result is"):
        disttrain.allreduce(x, out=read_only)


@pytest.mark.parametrize("dtype", [np.complex64, np.bool_, np.uint16, ">f4"])
def test_unsupported_dtype_names_it_and_the_supported_ones(ctx, dtype):
    with pytest.raises(disttrain.UsageError) as e:
        disttrain.allreduce(np.zeros(3, dtype))
    assert str(np.dtype(dtype)) in str(e.value)
    assert "float32, float64, float16, int8, uint8, int32, int64" in str(e.value)
    assert e.value.status == -1 and e.value.status_name == "DT_ERR_INVALID_ARGUMENT"


def test_other_bad_arguments(ctx):
    x = np.ones(4, np.float32)
    with pytest.raises(disttrain.UsageError, match="not a reduction operator"):
        disttrain.allreduce(x, op="median")
    with pytest.raises(disttrain.UsageError, match="root_rank=1 is not a rank"):
        disttrain.broadcast_(x, root_rank=1)
    with pytest.raises(disttrain.UsageError, match="read-only"):
        ro = np.ones(3, np.float32)
        ro.flags.writeable = False
        disttrain.allreduce_(ro)
    with pytest.raises(disttrain.UsageError, match="must match"):
        disttrain.allreduce(x, out=np.zeros(4, np.float64))
    with pytest.raises(disttrain.UsageError, match="numpy.ndarray"):
        disttrain.allreduce_([1.0, 2.0])
    with pytest.raises(ValueError):  # UsageError is a ValueError too
        disttrain.allreduce(x, op=7)


NUL_NAME = r"name='grad\\x00weight' holds a NUL character at position 4"


def test_a_name_with_a_nul_is_refused_naming_where(ctx):
    # Ranks match collectives by name; cut at the NUL, 'grad\x00weight' and 'grad\x00bias'
    # would both be 'grad' and one rank's weights would be summed with another's biases.
    x = np.ones(4, np.float32)
    calls = [lambda n: disttrain.allreduce(x, name=n), lambda n: disttrain.allreduce_(x, name=n),
             lambda n: disttrain.allreduce_async(x, name=n),
             lambda n: disttrain.grouped_allreduce([x], name=n),
             lambda n: disttrain.broadcast_(x, 0, name=n),
             lambda n: disttrain.allgather(x, name=n),
             lambda n: disttrain.reduce_scatter(x, name=n),
             lambda n: disttrain.alltoall(x, name=n), lambda n: disttrain.barrier(name=n),
             lambda n: disttrain.allgather_object("o", name=n),
             lambda n: disttrain.broadcast_object("o", name=n)]
    for call in calls:
        with pytest.raises(disttrain.UsageError, match=NUL_NAME) as e:
            call("grad\x00weight")
        assert e.value.status_name == "DT_ERR_INVALID_ARGUMENT"
    with disttrain.Context() as c:  # a process set too
        group = c.group([0])
        with pytest.raises(disttrain.UsageError, match=NUL_NAME):
            group.allreduce(x, name="grad\x00weight")
        group.close()
    np.testing.assert_array_equal(disttrain.allreduce(x, name="grad.weight"), x)


@pytest.mark.parametrize("field", ["store_addr", "job_token", "transport", "memory"])
def test_a_context_setting_with_a_nul_is_refused_naming_it(field):
    with pytest.raises(disttrain.UsageError,
                       match=rf"{field}='tcp\\x00x' holds a NUL character at position 3"):
        disttrain.Context(rank=0, size=1, **{field: "tcp\x00x"})
    with pytest.raises(disttrain.UsageError,
                       match=rf"{field}=b'tcp\\x00x' holds a NUL character at position 3"):
        disttrain.Context(rank=0, size=1, **{field: b"tcp\x00x"})


@pytest.mark.parametrize("value", [0.0, 1.0, True, "0", np.float32(0), np.bool_(False)])
def test_integer_arguments_of_another_type_are_told_to_be_ints(ctx, value):
    # Told the type, not that the value is out of range: 0.0 even is in range.
    kind = type(value).__name__
    for call in (lambda: disttrain.broadcast(np.zeros(2), root_rank=value),
                 lambda: disttrain.broadcast_(np.zeros(2), value),
                 lambda: disttrain.broadcast_async(np.zeros(2), root_rank=value),
                 lambda: disttrain.broadcast_object("x", root_rank=value)):
        with pytest.raises(disttrain.UsageError,
                           match=rf"root_rank={value!r} must be an int \(a rank of this "
                                 rf"context, 0 <= root_rank < 1\), not {kind}$"):
            call()
    with pytest.raises(disttrain.UsageError, match=rf"splits\[0\]={value!r} must be an "
                                                   rf"int, not {kind}$"):
        disttrain.alltoall(np.ones((1, 2)), splits=[value])
    for what in ("rank", "size"):
        with pytest.raises(disttrain.UsageError,
                           match=rf"{what}={value!r} must be an int, not {kind}$"):
            disttrain.Context(**dict({"rank": 0, "size": 1}, **{what: value}))
    with pytest.raises(disttrain.UsageError, match=r"splits must hold ints, not float64"):
        disttrain.alltoall(np.ones((1, 2)), splits=np.ones(1))
    # numpy's integers are ints.
    assert disttrain.broadcast(np.ones(2), root_rank=np.int64(0)).tolist() == [1, 1]
    with disttrain.Context(rank=np.int32(0), size=np.int64(1)) as c:
        assert (c.rank(), c.size()) == (0, 1)


def test_closed_context_refuses_work():
    c = disttrain.Context()
    c.shutdown()
    c.shutdown()  # twice is fine
    with pytest.raises(disttrain.UsageError, match="shut down"):
        c.allreduce(np.ones(2, np.float32))


def test_shutdown_frees_requests_in_flight():
    with disttrain.Context() as c:
        x = np.ones(1 << 16, np.float32)
        h = c.allreduce_async(x)
    assert c.closed and h.test()
    np.testing.assert_array_equal(h.wait(), x)


def _python(code, env):
    return dtpy.run([dtpy.PYTHON, "-c", code], env=dtpy.job_env(env), timeout=60)


def test_calling_before_init_says_call_init_first():
    r = _python("import numpy, disttrain\n"
                "try:\n    disttrain.allreduce(numpy.ones(2))\n"
                "except disttrain.NotInitializedError as e:\n    print('ERR', e)\n", {})
    assert "ERR" in r.stdout, r.stderr
    assert "call disttrain.init() first" in r.stdout


def test_missing_library_lists_where_it_looked(tmp_path):
    r = _python("import disttrain\ndisttrain.init()\n",
                {"DISTTRAIN_LIBRARY": str(tmp_path / "nope.so")})
    assert r.returncode != 0
    assert "LibraryNotFound" in r.stderr
    assert "nope.so (no such file)" in r.stderr
    assert "DISTTRAIN_LIBRARY" in r.stderr


def test_library_errors_carry_status_and_message():
    with pytest.raises(disttrain.UsageError) as e:
        disttrain.Context(transport="TCP!")
    assert e.value.status == -2 and e.value.status_name == "DT_ERR_INVALID_CONFIG"
    assert "'TCP!' is not a transport name" in e.value.message
    with pytest.raises(disttrain.PluginError) as e:
        disttrain.Context(transport="nosuch")
    assert "libdt-transport-nosuch.so" in str(e.value)
    assert isinstance(e.value, disttrain.DisttrainError)


def test_a_context_name_is_checked_and_unique_among_live_contexts():
    with disttrain.Context(name="py.named") as c:
        assert c.size() == 1
        with pytest.raises(disttrain.UsageError) as e:
            disttrain.Context(name="py.named")
        assert "a live context of this process already has this name" in e.value.message
    disttrain.Context(name="py.named").shutdown()  # free again once shut down
    with pytest.raises(disttrain.UsageError) as e:
        disttrain.Context(name="a/b")
    assert "dt_context_params_t.name='a/b' is not a context name" in e.value.message


def test_aborted_context_raises_peer_lost():
    c = disttrain.Context(rank=0, size=1, timeout=30)
    c.abort()
    with pytest.raises(disttrain.PeerLostError) as e:
        c.barrier()
    assert e.value.status_name == "DT_ERR_ABORTED"
    c.shutdown()
