# SPDX-License-Identifier: Apache-2.0
"""Finds libdisttrain.so and declares the C API (api/disttrain/disttrain.h) for ctypes.

No compiled extension: the only binary this package needs is the library itself, so one
install works with every Python and framework version. The search order is

1. DISTTRAIN_LIBRARY, a path to the .so (the explicit choice always wins);
2. a build tree: DISTTRAIN_BUILD_DIR/core/libdisttrain.so, then <repo>/build/core/... when
   the package is used from a source checkout (bindings/python/disttrain);
3. the system, by the soname "libdisttrain.so.1" (what an installed package uses: the
   dynamic loader searches LD_LIBRARY_PATH, then its cache of the installed libraries),
   then ctypes.util.find_library("disttrain").

ctypes.CDLL releases the GIL around every foreign call, so a blocking collective never
holds up the other Python threads.
"""
import ctypes
import ctypes.util
import os
import pathlib
import threading

# The header this module was written against; the library accepts the same major and a
# minor that is not newer than its own.
API_MAJOR = 1
API_MINOR = 4

_c_int_p = ctypes.POINTER(ctypes.c_int)
_ctx = ctypes.c_void_p
_req = ctypes.c_void_p
_status = ctypes.c_int
_size = ctypes.c_size_t


class Version(ctypes.Structure):
    _fields_ = [("api_major", ctypes.c_int), ("api_minor", ctypes.c_int),
                ("patch", ctypes.c_int), ("string", ctypes.c_char_p)]


class ContextParams(ctypes.Structure):
    """dt_context_params_t; field_mask says which fields were set."""
    _fields_ = [("field_mask", ctypes.c_uint64), ("rank", ctypes.c_int),
                ("size", ctypes.c_int), ("local_rank", ctypes.c_int),
                ("local_size", ctypes.c_int), ("store_addr", ctypes.c_char_p),
                ("job_token", ctypes.c_char_p), ("transport", ctypes.c_char_p),
                ("timeout_ms", ctypes.c_int), ("ordered", ctypes.c_int),
                ("memory", ctypes.c_char_p), ("name", ctypes.c_char_p)]


class OpParams(ctypes.Structure):
    """dt_op_params_t; field_mask says which fields were set."""
    _fields_ = [("field_mask", ctypes.c_uint64), ("memory_type", ctypes.c_int),
                ("device", ctypes.c_int), ("stream", ctypes.c_void_p)]


# dt_op_param_field bits, in OpParams order.
OP_PARAM_BITS = {"memory_type": 1 << 0, "device": 1 << 1, "stream": 1 << 2}

_op_params_p = ctypes.POINTER(OpParams)

# dt_context_param_field bits, in ContextParams order.
PARAM_BITS = {"rank": 1 << 0, "size": 1 << 1, "local_rank": 1 << 2, "local_size": 1 << 3,
              "store_addr": 1 << 4, "job_token": 1 << 5, "transport": 1 << 6,
              "timeout_ms": 1 << 7, "ordered": 1 << 8, "memory": 1 << 9, "name": 1 << 10}

# name: (restype, argtypes)
_PROTOTYPES = {
    "dt_status_string": (ctypes.c_char_p, [_status]),
    "dt_last_error": (ctypes.c_char_p, []),
    "dt_get_version": (_status, [ctypes.POINTER(Version)]),
    "dt_dtype_size": (_size, [ctypes.c_int]),
    "dt_dtype_name": (ctypes.c_char_p, [ctypes.c_int]),
    "dt_reduce_op_name": (ctypes.c_char_p, [ctypes.c_int]),
    "dt_memory_type_name": (ctypes.c_char_p, [ctypes.c_int]),
    "dt_context_create_versioned": (_status, [ctypes.c_int, ctypes.c_int,
                                              ctypes.POINTER(ContextParams),
                                              ctypes.POINTER(_ctx)]),
    "dt_context_destroy": (_status, [_ctx]),
    "dt_context_abort": (_status, [_ctx]),
    "dt_context_rank": (_status, [_ctx, _c_int_p]),
    "dt_context_size": (_status, [_ctx, _c_int_p]),
    "dt_context_local_rank": (_status, [_ctx, _c_int_p]),
    "dt_context_local_size": (_status, [_ctx, _c_int_p]),
    "dt_context_transport": (_status, [_ctx, ctypes.POINTER(ctypes.c_char_p)]),
    "dt_group_create": (_status, [_ctx, _c_int_p, ctypes.c_int, ctypes.POINTER(_ctx)]),
    "dt_join": (_status, [_ctx, _c_int_p]),
    "dt_context_reform": (_status, [_ctx]),
    "dt_context_poll_joiners": (_status, [_ctx, _c_int_p]),
    "dt_request_test": (_status, [_req, _c_int_p]),
    "dt_request_wait": (_status, [_req, ctypes.c_int]),
    "dt_request_free": (_status, [_req]),
    # The blocking form: one foreign call, and the engine starts it at once (in ordered
    # mode it runs on the calling thread when nothing is queued ahead of it). Every
    # collective goes through the _ex forms of API 1.1: params NULL (None) is host memory.
    "dt_allreduce_ex": (_status, [_ctx, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p,
                                  _size, ctypes.c_int, ctypes.c_int, _op_params_p]),
    "dt_allreduce_async_ex": (_status, [_ctx, ctypes.c_char_p, ctypes.c_void_p,
                                        ctypes.c_void_p, _size, ctypes.c_int, ctypes.c_int,
                                        _op_params_p, ctypes.POINTER(_req)]),
    "dt_broadcast_async_ex": (_status, [_ctx, ctypes.c_char_p, ctypes.c_void_p, _size,
                                        ctypes.c_int, ctypes.c_int, _op_params_p,
                                        ctypes.POINTER(_req)]),
    "dt_allgather_async_ex": (_status, [_ctx, ctypes.c_char_p, ctypes.c_void_p,
                                        ctypes.c_void_p, _size, ctypes.c_int, _op_params_p,
                                        ctypes.POINTER(_req)]),
    "dt_reduce_scatter_async_ex": (_status, [_ctx, ctypes.c_char_p, ctypes.c_void_p,
                                             ctypes.c_void_p, _size, ctypes.c_int,
                                             ctypes.c_int, _op_params_p,
                                             ctypes.POINTER(_req)]),
    "dt_alltoall_async_ex": (_status, [_ctx, ctypes.c_char_p, ctypes.c_void_p,
                                       ctypes.c_void_p, _size, ctypes.c_int, _op_params_p,
                                       ctypes.POINTER(_req)]),
    "dt_barrier_async_ex": (_status, [_ctx, ctypes.c_char_p, _op_params_p,
                                      ctypes.POINTER(_req)]),
    # API 1.2: uneven blocks. The count arrays (size_t, one per rank) are passed as
    # addresses of numpy arrays; the library copies them during the call.
    "dt_allgatherv_async_ex": (_status, [_ctx, ctypes.c_char_p, ctypes.c_void_p,
                                         ctypes.c_void_p, _size, ctypes.c_void_p,
                                         ctypes.c_int, _op_params_p, ctypes.POINTER(_req)]),
    "dt_alltoallv_async_ex": (_status, [_ctx, ctypes.c_char_p, ctypes.c_void_p,
                                        ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                        ctypes.c_int, _op_params_p, ctypes.POINTER(_req)]),
}


class LibraryNotFound(ImportError):
    """libdisttrain.so could not be found or is not a usable libdisttrain."""


SONAME = "libdisttrain.so.1"


def _repo_build_dir():
    """<repo>/build when this package is bindings/python/disttrain of a source checkout;
    None when it is installed (site-packages has no build tree beside it)."""
    package = pathlib.Path(__file__).resolve().parent
    if package.parent.name != "python" or package.parent.parent.name != "bindings":
        return None
    return package.parents[2] / "build"


def candidates():
    """(description, path-or-name) in search order."""
    found = []
    explicit = os.environ.get("DISTTRAIN_LIBRARY")
    if explicit:
        found.append(("DISTTRAIN_LIBRARY", explicit))
    build = os.environ.get("DISTTRAIN_BUILD_DIR")
    if build:
        found.append(("DISTTRAIN_BUILD_DIR",
                      str(pathlib.Path(build) / "core" / "libdisttrain.so")))
    checkout_build = _repo_build_dir()
    if checkout_build is not None:
        found.append(("source checkout", str(checkout_build / "core" / "libdisttrain.so")))
    found.append(("system (soname)", SONAME))
    system = ctypes.util.find_library("disttrain")
    if system and system != SONAME:
        found.append(("system (find_library)", system))
    return found


def _declare(lib, where):
    for name, (restype, argtypes) in _PROTOTYPES.items():
        try:
            fn = getattr(lib, name)
        except AttributeError:
            raise LibraryNotFound(
                f"{where} is not a usable libdisttrain: it lacks {name} (an old or "
                f"unfinished build? rebuild it, or point DISTTRAIN_LIBRARY at another "
                f"libdisttrain.so)") from None
        fn.restype = restype
        fn.argtypes = argtypes


def _check_version(lib, where):
    v = Version()
    if lib.dt_get_version(ctypes.byref(v)) != 0:
        raise LibraryNotFound(f"{where}: dt_get_version failed")
    if v.api_major != API_MAJOR or v.api_minor < API_MINOR:
        raise LibraryNotFound(
            f"{where} speaks C API {v.api_major}.{v.api_minor}; this package needs "
            f"{API_MAJOR}.x with x >= {API_MINOR}: install a matching libdisttrain")


def _open(explicit_only=False):
    tried = []
    for origin, path in candidates():
        is_path = "/" in path
        if is_path and not os.path.exists(path):
            tried.append(f"  {origin}: {path} (no such file)")
            if origin == "DISTTRAIN_LIBRARY":
                break  # an explicit choice that is missing is an error, not a hint
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append(f"  {origin}: {path} ({e})")
            if origin == "DISTTRAIN_LIBRARY":
                break
            continue
        where = f"{path} (from {origin})"
        _declare(lib, where)
        _check_version(lib, where)
        return lib, path
    raise LibraryNotFound(
        "libdisttrain.so was not found. Looked in, in order:\n" + "\n".join(tried) +
        "\nSet DISTTRAIN_LIBRARY=/path/to/libdisttrain.so, or DISTTRAIN_BUILD_DIR to a "
        "build tree, or install the library.")


_lock = threading.Lock()
_loaded = None


def lib():
    """The loaded library (loaded on first use, so `import disttrain` never fails)."""
    global _loaded
    with _lock:
        if _loaded is None:
            _loaded = _open()
        return _loaded[0]


def library_path():
    """Path or name of the library in use (loads it if needed)."""
    lib()
    return _loaded[1]
