# SPDX-License-Identifier: Apache-2.0
"""Python objects through collectives: pickled into uint8 arrays.

allgather_object exchanges every rank's byte count with the same size exchange that an
uneven allgather makes, then gathers the bytes in one allgatherv; broadcast_object sends
the root's byte count, then the bytes. Every rank of the context must call them, in the
same order as its other collectives. Unpickling runs code chosen by the sender: use them
among the ranks of one job only, as with any pickle.

Each rank's bytes start with a flag byte: _PICKLED and the pickle, or _FAILED and the
text of the exception that stopped the pickling. A rank that cannot pickle its object
still takes part in every step, sending that text in place of the pickle, so every rank
raises at once a UsageError naming that rank and its exception (instead of the others
waiting out DISTTRAIN_TIMEOUT for a rank that gave up), and the ranks stay in step for
the calls that follow.
"""
import io
import pickle

import numpy as np

from .arguments import derived_name
from .errors import usage

_PICKLED, _FAILED = 0, 1
_MAX_ERROR_CHARS = 2000  # of an exception's text sent to the other ranks


def _pickle_dump(obj, file):
    pickle.dump(obj, file, protocol=pickle.HIGHEST_PROTOCOL)


def _pickle_load(data):
    return pickle.loads(data)


def serialised(obj, dump=_pickle_dump):
    """(writeable uint8 array of the flag and the bytes, the exception or None)."""
    buf = io.BytesIO()
    buf.write(bytes([_PICKLED]))
    try:
        dump(obj, buf)
    except Exception as e:  # any __reduce__ may raise anything; the others must hear
        text = f"{type(e).__name__}: {e}"[:_MAX_ERROR_CHARS]
        failed = bytearray([_FAILED]) + text.encode("utf-8", "replace")
        return np.frombuffer(failed, np.uint8), e
    return np.frombuffer(buf.getbuffer(), np.uint8), None


def _failure(data):
    """The exception text a rank sent in place of its object, or None."""
    if data.size and data[0] == _FAILED:
        return data[1:].tobytes().decode("utf-8", "replace")
    return None


def _raise_failures(call, failures, own_error):
    """Raises the error every rank raises when ranks could not serialise their objects:
    failures is [(rank, exception text)], own_error this rank's exception or None."""
    listed = "; ".join(f"rank {rank} could not serialise its object ({text})"
                       for rank, text in failures)
    raise usage(f"{call}: {listed}. Pass objects that pickle can serialise (not a lambda, "
                f"a lock, an open file or a socket); every rank of the call raises this "
                f"error and later calls go on") from own_error


def _call(what, name):
    return what if name is None else f"{what} '{name}'"


def _part(name, part):
    """The name of one step; unnamed calls stay unnamed (named by position)."""
    return None if name is None else derived_name(name, f".{part}")


def allgather_object(collectives, obj, name=None):
    """[rank 0's obj, rank 1's obj, ...] on every rank."""
    data, error = serialised(obj)
    gathered, rows = collectives._allgather_rows_async(data, name, None, None,
                                                       with_rows=True).wait()
    parts, offset = [], 0
    for n in rows.tolist():
        parts.append(gathered[offset:offset + n])
        offset += n
    failures = [(rank, text) for rank, text in enumerate(map(_failure, parts))
                if text is not None]
    if failures:
        _raise_failures(_call("allgather_object", name), failures, error)
    return [_pickle_load(memoryview(p[1:])) for p in parts]


def broadcast_object(collectives, obj, root_rank=0, name=None, dump=_pickle_dump,
                     load=_pickle_load):
    """root_rank's obj on every rank; root_rank gets its own object back, not a copy.
    dump(obj, file) and load(bytes-like) serialise it (pickle unless given)."""
    collectives._check_root(root_rank)
    is_root = collectives.rank() == root_rank
    data, error = serialised(obj, dump) if is_root else (None, None)
    length = np.array([0 if data is None else data.size], np.int64)
    collectives.broadcast_(length, root_rank, _part(name, "length"))
    if data is None:
        data = np.empty(int(length[0]), np.uint8)
    collectives.broadcast_(data, root_rank, _part(name, "data"))
    failed = _failure(data)
    if failed is not None:
        _raise_failures(_call("broadcast_object", name), [(root_rank, failed)], error)
    return obj if is_root else load(memoryview(data[1:]))
