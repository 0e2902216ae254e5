# SPDX-License-Identifier: Apache-2.0
"""Argument spellings and checks shared by the numpy and torch collectives.

The root of a broadcast is `root_rank=` everywhere, as in Horovod. The numpy functions
used to spell it `root=`; that spelling is still accepted, with a DeprecationWarning, so
scripts keep running while they are ported.

Integer arguments (ranks, counts) are checked for their type before their value, so that
root_rank=1.0 is told it must be an int rather than that it is not a rank.

Strings (op names, context settings) reach the library as C strings, which end at the
first NUL: c_string() refuses a NUL rather than let 'grad\x00weight' and 'grad\x00bias'
both arrive as 'grad' and match each other across ranks.
"""
import numbers
import os
import sys
import warnings

from .errors import usage

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep

# Stands for "not passed", so that root_rank=0 given explicitly and root= can be told apart.
UNSET = object()


def integer(value, what, meaning=""):
    """value as an int, or a UsageError naming its type. numpy's integers are ints; bool
    is not, though Python counts it as one: True for a rank or a count is a slip."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise usage(f"{what}={value!r} must be an int{meaning}, not "
                    f"{type(value).__name__}")
    return int(value)


def integers(values, what):
    """Checks each item of a list or tuple with integer() (numpy would read [1, True] as
    the integers [1, 1]); arrays and tensors are left to a check of their dtype."""
    if isinstance(values, (list, tuple)):
        for i, value in enumerate(values):
            integer(value, f"{what}[{i}]")


def c_string(value, what):
    """value (a str, or bytes passed as they are) as the NUL-terminated UTF-8 bytes the C
    API takes; a UsageError naming `what` and the position of an embedded NUL, which the
    library would take for the end of the string."""
    data = value if isinstance(value, bytes) else str(value).encode("utf-8")
    nul = data.find(b"\0")
    if nul >= 0:
        position = nul if isinstance(value, bytes) else str(value).index("\0")
        raise usage(f"{what}={value!r} holds a NUL character at position {position}; the "
                    f"library reads {what} as a C string, which would end there "
                    f"({data[:nul].decode('utf-8', 'replace')!r}): remove the NUL")
    return data


def derived_name(name, suffix):
    """The name of one step of the call named `name`: "<name><suffix>". The name is checked
    as given first, so that a NUL is reported in the caller's own name."""
    c_string(str(name), "name")
    return f"{name}{suffix}"


def root_rank_of(root_rank, root, where):
    """The root rank of a call to `where` given root_rank= and the deprecated root=.
    TypeError when both are given; DeprecationWarning when only root= is."""
    if root is UNSET:
        return 0 if root_rank is UNSET else root_rank
    if root_rank is not UNSET:
        raise TypeError(f"{where}() got both root_rank={root_rank!r} and root={root!r}; "
                        f"pass only root_rank= (root= is its deprecated spelling)")
    warnings.warn(f"{where}(root=...) is deprecated; spell it root_rank= (as Horovod does)",
                  DeprecationWarning, stacklevel=_caller_level())
    return root


def _caller_level():
    """The stacklevel of the first frame outside this package: the warning then names
    the user's line, and Python's default filters show it when that line is in
    __main__ (they hide DeprecationWarnings attributed to library modules)."""
    level, frame = 2, sys._getframe(2)  # 1: root_rank_of, 2: its caller
    while frame is not None and \
            os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        frame = frame.f_back
        level += 1
    return level
