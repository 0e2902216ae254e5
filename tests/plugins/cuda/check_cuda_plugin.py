#!/usr/bin/env python3
"""Checks the built CUDA memory provider's ELF surface, without a GPU.

  check_cuda_plugin.py exports PLUGIN   exactly one dynamic symbol: dt_plugin_negotiate
  check_cuda_plugin.py needed PLUGIN    NEEDED has libcudart, and no libcuda or libnccl
  check_cuda_plugin.py skip             exit 77 (meson's skip): the plugin was not built

The plugin must load on a machine with only the CUDA runtime installed, and the core
relies on every plugin exporting only its entry point.
"""
import subprocess
import sys

SKIP = 77
ENTRY = "dt_plugin_negotiate"


def run(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=60).stdout


def exports(plugin):
    symbols = [line.split()[2].split("@")[0]
               for line in run("nm", "-D", "--defined-only", plugin).splitlines()
               if len(line.split()) >= 3]
    print(f"{plugin} exports {symbols}")
    if symbols != [ENTRY]:
        return f"expected exactly [{ENTRY!r}], got {symbols}"
    return None


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
    if len(sys.argv) != 3 or sys.argv[1] not in ("exports", "needed"):
        print(__doc__)
        return 2
    problem = {"exports": exports, "needed": needed}[sys.argv[1]](sys.argv[2])
    if problem:
        print(f"FAIL: {sys.argv[2]}: {problem}")
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
