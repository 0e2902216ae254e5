# SPDX-License-Identifier: Apache-2.0
"""`meson install` into a DESTDIR, used as a user would: `import disttrain` finds the
installed library by its soname (no DISTTRAIN_* variable, no build tree), a 2-rank numpy
job runs on the installed launcher and tcp plugin, and the C example builds against the
install through CMake's find_package(disttrain)."""
import json
import os
import pathlib
import shutil
import subprocess

import pytest

from conftest import BUILD, REPO, build_path

JOBS = REPO / "tests" / "bindings" / "python" / "jobs"
PYTHON = "/usr/bin/python3"

SOURCE_PACKAGE = REPO / "bindings" / "python" / "disttrain"


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(root, site-packages folder, library folder, bin folder) of a DESTDIR install of
    the build tree."""
    build_path("core", "libdisttrain.so")
    root = tmp_path_factory.mktemp("destdir")
    # --no-rebuild: scripts/run-tests.sh has just built the tree; a rebuild here would
    # race with the other suites.
    r = subprocess.run(["meson", "install", "-C", str(BUILD), "--no-rebuild", "--quiet",
                        "--destdir", str(root)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"meson install failed:\n{r.stdout}\n{r.stderr}"
    packages = [p.parent for p in root.rglob("disttrain/__init__.py")]
    assert len(packages) == 1, f"expected one installed disttrain package, found {packages}"
    libraries = list(root.rglob("libdisttrain.so.1"))
    assert len(libraries) == 1, f"expected one libdisttrain.so.1, found {libraries}"
    launchers = list(root.rglob("bin/disttrainrun"))
    assert len(launchers) == 1, f"expected one bin/disttrainrun, found {launchers}"
    return root, packages[0].parent, libraries[0].parent, launchers[0].parent


def installed_env(site, libdir):
    """What a user of an install in a non-standard prefix sets: the two search paths, and
    the transport ("auto" would try every installed plugin, mpi included). Nothing points
    at the build tree."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DISTTRAIN_", "OMPI_", "PMI_", "PMIX_", "SLURM_"))
           and k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
                         "MASTER_ADDR", "MASTER_PORT", "TF_CONFIG")}
    env.update({"PYTHONPATH": str(site), "LD_LIBRARY_PATH": str(libdir),
                "DISTTRAIN_TRANSPORT": "tcp", "OMP_NUM_THREADS": "1",
                "PYTHONDONTWRITEBYTECODE": "1"})
    return env


def modules(package):
    return sorted(str(p.relative_to(package)) for p in package.rglob("*.py"))


def test_every_module_is_installed_and_no_bytecode(installed):
    _, site, _, _ = installed
    package = site / "disttrain"
    assert modules(package) == modules(SOURCE_PACKAGE)
    assert "torch/__init__.py" in modules(package)
    assert not list(package.rglob("__pycache__")), "bytecode of the source tree was installed"


def prefix():
    options = json.loads(subprocess.run(["meson", "introspect", str(BUILD), "--buildoptions"],
                                        capture_output=True, text=True, check=True,
                                        timeout=60).stdout)
    return next(o["value"] for o in options if o["name"] == "prefix")


def test_package_goes_where_the_python_of_the_prefix_looks(installed):
    root, site, _, _ = installed
    target = pathlib.Path("/", site.relative_to(root))
    assert target.is_relative_to(prefix()), f"{target} is outside the prefix {prefix()}"
    # Debian's python3 reads dist-packages under /usr and /usr/local (never site-packages):
    # installed there, the package imports with no PYTHONPATH.
    if prefix() in ("/usr", "/usr/local"):
        search = subprocess.run([PYTHON, "-c", "import sys; print(chr(10).join(sys.path))"],
                                capture_output=True, text=True, check=True, timeout=60,
                                env={"PATH": "/usr/bin:/bin"}).stdout.split()
        assert str(target) in search, f"{target} is not on {PYTHON}'s sys.path {search}"


def test_import_finds_the_installed_library_by_soname(installed, tmp_path):
    root, site, libdir, _ = installed
    probe = ("import disttrain, disttrain._lib as l\n"
             "print(l.library_path())\n"
             "print(disttrain.__file__)\n"
             "maps = open('/proc/self/maps').read().split()\n"
             "print(next(p for p in maps if 'libdisttrain.so' in p))\n"
             "disttrain.init()\n"
             "import numpy as np\n"
             "print(disttrain.allreduce(np.arange(4, dtype=np.float32)).tolist())\n"
             "disttrain.shutdown()\n")
    r = subprocess.run([PYTHON, "-c", probe], cwd=tmp_path, env=installed_env(site, libdir),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    soname, module, mapped, result = r.stdout.splitlines()[-4:]
    assert soname == "libdisttrain.so.1"
    assert pathlib.Path(module).is_relative_to(root), module
    assert pathlib.Path(mapped).is_relative_to(root), f"loaded {mapped}, not the install"
    assert result == "[0.0, 1.0, 2.0, 3.0]"


def test_two_rank_numpy_job_on_the_installed_launcher(installed, tmp_path):
    _, site, libdir, bindir = installed
    r = subprocess.run([str(bindir / "disttrainrun"), "-np", "2", "--timeout", "100", "--",
                        PYTHON, str(JOBS / "numpy_job.py")],
                       cwd=tmp_path, env=installed_env(site, libdir),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    assert r.stdout.count("OK") == 2, r.stdout


@pytest.mark.skipif(shutil.which("cmake") is None or shutil.which("cc") is None,
                    reason="needs cmake (scripts/install-deps.sh test) and a C compiler")
def test_c_example_builds_with_cmake_find_package(installed, tmp_path):
    root, site, libdir, bindir = installed
    configs = list(root.rglob("cmake/disttrain/disttrainConfig.cmake"))
    assert len(configs) == 1, configs
    build = tmp_path / "cmake-build"
    env = installed_env(site, libdir)
    # The prefix as CMake users give it; the config finds the rest relative to itself.
    env["CMAKE_PREFIX_PATH"] = str(root / prefix().lstrip("/"))
    r = subprocess.run(["cmake", "-S", str(REPO / "tests" / "packaging" / "cmake-example"),
                        "-B", str(build),
                        f"-DEXAMPLE_SOURCE={REPO}/bindings/c/examples/allreduce_example.c"],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"cmake configure failed:\n{r.stdout}\n{r.stderr}"
    r = subprocess.run(["cmake", "--build", str(build)], env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, f"cmake build failed:\n{r.stdout}\n{r.stderr}"
    r = subprocess.run([str(bindir / "disttrainrun"), "-np", "2", "--timeout", "50", "--",
                        str(build / "allreduce_example")], env=env, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    assert r.stdout.count("allreduce_example: OK") == 2, r.stdout


def test_cmake_config_refuses_a_newer_or_other_major_version(installed, tmp_path):
    if shutil.which("cmake") is None:
        pytest.skip("needs cmake (scripts/install-deps.sh test)")
    root, _, _, _ = installed
    config_dir = next(root.rglob("cmake/disttrain"))
    script = tmp_path / "versions.cmake"
    script.write_text(
        'foreach(v 1.0 1.1 1.99 2.0 0.9)\n'
        '  set(PACKAGE_FIND_VERSION ${v})\n'
        '  string(REGEX MATCH "^[0-9]+" PACKAGE_FIND_VERSION_MAJOR ${v})\n'
        '  set(PACKAGE_VERSION_COMPATIBLE)\n'
        f'  include("{config_dir}/disttrainConfigVersion.cmake")\n'
        '  message("${v} ${PACKAGE_VERSION_COMPATIBLE}")\n'
        'endforeach()\n')
    r = subprocess.run(["cmake", "-P", str(script)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    verdicts = dict(line.split() for line in r.stderr.splitlines())
    assert verdicts == {"1.0": "TRUE", "1.1": "TRUE", "1.99": "FALSE", "2.0": "FALSE",
                        "0.9": "FALSE"}, verdicts
