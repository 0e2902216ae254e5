# SPDX-License-Identifier: Apache-2.0
"""The C and C++ examples run under disttrainrun, and the C example builds out of tree
against the build's libdisttrain with nothing but pkg-config."""
import shutil
import subprocess

import pytest

from conftest import BUILD, REPO, build_path, run

EXAMPLES = {
    "c": ("allreduce_example", "allreduce_example: OK"),
    "cpp": ("allreduce_example_cpp", "allreduce_example_cpp: OK"),
}


@pytest.mark.parametrize("lang", sorted(EXAMPLES))
@pytest.mark.parametrize("ranks", [1, 2])
def test_example_under_launcher(disttrainrun, lang, ranks):
    program, ok_line = EXAMPLES[lang]
    example = build_path("bindings", "c", program)
    r = run([disttrainrun, "-np", ranks, "--timeout", "60", example], timeout=90)
    assert r.returncode == 0, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    assert r.stdout.count(ok_line) == ranks, r.stdout
    for rank in range(ranks):
        assert f"rank {rank} of {ranks}" in r.stdout, r.stdout


def test_c_example_alone_is_a_job_of_one():
    r = run([build_path("bindings", "c", "allreduce_example")], timeout=60)
    assert r.returncode == 0, r.stderr
    assert "rank 0 of 1 (transport tcp): allreduce sum = 0 1 2 3 4 5 6 7" in r.stdout


@pytest.mark.parametrize("lang", sorted(EXAMPLES))
def test_example_reports_errors_with_last_error(lang):
    program, _ = EXAMPLES[lang]
    r = run([build_path("bindings", "c", program)], env={"DISTTRAIN_TRANSPORT": "nope"},
            timeout=60)
    assert r.returncode != 0
    assert "DT_ERR_PLUGIN_NOT_FOUND" in r.stderr, r.stderr
    assert "libdt-transport-nope.so" in r.stderr, r.stderr


def pkg_config(*args):
    return subprocess.run(["pkg-config", *args, "disttrain"], check=True, text=True,
                          capture_output=True, timeout=30,
                          env={"PKG_CONFIG_PATH": str(BUILD / "meson-uninstalled"),
                               "PATH": "/usr/bin:/bin"}).stdout.split()


@pytest.mark.skipif(shutil.which("pkg-config") is None or shutil.which("cc") is None,
                    reason="needs pkg-config and a C compiler")
def test_c_example_builds_out_of_tree_with_pkg_config(tmp_path):
    build_path("meson-uninstalled", "disttrain-uninstalled.pc")
    build_path("core", "libdisttrain.so")
    cflags, libs = pkg_config("--cflags"), pkg_config("--libs")
    plugindir = pkg_config("--variable=plugindir")[0]
    rpath = [f"-Wl,-rpath,{flag[2:]}" for flag in libs if flag.startswith("-L")]
    exe = tmp_path / "allreduce_example"
    source = REPO / "bindings" / "c" / "examples" / "allreduce_example.c"
    compile_ = subprocess.run(["cc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic",
                               *cflags, str(source), "-o", str(exe), *libs, *rpath],
                              capture_output=True, text=True, timeout=120)
    assert compile_.returncode == 0, compile_.stderr
    r = run([exe], env={"DISTTRAIN_PLUGIN_PATH": plugindir}, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "allreduce_example: OK" in r.stdout


@pytest.mark.parametrize("transport", ["fixture_v1", "fixture_v2", "fixture_decline,fixture_v1"])
def test_c_example_on_fixture_transports(transport):
    """A v1-only plugin runs behind the core's adapter; a declining one is skipped."""
    r = run([build_path("bindings", "c", "allreduce_example")],
            env={"DISTTRAIN_PLUGIN_PATH": str(build_path("tests", "plugins", "fixtures")),
                 "DISTTRAIN_TRANSPORT": transport}, timeout=60)
    assert r.returncode == 0, r.stderr
    chosen = transport.split(",")[-1]
    assert f"rank 0 of 1 (transport {chosen})" in r.stdout, r.stdout
    if "fixture_decline" in transport:
        assert "no device found on this machine" in r.stderr, r.stderr
