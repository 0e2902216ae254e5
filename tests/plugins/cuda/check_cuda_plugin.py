#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks the built CUDA memory provider's ELF surface, without a GPU.

  check_cuda_plugin.py needed PLUGIN    NEEDED has libcudart, and no libcuda or libnccl
  check_cuda_plugin.py skip             exit 77 (meson's skip): the plugin was not built

The plugin must load on a machine with only the CUDA runtime installed, and the core
relies on every plugin exporting only its entry point, which api_exported_symbols
checks for every plugin of the build.
"""
import subprocess
import sys

SKIP = 77


def run(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=60).stdout


def needed(plugin):
    libs = [line.split("[", 1)[1].rstrip("]").strip()
            for line in run("readelf", "-d", plugin).splitlines() if "(NEEDED)" in line]
    print(f"{plugin} needs {libs}")
    problems = []
    if not any(lib.startswith("libcudart.so") for lib in libs):
        problems.append("it does not link libcudart")
    for lib in libs:
        # libcuda.so.1 is the driver: linking it would make the plugin fail to load
        # where only the runtime is installed. NCCL belongs to a transport, not here.
        if lib.startswith("libcuda.so") or lib.startswith("libnccl"):
            problems.append(f"it links {lib}")
    return "; ".join(problems) or None


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "skip":
        print("SKIP: no CUDA runtime: libdt-memory-cuda.so was not built "
              "(cudart not found under /usr/local/cuda, or -Dmemory_cuda=disabled)")
        return SKIP
    if len(sys.argv) != 3 or sys.argv[1] not in ("needed",):
        print(__doc__)
        return 2
    problem = {"needed": needed}[sys.argv[1]](sys.argv[2])
    if problem:
        print(f"FAIL: {sys.argv[2]}: {problem}")
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
