#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks the built nccl transport's ELF surface, without a GPU.

  check_nccl_plugin.py needed PLUGIN    NEEDED has no libnccl, libcudart or libcuda
  check_nccl_plugin.py core PERF PLUGIN NCCL_MOCK CUDART_MOCK
                                        through the core's loader, on the mocks: the
                                        plugin initialises, the core refuses it as the
                                        only transport (no control traffic), naming it,
                                        and the communicator is finalized, not leaked
  check_nccl_plugin.py skip             exit 77 (meson's skip): the plugin was not built

The plugin opens NCCL and the CUDA runtime with dlopen at init, so it must load (and
decline with a reason) on a machine with neither; the core relies on every plugin
exporting only its entry point, which api_exported_symbols checks for
every plugin of the build.
"""
import os
import subprocess
import sys
import tempfile

SKIP = 77


def run(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=60).stdout


def needed(plugin):
    libs = [line.split("[", 1)[1].rstrip("]").strip()
            for line in run("readelf", "-d", plugin).splitlines() if "(NEEDED)" in line]
    print(f"{plugin} needs {libs}")
    linked = [lib for lib in libs
              if lib.startswith(("libnccl", "libcudart", "libcuda.so"))]
    return f"it links {linked}; it must dlopen them" if linked else None


def core(perf, plugin, nccl_mock, cudart_mock):
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "calls")
        env = dict(os.environ,
                   DISTTRAIN_PLUGIN_PATH=os.path.dirname(plugin),
                   DISTTRAIN_TRANSPORT="nccl",
                   DISTTRAIN_NCCL_LIBRARY=nccl_mock,
                   DISTTRAIN_CUDA_RUNTIME_LIBRARY=cudart_mock,
                   DISTTRAIN_MOCK_NCCL_LOG=log)
        for name in ("DISTTRAIN_RANK", "DISTTRAIN_SIZE", "DISTTRAIN_STORE_ADDR"):
            env.pop(name, None)
        r = subprocess.run([perf, "-b", "8", "-e", "8"], env=env, capture_output=True,
                           text=True, timeout=60)
        print(r.stdout + r.stderr)
        calls = open(log).read().split() if os.path.exists(log) else []
        print(f"mock NCCL calls: {calls}")
    if r.returncode == 0:
        return "the core ran with nccl as its only transport"
    if "'nccl'" not in r.stderr or "cannot carry the engine's control traffic" not in r.stderr:
        return "the core did not refuse nccl for lack of control traffic"
    if calls != ["ncclCommInitRankConfig", "ncclCommFinalize", "ncclCommDestroy"]:
        return f"expected init, finalize and destroy of the communicator, got {calls}"
    return None


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "skip":
        print("SKIP: libdt-transport-nccl.so was not built "
              "(nccl.h not found under /usr/local/cuda, or -Dtransport_nccl=disabled)")
        return SKIP
    if len(sys.argv) == 6 and sys.argv[1] == "core":
        problem = core(*sys.argv[2:])
    elif len(sys.argv) == 3 and sys.argv[1] in ("needed",):
        problem = {"needed": needed}[sys.argv[1]](sys.argv[2])
    else:
        print(__doc__)
        return 2
    if problem:
        print(f"FAIL: {sys.argv[2]}: {problem}")
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
