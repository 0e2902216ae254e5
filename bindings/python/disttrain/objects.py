# SPDX-License-Identifier: Apache-2.0
"""Python objects through collectives: pickled into uint8 arrays.

allgather_object exchanges every rank's byte count with the same size exchange that an
uneven allgather makes, then gathers the bytes in one allgatherv; broadcast_object sends
the root's byte count, then the bytes. Every rank of the context must call them, in the
same order as its other collectives. Unpickling runs code chosen by the sender: use them
among the ranks of one job only, as with any pickle.
"""
import pickle

import numpy as np


def _pickled(obj):
    return np.frombuffer(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL), np.uint8)


def _part(name, part):
    """The name of one step; unnamed calls stay unnamed (named by position)."""
    return None if name is None else f"{name}.{part}"


def allgather_object(collectives, obj, name=None):
    """[rank 0's obj, rank 1's obj, ...] on every rank."""
    data = _pickled(obj)
    gathered, rows = collectives._allgather_rows_async(data, name, None, None,
                                                       with_rows=True).wait()
    out, offset = [], 0
    for n in rows.tolist():
        out.append(pickle.loads(gathered[offset:offset + n].tobytes()))
        offset += n
    return out


def broadcast_object(collectives, obj, root_rank=0, name=None):
    """root_rank's obj on every rank; root_rank gets its own object back, not a copy."""
    collectives._check_root(root_rank)
    is_root = collectives.rank() == root_rank
    data = _pickled(obj) if is_root else None
    length = np.array([0 if data is None else data.size], np.int64)
    collectives.broadcast_(length, root_rank, _part(name, "length"))
    if data is None:
        data = np.empty(int(length[0]), np.uint8)
    else:
        data = data.copy()  # broadcast_ writes in place: needs a writeable array
    collectives.broadcast_(data, root_rank, _part(name, "data"))
    return obj if is_root else pickle.loads(data.tobytes())
