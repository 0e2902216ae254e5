# SPDX-License-Identifier: Apache-2.0
"""Context: one member of a job (dt_context_h), with its collectives.

A Context owns its C handle: shutdown() (or leaving a `with` block, or garbage collection)
frees every request still in flight and then destroys the context, in the order the C API
requires. Collectives on numpy arrays come from NumpyCollectives, which only needs
`_submit`; a ProcessSet (process_set.py) is a context of its own over some ranks and
shares the same methods.
"""
import ctypes
import os
import threading
import weakref

from . import _lib
from .arguments import c_string, integer
from .collectives import NumpyCollectives
from .errors import UsageError
from .status import check


def _params(rank, size, local_rank, local_size, store_addr, job_token, transport,
            timeout, ordered, memory, name):
    """dt_context_params_t with a field_mask bit for every argument that is not None."""
    p = _lib.ContextParams()
    given = {"rank": rank, "size": size, "local_rank": local_rank,
             "local_size": local_size, "store_addr": store_addr, "job_token": job_token,
             "transport": transport,
             "timeout_ms": None if timeout is None else int(round(timeout * 1000)),
             "ordered": None if ordered is None else int(bool(ordered)),
             "memory": memory, "name": name}
    for what in ("rank", "size", "local_rank", "local_size"):
        if given[what] is not None:  # int() below would take rank=1.5 as rank 1
            given[what] = integer(given[what], what)
    keep = []
    for field, value in given.items():
        if value is None:
            continue
        if isinstance(value, (str, bytes)):
            value = c_string(value, field)
            keep.append(value)
        else:
            value = int(value)
        setattr(p, field, value)
        p.field_mask |= _lib.PARAM_BITS[field]
    return p, keep


class _Owner(NumpyCollectives):
    """What a whole-job Context and a ProcessSet share: a C context handle (None once
    closed), the requests in flight on it, the process sets made from it, and join()."""

    def _init_owner(self, handle):
        self._handle = handle
        self._pid = os.getpid()  # the process whose handle it is (see _close_handle)
        self._lock = threading.Lock()
        self._inflight = weakref.WeakSet()
        self._children = weakref.WeakSet()

    @property
    def closed(self):
        return self._handle is None

    # -- requests ---------------------------------------------------------------------
    def _live_handle(self):
        if self._handle is None:
            raise UsageError(-5, "DT_ERR_INVALID_STATE",
                             "this disttrain context was shut down; create a new one "
                             "(disttrain.init()) before calling collectives")
        return self._handle

    def _submit(self, function, *args):
        """Calls the C function `function` (an *_async collective) with the context
        handle first and a request pointer last; returns the request."""
        req = ctypes.c_void_p()
        fn = getattr(_lib.lib(), function)
        check(fn(self._live_handle(), *args, ctypes.byref(req)),
              function.replace("_async", "").replace("_ex", ""))
        return req

    def _call(self, function, *args):
        """Calls the blocking C function `function` with the context handle first."""
        fn = getattr(_lib.lib(), function)
        check(fn(self._live_handle(), *args), function.replace("_ex", ""))

    def _track(self, handle):
        with self._lock:
            self._inflight.add(handle)

    def _untrack(self, handle):
        with self._lock:
            self._inflight.discard(handle)

    # -- process sets and join --------------------------------------------------------
    def group(self, ranks):
        """Creates a process set of the given ranks of this context (see ProcessSet) and
        returns it. Collective over this context: every rank calls it, members or not,
        with the same list, in the same order relative to its other group() calls; it
        blocks until they all have. On ranks outside the list the set is returned too,
        with included() False, and its collectives raise UsageError."""
        from .process_set import ProcessSet
        return ProcessSet(ranks)._create(self)

    def _adopt(self, child):
        with self._lock:
            self._children.add(child)

    def join(self):
        """For uneven inputs: this rank has no more data (dt_join). Blocks until every
        rank has joined; meanwhile the other ranks' allreduces go on, this rank
        contributing the operator's identity (0 for sum; average divides by the ranks
        that have not joined), and other collectives fail while a rank is joined.
        Returns the rank that joined last. Needs the engine's negotiation: a context
        created with ordered=True (DISTTRAIN_ORDERED=1) refuses it with UsageError
        (DT_ERR_UNSUPPORTED), as does a process set (join is for the whole job)."""
        last = ctypes.c_int(-1)
        check(_lib.lib().dt_join(self._live_handle(), ctypes.byref(last)), "dt_join")
        return last.value

    # -- teardown ---------------------------------------------------------------------
    def _release_dependents(self):
        """Frees the requests in flight and closes the process sets made from this one
        (the C API needs a parent to outlive its groups)."""
        with self._lock:
            pending = list(self._inflight)
            children = list(self._children)
        for h in pending:
            h._release()
        for c in children:
            c.close()

    def _close_handle(self):
        """Releases what depends on the handle, then destroys it. In a child of
        os.fork(), whose atexit handlers and garbage collector close the copies of its
        parent's objects, only forgets it: the context (and its requests) are the
        parent's, and the library leaves copies alone anyway."""
        if self._handle is None:
            return
        if self._pid != os.getpid():
            self._handle = None
            return
        self._release_dependents()
        handle, self._handle = self._handle, None
        check(_lib.lib().dt_context_destroy(handle), "dt_context_destroy")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.shutdown()

    def __del__(self):
        try:
            self.shutdown()
        except Exception:
            pass


class Context(_Owner):
    """A member of a job. Every argument left None comes from the environment
    (DISTTRAIN_RANK, DISTTRAIN_SIZE, ... as set by disttrainrun, then Open MPI or Slurm)
    or its default; with no variable at all the context is a single process of rank 0.
    timeout is in seconds (the deadline of every blocking step; <= 0 means no limit).
    ordered=True (DISTTRAIN_ORDERED=1) promises that every rank calls the same collectives
    in the same order, as MPI requires: the engine then skips negotiation (no idle
    cycles, lowest latency) but can no longer report mismatched calls by name.
    memory="cuda" (DISTTRAIN_MEMORY) loads the memory provider that collectives on CUDA
    tensors need.

    Creating a context is collective: every rank of the job must create one. Unnamed
    contexts pair up across ranks in the order each rank creates them, so every rank
    creates them in the same order, one thread at a time (an unnamed context created while
    another thread creates one raises UsageError). name="..." pairs the context with the
    one of that name on every rank instead, in any order and from any thread: the same on
    every rank, another for each live context, 1 to 128 letters, digits, '.', '_' or '-'."""

    def __init__(self, rank=None, size=None, local_rank=None, local_size=None,
                 store_addr=None, job_token=None, transport=None, timeout=None,
                 ordered=None, memory=None, name=None):
        lib = _lib.lib()
        params, keep = _params(rank, size, local_rank, local_size, store_addr, job_token,
                               transport, timeout, ordered, memory, name)
        handle = ctypes.c_void_p()
        check(lib.dt_context_create_versioned(_lib.API_MAJOR, _lib.API_MINOR,
                                              ctypes.byref(params), ctypes.byref(handle)),
              "dt_context_create")
        del keep  # the library has copied the strings
        self._init_owner(handle)
        self._info = {}
        for what in ("rank", "size", "local_rank", "local_size"):
            value = ctypes.c_int()
            check(getattr(lib, f"dt_context_{what}")(handle, ctypes.byref(value)),
                  f"dt_context_{what}")
            self._info[what] = value.value
        name = ctypes.c_char_p()
        check(lib.dt_context_transport(handle, ctypes.byref(name)), "dt_context_transport")
        self._info["transport"] = name.value.decode("utf-8", "replace")

    # -- identity ---------------------------------------------------------------------
    def rank(self):
        """This process's rank, 0 <= rank < size()."""
        return self._info["rank"]

    def size(self):
        """Number of ranks in the job."""
        return self._info["size"]

    def local_rank(self):
        """Rank among the processes on this host."""
        return self._info["local_rank"]

    def local_size(self):
        """Number of ranks on this host."""
        return self._info["local_size"]

    def transport(self):
        """Name of the transport plugin in use, e.g. "tcp"."""
        return self._info["transport"]

    def reform(self):
        """Elastic jobs (disttrainrun --elastic): after a collective raised PeerLostError,
        re-forms the job among the ranks still alive (dt_context_reform). Every surviving
        rank calls it. The requests in flight are freed (they failed), the process sets
        made from this context are closed (create them again), and rank(), size(),
        local_rank() and local_size() give the new values. disttrain.elastic.run does
        this, with the state to restore, for a training function."""
        self._release_dependents()
        lib = _lib.lib()
        handle = self._live_handle()
        check(lib.dt_context_reform(handle), "dt_context_reform")
        for what in ("rank", "size", "local_rank", "local_size"):
            value = ctypes.c_int()
            check(getattr(lib, f"dt_context_{what}")(handle, ctypes.byref(value)),
                  f"dt_context_{what}")
            self._info[what] = value.value

    def poll_joiners(self):
        """Elastic jobs: how many replacements (disttrainrun --max-restarts) wait to join;
        rank 0's count, the same on every rank. Collective: call it at the same step on
        every rank; when it is above 0, every rank calls reform() to let them in."""
        waiting = ctypes.c_int(0)
        check(_lib.lib().dt_context_poll_joiners(self._live_handle(), ctypes.byref(waiting)),
              "dt_context_poll_joiners")
        return waiting.value

    # -- teardown ---------------------------------------------------------------------
    def abort(self):
        """Fails every pending and later operation with PeerLostError (DT_ERR_ABORTED);
        peers see this rank leave. shutdown() is still needed."""
        if self._handle is not None:
            check(_lib.lib().dt_context_abort(self._handle), "dt_context_abort")

    def shutdown(self):
        """Waits for the requests still in flight, frees them, closes the process sets
        made from this context, and destroys it. Safe to call twice."""
        self._close_handle()

    def __repr__(self):
        if self._handle is None:
            return "<disttrain.Context shut down>"
        return (f"<disttrain.Context rank {self.rank()}/{self.size()} "
                f"transport {self.transport()}>")
