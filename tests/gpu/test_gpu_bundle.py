# SPDX-License-Identifier: Apache-2.0
"""The GPU run's preparation, checked without a GPU. tests/gpu/bundle.sh packs what
tests/gpu/run.sh needs for a machine that has CUDA and PyTorch but none of Debian's
libraries, and the device machine takes at most 64 MiB along: a bundle that is too big,
lacks a file run.sh names, or holds a program whose libraries that machine cannot resolve
would cost a run there. Each of those is a failure here instead."""
import re
import subprocess

import pytest

from conftest import BUILD, REPO, run

GPU_DIR = REPO / "tests" / "gpu"
CARRY_LIMIT = 64 << 20
# What the GPU machine has without the bundle: the C and C++ runtimes and zlib (in every
# Debian and Ubuntu base system), the CUDA libraries that run.sh finds where PyTorch's
# wheels put them, and the driver.
PROVIDED = re.compile(r"(ld-linux-x86-64|libc|libm|libdl|libpthread|librt|libstdc\+\+|"
                      r"libgcc_s|libz|libcudnn|libcublas|libcublasLt|libcudart|libnccl|"
                      r"libcuda)\.so\.[0-9]+$")


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    if not (BUILD / "plugins" / "compute" / "cudnn" / "libdt-compute-cudnn.so").exists():
        pytest.skip("the CUDA plugins were not built (no CUDA under /usr/local/cuda)")
    dest = tmp_path_factory.mktemp("gpu") / ".gpu-bundle"
    r = run(["bash", GPU_DIR / "bundle.sh", "--reference", BUILD, dest], timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return dest


def files(bundle):
    return [p for p in bundle.rglob("*") if p.is_file()]


def test_the_bundle_fits_what_the_device_machine_takes(bundle):
    size = sum(p.stat().st_size for p in files(bundle))
    assert size < CARRY_LIMIT, f"the bundle is {size / 2**20:.1f} MiB, over 64 MiB"


def test_every_file_run_sh_names_is_in_the_bundle(bundle):
    script = (GPU_DIR / "run.sh").read_text()
    # data/ holds Fashion-MNIST only in a bundle made without --reference; run.sh trains
    # on synthetic data where it is missing.
    named = set(re.findall(r"\$BUNDLE/((?:bin|lib|plugins)/[\w.+-]+)", script))
    assert named, "run.sh names no file of the bundle: has its layout changed?"
    missing = sorted(n for n in named if not (bundle / n).exists())
    assert not missing, f"run.sh needs {missing}, which bundle.sh does not pack"


def needed(path):
    """The DT_NEEDED libraries of an ELF file ([] for anything else)."""
    r = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True)
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", r.stdout)


def test_every_library_of_the_bundle_is_in_it_or_on_the_gpu_machine(bundle):
    packed = {p.name for p in files(bundle) if p.parent.name in ("lib", "fallback")}
    elves = [p for p in files(bundle) if p.read_bytes()[:4] == b"\x7fELF"]
    assert len(elves) >= 8, [p.name for p in elves]
    unresolved = sorted({(p.relative_to(bundle).as_posix(), lib) for p in elves
                         for lib in needed(p)
                         if lib not in packed and not PROVIDED.fullmatch(lib)})
    assert not unresolved, ("libraries neither packed by bundle.sh nor on the GPU machine "
                            f"(file, library): {unresolved}")


@pytest.mark.parametrize("script", ["run.sh", "bundle.sh", "nccl_shared_gpu.sh"])
def test_the_gpu_scripts_parse(script):
    r = run(["bash", "-n", GPU_DIR / script], timeout=30)
    assert r.returncode == 0, r.stderr
