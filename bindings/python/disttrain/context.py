"""Context: one member of a job (dt_context_h), with its collectives.

A Context owns its C handle: shutdown() (or leaving a `with` block, or garbage collection)
frees every request still in flight and then destroys the context, in the order the C API
requires. Collectives on numpy arrays come from NumpyCollectives, which only needs
`_submit`; a process group added later implements `_submit` for its own C functions and
inherits the same methods.
"""
import ctypes
import threading
import weakref

from . import _lib
from .collectives import NumpyCollectives
from .errors import UsageError
from .status import check


def _params(rank, size, local_rank, local_size, store_addr, job_token, transport,
            timeout, ordered, memory):
    """dt_context_params_t with a field_mask bit for every argument that is not None."""
    p = _lib.ContextParams()
    given = {"rank": rank, "size": size, "local_rank": local_rank,
             "local_size": local_size, "store_addr": store_addr, "job_token": job_token,
             "transport": transport,
             "timeout_ms": None if timeout is None else int(round(timeout * 1000)),
             "ordered": None if ordered is None else int(bool(ordered)),
             "memory": memory}
    keep = []
    for field, value in given.items():
        if value is None:
            continue
        if isinstance(value, str):
            value = value.encode("utf-8")
            keep.append(value)
        elif not isinstance(value, bytes):
            value = int(value)
        setattr(p, field, value)
        p.field_mask |= _lib.PARAM_BITS[field]
    return p, keep


class Context(NumpyCollectives):
    """A member of a job. Every argument left None comes from the environment
    (DISTTRAIN_RANK, DISTTRAIN_SIZE, ... as set by disttrainrun, then Open MPI or Slurm)
    or its default; with no variable at all the context is a single process of rank 0.
    timeout is in seconds (the deadline of every blocking step; <= 0 means no limit).
    ordered=True (DISTTRAIN_ORDERED=1) promises that every rank calls the same collectives
    in the same order, as MPI requires: the engine then skips negotiation (no idle
    cycles, lowest latency) but can no longer report mismatched calls by name.
    memory="cuda" (DISTTRAIN_MEMORY) loads the memory provider that collectives on CUDA
    tensors need.

    Creating a context is collective: every rank of the job must create one."""

    def __init__(self, rank=None, size=None, local_rank=None, local_size=None,
                 store_addr=None, job_token=None, transport=None, timeout=None,
                 ordered=None, memory=None):
        lib = _lib.lib()
        params, keep = _params(rank, size, local_rank, local_size, store_addr, job_token,
                               transport, timeout, ordered, memory)
        handle = ctypes.c_void_p()
        check(lib.dt_context_create_versioned(_lib.API_MAJOR, _lib.API_MINOR,
                                              ctypes.byref(params), ctypes.byref(handle)),
              "dt_context_create")
        del keep  # the library has copied the strings
        self._handle = handle
        self._lock = threading.Lock()
        self._inflight = weakref.WeakSet()
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

    # -- teardown ---------------------------------------------------------------------
    def abort(self):
        """Fails every pending and later operation with PeerLostError (DT_ERR_ABORTED);
        peers see this rank leave. shutdown() is still needed."""
        if self._handle is not None:
            check(_lib.lib().dt_context_abort(self._handle), "dt_context_abort")

    def shutdown(self):
        """Waits for the requests still in flight, frees them, and destroys the context.
        Safe to call twice."""
        if self._handle is None:
            return
        with self._lock:
            pending = list(self._inflight)
        for h in pending:
            h._release()
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

    def __repr__(self):
        if self._handle is None:
            return "<disttrain.Context shut down>"
        return (f"<disttrain.Context rank {self.rank()}/{self.size()} "
                f"transport {self.transport()}>")
