# SPDX-License-Identifier: Apache-2.0
"""The memory= and device= keywords (dt_op_params_t) on numpy arrays in one process:
host runs, auto is host while the library has no memory provider, device is refused at
once with the library's DT_ERR_UNSUPPORTED, and bad values are named."""
import ctypes

import numpy as np
import pytest

import dtpy

dtpy.use_build_tree()
import disttrain  # noqa: E402
from disttrain import _lib  # noqa: E402
from disttrain.memory import op_params  # noqa: E402


@pytest.fixture(scope="module")
def ctx():
    c = disttrain.init()
    yield c
    disttrain.shutdown()


def test_no_keywords_pass_null_params():
    assert op_params() is None


def test_params_set_only_the_fields_given():
    p = op_params("device", 2, 0x1234)
    assert p.field_mask == 0b111
    assert (p.memory_type, p.device, p.stream) == (1, 2, 0x1234)
    p = op_params(disttrain.MemoryType.AUTO)
    assert p.field_mask == _lib.OP_PARAM_BITS["memory_type"] and p.memory_type == 2
    assert ctypes.sizeof(_lib.OpParams) == 24  # uint64, int, int, pointer


def test_host_and_auto_run_on_numpy_arrays(ctx):
    x = np.arange(6, dtype=np.float32)
    for memory in ("host", "auto", disttrain.MemoryType.HOST, 0):
        np.testing.assert_array_equal(disttrain.allreduce(x, memory=memory), x)
    np.testing.assert_array_equal(disttrain.allgather(x, memory="auto"), x)
    np.testing.assert_array_equal(disttrain.broadcast(x, 0, memory="host", device=0), x)
    np.testing.assert_array_equal(disttrain.reduce_scatter(x, memory="host"), x)
    np.testing.assert_array_equal(disttrain.alltoall(x, memory="host"), x)


@pytest.mark.parametrize("call", [
    lambda x: disttrain.allreduce(x, name="grad.w", memory="device", device=0),
    lambda x: disttrain.allreduce_(x, name="grad.w", memory="device"),
    lambda x: disttrain.broadcast_(x, 0, name="grad.w", memory="device"),
    lambda x: disttrain.allgather(x, name="grad.w", memory="device"),
    lambda x: disttrain.reduce_scatter(x, name="grad.w", memory="device"),
    lambda x: disttrain.alltoall(x, name="grad.w", memory="device"),
])
def test_device_memory_is_unsupported_without_a_memory_provider(ctx, call):
    with pytest.raises(disttrain.UsageError) as e:
        call(np.zeros(4, np.float32))
    assert e.value.status_name == "DT_ERR_UNSUPPORTED"
    assert "'grad.w'" in e.value.message
    assert "no memory provider is loaded" in e.value.message
    assert "DISTTRAIN_MEMORY" in e.value.message


def test_the_memory_provider_is_a_context_parameter():
    # A name no plugin has: create fails naming the parameter and the file looked for.
    with pytest.raises(disttrain.DisttrainError) as e:
        disttrain.Context(memory="nosuchprovider")
    assert "dt_context_params_t.memory='nosuchprovider'" in e.value.message
    assert "libdt-memory-nosuchprovider.so" in e.value.message
    with pytest.raises(disttrain.DisttrainError) as e:
        disttrain.Context(memory="Not A Name")
    assert e.value.status_name == "DT_ERR_INVALID_CONFIG"
    assert "dt_context_params_t.memory='Not A Name'" in e.value.message


def test_bad_values_are_named(ctx):
    x = np.zeros(2, np.float32)
    with pytest.raises(disttrain.UsageError, match="memory='gpu' is not a memory type"):
        disttrain.allreduce(x, memory="gpu")
    with pytest.raises(disttrain.UsageError, match="memory=7"):
        disttrain.allreduce(x, memory=7)
    with pytest.raises(disttrain.UsageError, match=r"params->device -1 is negative") as e:
        disttrain.allreduce(x, device=-1)
    assert e.value.status_name == "DT_ERR_INVALID_ARGUMENT"
    with pytest.raises(disttrain.UsageError, match="not a device ordinal"):
        disttrain.allreduce(x, device="cuda:0")
