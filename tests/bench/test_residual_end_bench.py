# SPDX-License-Identifier: Apache-2.0
"""residual_end_bench: its command line, its table and its bit check (never its timings),
on the oneDNN plugin and, where it was built, the cuDNN plugin built for the CPU."""
import re

import pytest

from conftest import BUILD, build_path, run

ROW = re.compile(r"^(\d+ x \d+\^2)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(yes|NO)$", re.M)


def bench():
    return build_path("tests", "bench", "compute", "residual_end_bench")


def onednn_env():
    return {"DISTTRAIN_COMPUTE": "onednn",
            "DISTTRAIN_PLUGIN_PATH": str(BUILD / "plugins" / "compute" / "onednn")}


@pytest.mark.parametrize("flags", [[], ["--layout", "nchw"], ["--bf16"]],
                         ids=["nhwc", "nchw", "bf16"])
def test_every_block_end_prints_both_times_and_the_same_bits(flags):
    r = run([bench(), "--batch", "2", "--rounds", "1", "--calls", "1", *flags],
            env=onednn_env(), timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = ROW.findall(r.stdout)
    assert [row[0] for row in rows] == ["256 x 56^2", "512 x 28^2", "1024 x 14^2",
                                        "2048 x 7^2"], r.stdout
    assert all(row[4] == "yes" and float(row[1]) > 0 and float(row[2]) > 0
               for row in rows), r.stdout
    assert re.search(r"^step\s+[\d.]+\s+[\d.]+\s+[\d.]+", r.stdout, re.M), r.stdout


def test_the_cudnn_plugin_built_for_the_cpu_gives_the_same_bits_too():
    cpu = BUILD / "tests" / "compute" / "cudnn_cpu"
    if not (cpu / "libdt-compute-cudnn.so").exists():
        pytest.skip("the cuDNN plugin built for the CPU is not there (no cuDNN headers)")
    r = run([bench(), "--batch", "1", "--rounds", "1", "--calls", "1"],
            env={"DISTTRAIN_COMPUTE": "cudnn", "DISTTRAIN_PLUGIN_PATH": str(cpu),
                 "LD_LIBRARY_PATH": str(cpu)}, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("residual_end_bench: cudnn on "), r.stdout
    rows = ROW.findall(r.stdout)
    assert len(rows) == 4 and all(row[4] == "yes" for row in rows), r.stdout


@pytest.mark.parametrize("flags", [["--batch", "0"], ["--layout", "nwhc"], ["--fast"]])
def test_a_bad_flag_is_refused_with_the_usage(flags):
    r = run([bench(), *flags], env=onednn_env(), timeout=30)
    assert r.returncode == 2
    assert "usage:" in r.stderr
