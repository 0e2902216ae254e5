# SPDX-License-Identifier: Apache-2.0
"""What the ranks of an uneven allgather or alltoall exchange before its data: one
fixed-size int64 record per rank holding its row count (the first dimension) and its row
shape (every other dimension).

The row shape travels with the row count, in the same exchange, because the data step
(dt_allgatherv, dt_alltoallv, dt_alltoall) sees only element counts: rows of shape (2, 3)
on one rank and (3, 2) on another have the same count, and each rank would read the
other's rows in its own shape. Every rank gets every rank's record, so every rank finds a
disagreement alike and raises DT_ERR_MISMATCH before the data step, and the ranks stay in
step.

A record is [rows, digest, ndim, d1 .. d6]: the digest covers the whole row shape; the
first NAMED_DIMS dimensions are there so the error can name each rank's shape. An
alltoall with splits sends each peer [split, record]: the split sent to that peer, then
the sender's record, so the receivers learn their splits and every sender's shape in the
one exchange that the splits need anyway.
"""
import hashlib

import numpy as np

from .errors import mismatch

NAMED_DIMS = 6
WORDS = 3 + NAMED_DIMS  # int64 words of a record
SPLIT_WORDS = 1 + WORDS  # int64 words an alltoall with splits sends each peer
_SHOWN_GROUPS = 4
_SHOWN_RANKS = 8


def record(shape):
    """The record of an input of `shape` (at least one dimension)."""
    row_shape = [int(d) for d in shape[1:]]
    digest = hashlib.blake2b(np.asarray(row_shape, np.int64).tobytes(), digest_size=8)
    named = (row_shape + [0] * NAMED_DIMS)[:NAMED_DIMS]
    return np.array([int(shape[0]), int.from_bytes(digest.digest(), "little", signed=True),
                     len(row_shape)] + named, np.int64)


def records_of(size):
    """An array to receive every rank's record, rank r's at row r."""
    return np.empty((size, WORDS), np.int64)


def rows(records):
    """Every rank's row count."""
    return records[:, 0]


def split_records(shape, splits):
    """What an alltoall with splits of an input of `shape` sends, row j going to rank j:
    splits[j], then this rank's record."""
    mine = record(shape)
    return np.ascontiguousarray(np.column_stack(
        [np.asarray(splits, np.int64), np.broadcast_to(mine, (len(splits), WORDS))]))


def split_records_of(size):
    """An array to receive every rank's split record, rank r's at row r."""
    return np.empty((size, SPLIT_WORDS), np.int64)


def received_splits(received):
    """The rows each rank sends this one, as a new int64 array."""
    return np.ascontiguousarray(received[:, 0])


def check_split_shapes(received, what):
    """check_row_shapes on the records of an alltoall with splits."""
    check_row_shapes(received[:, 1:], what)


def _shape_text(records, ranks):
    """The ranks' common shape, '*' for a first dimension that differs among them."""
    rec = records[ranks[0]]
    first = {int(records[r][0]) for r in ranks}
    ndim = int(rec[2])
    dims = [str(first.pop()) if len(first) == 1 else "*"]
    dims += [str(int(d)) for d in rec[3:3 + min(ndim, NAMED_DIMS)]]
    if ndim > NAMED_DIMS:
        dims.append("...")
    return "(" + ", ".join(dims) + (",)" if len(dims) == 1 else ")")


def _ranks_text(ranks):
    shown = ", ".join(str(r) for r in ranks[:_SHOWN_RANKS])
    more = f" and {len(ranks) - _SHOWN_RANKS} more" if len(ranks) > _SHOWN_RANKS else ""
    return f"rank{'s' if len(ranks) > 1 else ''} {shown}{more}"


def call_label(call, name):
    """"allgather 'grad'" for a named call, "allgather" for an unnamed one."""
    return call if name is None else f"{call} '{name}'"


def check_row_shapes(records, what):
    """Raises DT_ERR_MISMATCH naming the shapes unless every rank has the same row
    shape; `what` names the call ("allgather 'grad'")."""
    groups = {}
    for rank, rec in enumerate(records):
        groups.setdefault((int(rec[1]), int(rec[2])), []).append(rank)
    if len(groups) <= 1:
        return
    parts = [f"{_ranks_text(ranks)} {'pass' if len(ranks) > 1 else 'passes'} shape "
             f"{_shape_text(records, ranks)}"
             for ranks in list(groups.values())[:_SHOWN_GROUPS]]
    if len(groups) > _SHOWN_GROUPS:
        parts.append(f"{len(groups) - _SHOWN_GROUPS} more shapes")
    raise mismatch(f"{what}: the ranks disagree on the dimensions after the first: "
                   f"{'; '.join(parts)}. Only the first dimension may differ per rank; "
                   f"reshape the inputs so the others agree")
