# SPDX-License-Identifier: Apache-2.0
"""Turns C status codes into exceptions carrying dt_last_error()'s message."""
from . import _lib
from .errors import class_for


def last_error():
    """dt_last_error() of this thread, as str."""
    return _lib.lib().dt_last_error().decode("utf-8", "replace")


def status_name(status):
    """"DT_ERR_TIMEOUT" from dt_status_string's "DT_ERR_TIMEOUT: operation timed out"."""
    text = _lib.lib().dt_status_string(status).decode("utf-8", "replace")
    return text.split(":", 1)[0]


def raise_status(status, message=None, call=None):
    """Raises the DisttrainError subclass of a negative status."""
    if message is None:
        message = last_error()
    raise class_for(status)(status, status_name(status), message, call)


def check(status, call=None):
    """Raises if status is an error; returns it otherwise (DT_OK or DT_INPROGRESS)."""
    if status < 0:
        raise_status(status, None, call)
    return status
