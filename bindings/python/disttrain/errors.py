# SPDX-License-Identifier: Apache-2.0
"""Python exceptions for libdisttrain status codes.

Every failing call raises a DisttrainError subclass chosen by the status range of
disttrain.h (usage, plugin, transport, peer, time-out, internal). The exception carries
the numeric status, its name ("DT_ERR_TIMEOUT") and the library's own message from
dt_last_error(), which says what was wrong and what to do.
"""
import builtins


class DisttrainError(RuntimeError):
    """A libdisttrain call failed.

    Attributes: status (int, negative), status_name (e.g. "DT_ERR_INVALID_ARGUMENT"),
    message (what dt_last_error() said), call (the C function that failed, or None).
    """

    def __init__(self, status, status_name, message, call=None):
        self.status = status
        self.status_name = status_name
        self.message = message
        self.call = call
        where = f"{call}: " if call else ""
        super().__init__(f"{where}{status_name}: {message}" if message
                         else f"{where}{status_name}")


class UsageError(DisttrainError, ValueError):
    """The caller passed something wrong ([-1, -99]); also raised by the binding itself
    for bad Python input (a non-contiguous array, an unsupported dtype, no init)."""


class NotInitializedError(UsageError):
    """A collective or query was called before disttrain.init()."""


class PluginError(DisttrainError):
    """A plugin could not be found, loaded or negotiated ([-100, -199])."""


class TransportError(DisttrainError):
    """A socket, transport or rendezvous-store failure ([-200, -299])."""


class PeerLostError(DisttrainError):
    """Another rank is gone or the job was aborted ([-300, -399])."""


class TimeoutError(DisttrainError, builtins.TimeoutError):
    """A blocking step ran past its deadline ([-400, -499])."""


class InternalError(DisttrainError):
    """A bug in libdisttrain or a plugin ([-900, -999])."""


def class_for(status):
    """The exception class for a negative status."""
    if -99 <= status <= -1:
        return UsageError
    if -199 <= status <= -100:
        return PluginError
    if -299 <= status <= -200:
        return TransportError
    if -399 <= status <= -300:
        return PeerLostError
    if -499 <= status <= -400:
        return TimeoutError
    if -999 <= status <= -900:
        return InternalError
    return DisttrainError


def usage(message):
    """A UsageError raised by the binding (no C call failed)."""
    return UsageError(-1, "DT_ERR_INVALID_ARGUMENT", message)


def mismatch(message):
    """The UsageError of ranks that disagree on a call's arguments, found by the binding
    from what the ranks exchanged (DT_ERR_MISMATCH, as the library raises it)."""
    return UsageError(-6, "DT_ERR_MISMATCH", message)
