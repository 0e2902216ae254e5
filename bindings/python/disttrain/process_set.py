# SPDX-License-Identifier: Apache-2.0
"""ProcessSet: collectives among some ranks of a job (dt_group_create), as horovod's
hvd.ProcessSet.

    ps = disttrain.add_process_set([0, 2])   # every rank calls it, members or not
    if ps.included():
        ps.allreduce(x)                       # among ranks 0 and 2 only
    disttrain.allreduce(x, process_set=ps)    # the same through the module functions
    ps.close()

Unnamed collectives on a set are named by their position among the set's unnamed calls
("allreduce.set[0,2].3"): the library numbers unnamed calls per job, which would put the
job's later unnamed calls out of step when sets run different numbers of them.

A ProcessSet is first a list of ranks of its parent context; adding it (add_process_set,
or ctx.group(ranks)) creates the C group, which is collective over the parent: every rank
of the parent adds it, with the same list, in the same order relative to its other
process sets, and the call blocks until they all have. On a member the set is a context
of its own (rank() is the position in the list, size() its length) sharing the parent's
connections; on other ranks included() is False and every collective raises UsageError.
The parent must outlive the set: shutting the parent down closes its sets first. Closing
a set is not collective.
"""
import ctypes
import os

import numpy as np

from . import _lib
from .context import _Owner
from .errors import UsageError, usage
from .status import check


def _ranks(ranks):
    """The list of ranks as a tuple of ints; UsageError for an empty list, a non-integer,
    a negative or a repeated rank (the same checks as dt_group_create, made before any
    rank waits for the others; ranks past the parent's size are refused when adding)."""
    try:
        listed = list(ranks)
    except TypeError:
        raise usage(f"a process set takes a list of ranks, got {ranks!r}") from None
    if not listed:
        raise usage("a process set needs at least one rank; got an empty list")
    out = []
    for i, r in enumerate(listed):
        if isinstance(r, bool) or not isinstance(r, (int, np.integer)):
            raise usage(f"ranks[{i}] of a process set is {r!r}, not an integer rank")
        r = int(r)
        if r < 0:
            raise usage(f"ranks[{i}] of a process set is {r}; ranks are >= 0")
        if r in out:
            raise usage(f"rank {r} is listed twice in process set {listed}; list each "
                        f"rank once")
        out.append(r)
    return tuple(out)


class ProcessSet(_Owner):
    """A set of ranks of a context that run collectives among themselves.

    ProcessSet(ranks) only checks and keeps the list (UsageError for an empty list,
    a repeated or negative rank); disttrain.add_process_set(ps) or ctx.group(ranks)
    creates it on every rank (collective over the parent). Then, on every rank:
    ranks (the tuple of parent ranks), size(), included(); on members, rank() (the
    position in ranks) and every collective of a Context (allreduce, broadcast, ...,
    barrier). Ranks given to collectives (broadcast's root) are ranks of the set.
    close() frees it (also `with ps:`); it is not collective. Sets are made from the
    whole job's context only (group() on a set is refused: the library numbers groups
    per job)."""

    def __init__(self, ranks):
        self.ranks = _ranks(ranks)
        self._init_owner(None)
        self._parent = None
        self._added = False
        self._closed = False
        self._rank = None
        self._unnamed = 0

    def _create(self, parent):
        if self._added:
            raise usage(f"{self!r} was already added; a ProcessSet is added once (make "
                        f"a new ProcessSet for another group)")
        handle = parent._live_handle()
        n = len(self.ranks)
        listed = (ctypes.c_int * n)(*self.ranks)
        out = ctypes.c_void_p()
        check(_lib.lib().dt_group_create(handle, listed, n, ctypes.byref(out)),
              "dt_group_create")
        self._parent = parent
        self._added = True
        if out.value:
            self._handle = out
            self._pid = os.getpid()
            value = ctypes.c_int()
            check(_lib.lib().dt_context_rank(out, ctypes.byref(value)), "dt_context_rank")
            self._rank = value.value
        parent._adopt(self)
        return self

    # -- identity ---------------------------------------------------------------------
    def included(self):
        """True on the ranks listed in the set (once added)."""
        return self._added and self._rank is not None

    def size(self):
        """Number of ranks in the set."""
        return len(self.ranks)

    def rank(self):
        """This process's rank in the set: its position in `ranks`. UsageError on a rank
        that is not a member (check included())."""
        if not self.included():
            self._live_handle()  # raises the reason
        return self._rank

    def transport(self):
        """The parent's transport plugin (a set shares its parent's connections)."""
        if self._parent is None:
            self._live_handle()
        return self._parent.transport()

    @property
    def closed(self):
        return self._closed

    def _live_handle(self):
        if self._closed:
            raise UsageError(-5, "DT_ERR_INVALID_STATE",
                             f"{self!r} was closed; add a new process set to use these "
                             f"ranks again")
        if not self._added:
            raise UsageError(-5, "DT_ERR_INVALID_STATE",
                             f"process set {list(self.ranks)} was not added: every rank "
                             f"calls disttrain.add_process_set(ps) (or ctx.group(ranks)) "
                             f"before using it")
        if self._handle is None:
            raise UsageError(-1, "DT_ERR_INVALID_ARGUMENT",
                             f"this process (rank {self._parent.rank()} of the parent) is "
                             f"not a member of process set {list(self.ranks)}; only its "
                             f"members call its collectives: check ps.included() first")
        return self._handle

    def group(self, ranks):
        """Refused: the library numbers groups per job, so a set made inside a set (which
        the parent set's non-members do not create) would leave the job's ranks numbering
        later sets differently, and two sets' subsets would share a number."""
        raise usage(f"a process set cannot be made inside {self!r}: the library numbers "
                    f"process sets per job, so every rank of the job must create each "
                    f"one; add a set of job ranks with disttrain.add_process_set(ranks) "
                    f"or ctx.group(ranks) on every rank instead")

    # -- requests ---------------------------------------------------------------------
    def _named(self, function, name):
        """Names an unnamed call by its position among this set's unnamed calls. The
        library numbers unnamed calls per job, so sets that ran different numbers of
        them would leave the job's later unnamed calls out of step between ranks."""
        if name is not None:
            return name
        kind = function[3:].replace("_async", "").replace("_ex", "")
        with self._lock:
            n, self._unnamed = self._unnamed, self._unnamed + 1
        ranks = ",".join(map(str, self.ranks))
        return f"{kind}.set[{ranks}].{n}".encode("utf-8")

    def _submit(self, function, name, *args):
        self._live_handle()
        return super()._submit(function, self._named(function, name), *args)

    def _call(self, function, name, *args):
        self._live_handle()
        super()._call(function, self._named(function, name), *args)

    # -- teardown ---------------------------------------------------------------------
    def close(self):
        """Waits for the set's requests in flight, closes the sets made from it, and
        frees it (dt_context_destroy on the group). Not collective; safe to call twice."""
        if self._closed:
            return
        self._closed = True
        self._close_handle()

    def shutdown(self):
        """Alias of close()."""
        self.close()

    def __repr__(self):
        if self._closed:
            state = "closed"
        elif not self._added:
            state = "not added"
        elif self._handle is None:
            state = "not a member"
        else:
            state = f"rank {self._rank}/{self.size()}"
        return f"<disttrain.ProcessSet {list(self.ranks)} {state}>"


def resolve(context, process_set):
    """The context a call with context= and process_set= keywords runs on."""
    if process_set is None:
        return context
    if not isinstance(process_set, ProcessSet):
        raise usage(f"process_set must be a disttrain.ProcessSet, got "
                    f"{type(process_set).__name__}")
    if context is not None and context is not process_set._parent:
        raise usage("pass either context= or process_set= (a process set already knows "
                    "its parent context)")
    return process_set
