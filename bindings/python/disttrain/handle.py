# SPDX-License-Identifier: Apache-2.0
"""Handle: an asynchronous collective in flight.

The C request's buffers must stay valid until it completes, so a Handle holds a reference
to every array or tensor the operation reads or writes (and to its context) until the
request is done and freed. Dropping an unfinished Handle frees the request, which in the
library waits for it first: memory is never written after the Handle is gone.

Signals: Python runs a signal handler (Ctrl-C's KeyboardInterrupt, a SIGTERM handler)
only in the main thread and between bytecodes, never during a foreign call, so wait() on
the main thread blocks in slices of _SLICE_MS, between which a pending handler runs. A
handler that raises while the operation is in flight (KeyboardInterrupt) aborts the
context (dt_context_abort) before the exception goes on: the operation cannot complete
without this rank, so the other ranks' calls fail at once with PeerLostError instead of
waiting out DISTTRAIN_TIMEOUT, and the handle, shutdown() and the exit do not wait either.
"""
import ctypes
import math
import numbers
import os
import threading
import time

from . import _lib
from .arguments import derived_name
from .errors import TimeoutError as DtTimeoutError
from .errors import usage
from .status import check, last_error, raise_status

_DONE = object()
_INT_MAX = 2**31 - 1  # dt_request_wait's timeout is a C int of milliseconds
_TIMEOUT = -400       # DT_ERR_TIMEOUT
_SLICE_MS = 100       # the longest the main thread blocks in one dt_request_wait


def _timeout_ms(timeout):
    """wait()'s timeout in seconds as dt_request_wait's milliseconds: -1 (no limit but
    DISTTRAIN_TIMEOUT) for None, inf and anything beyond a C int; 0 (poll) for a negative
    one. A timeout that is not a number, or NaN, is a UsageError."""
    if timeout is None:
        return -1
    if isinstance(timeout, bool) or not isinstance(timeout, numbers.Real) or \
            math.isnan(timeout):
        raise usage(f"timeout={timeout!r} must be a number of seconds (or None or "
                    f"float('inf') for no limit but DISTTRAIN_TIMEOUT)")
    if timeout * 1000 >= _INT_MAX:
        return -1
    return max(0, int(timeout * 1000))


class Handle:
    """Returned by every *_async call. wait() gives the operation's result (the output
    array or tensor, None for a barrier) or raises its DisttrainError."""

    def __init__(self, context, request, keep, result=None, on_complete=None, name=None):
        self._context = context      # keeps the context alive while the request is
        self._request = request      # ctypes.c_void_p, None once freed
        self._keep = keep            # buffers the library reads or writes
        self._result = result
        self._on_complete = on_complete
        self._error = None
        self._lock = threading.Lock()
        self.name = name
        self._pid = os.getpid()
        context._track(self)

    def _finish(self, status):
        """Frees the request once it is done, then runs the completion step."""
        lib = _lib.lib()
        # Read the message before dt_request_free, which may overwrite it.
        message = last_error() if status < 0 else None
        if self._pid == os.getpid():  # a fork()ed child's copy is the parent's to free
            lib.dt_request_free(self._request)
        self._request = None
        self._context._untrack(self)
        try:
            if status != 0:
                raise_status(status, message, "dt_request_wait")
            if self._on_complete is not None:
                self._result = self._on_complete(self._result)
        except BaseException as e:  # kept so a second wait() raises the same error
            self._error = e
        finally:
            self._keep = None
            self._on_complete = None

    def _outcome(self):
        if self._error is not None:
            raise self._error
        return self._result

    def wait(self, timeout=None):
        """Blocks until the operation completes and returns its result. timeout in
        seconds (None or inf: no limit but the context's DISTTRAIN_TIMEOUT). On time-out
        raises disttrain.TimeoutError and the handle stays valid, so it can be waited
        again."""
        ms = _timeout_ms(timeout)
        with self._lock:
            if self._request is not None:
                try:
                    status = self._wait_request(ms)
                except BaseException:
                    self._interrupted()
                    raise
                if status is None:
                    raise DtTimeoutError(
                        _TIMEOUT, "DT_ERR_TIMEOUT",
                        f"operation {self.name or ''!r} did not complete within "
                        f"{timeout} s; wait() again or check the other ranks",
                        "dt_request_wait")
                self._finish(status)
            return self._outcome()

    def _wait_request(self, ms):
        """dt_request_wait for up to ms (< 0: no limit but DISTTRAIN_TIMEOUT): the
        request's status once it has completed, or None while it is still pending when
        ms have passed. On the main thread it waits in slices of _SLICE_MS, so that a
        signal handler runs (and raises) within one slice of its signal."""
        lib = _lib.lib()
        sliced = threading.current_thread() is threading.main_thread()
        deadline = None if ms < 0 else time.monotonic() + ms / 1000
        while True:
            if deadline is None:
                step = _SLICE_MS if sliced else -1
            else:
                step = max(0, int((deadline - time.monotonic()) * 1000))
                step = min(step, _SLICE_MS) if sliced else step
            status = lib.dt_request_wait(self._request, step)
            if status != _TIMEOUT:
                return status
            # A time-out of this slice, or the operation's own failure (DISTTRAIN_TIMEOUT):
            # dt_request_test tells them apart, and gives the status of one that has
            # completed meanwhile.
            done = ctypes.c_int(0)
            tested = lib.dt_request_test(self._request, ctypes.byref(done))
            if done.value:
                return tested
            if deadline is not None and time.monotonic() >= deadline:
                return None

    def _interrupted(self):
        """A signal handler raised (KeyboardInterrupt) while this rank waited for the
        operation: aborts the context where the operation is still in flight, so that
        the other ranks fail at once and nothing here waits for it any more."""
        if self._request is None or self._pid != os.getpid():
            return
        lib = _lib.lib()
        done = ctypes.c_int(0)
        lib.dt_request_test(self._request, ctypes.byref(done))
        handle = getattr(self._context, "_handle", None)
        if not done.value and handle is not None:
            lib.dt_context_abort(handle)

    def test(self):
        """True once the operation has completed (without blocking). wait() then
        returns at once."""
        with self._lock:
            if self._request is None:
                return True
            done = ctypes.c_int(0)
            status = _lib.lib().dt_request_test(self._request, ctypes.byref(done))
            if done.value:
                self._finish(status)
                return True
            check(status, "dt_request_test")
            return False

    def done(self):
        """Alias of test()."""
        return self.test()

    def _release(self):
        """Frees the request (waiting for it) without raising; used on shutdown and GC.
        In a child of os.fork() only forgets it: the parent's engine completes it."""
        with self._lock:
            if self._request is not None and self._pid != os.getpid():
                self._request = None
            elif self._request is not None:
                status = _lib.lib().dt_request_wait(self._request, -1)
                self._finish(status)

    def __del__(self):
        try:
            if self._request is not None:
                self._release()
        except Exception:
            pass

    def __repr__(self):
        state = "done" if self._request is None else "in flight"
        return f"<disttrain.Handle {self.name or ''!r} {state}>"


def start_group(items, name, start):
    """Starts start(item, name_i) for every item of a list, named "<name>.<i>" (None when
    name is None); returns the handles. If one cannot start (bad input), those already
    started are waited for before the error is raised, so no collective of the group is
    left half-issued on this rank."""
    if not isinstance(items, (list, tuple)):
        raise usage(f"a grouped collective takes a list of arrays or tensors, got "
                    f"{type(items).__name__}")
    handles = []
    try:
        for i, item in enumerate(items):
            handles.append(start(item, None if name is None else derived_name(name, f".{i}")))
    except BaseException:
        for h in handles:
            h._release()
        raise
    return handles


class GroupHandle:
    """The handles of a grouped collective; wait() returns their results as a list."""

    def __init__(self, handles):
        self._handles = handles

    def wait(self, timeout=None):
        """Waits for every member (in start order) and returns the list of results. On
        a failure the others are still waited for, then the first error is raised."""
        results, error = [], None
        for h in self._handles:
            try:
                results.append(h.wait(timeout))
            except BaseException as e:
                if isinstance(e, DtTimeoutError):
                    raise  # the handles stay valid: wait() again
                error = error or e
        if error is not None:
            raise error
        return results

    def test(self):
        """True once every member has completed."""
        return all([h.test() for h in self._handles])

    def done(self):
        return self.test()

    def __len__(self):
        return len(self._handles)

    def __repr__(self):
        return f"<disttrain.GroupHandle of {len(self._handles)}>"
