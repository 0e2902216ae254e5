# SPDX-License-Identifier: Apache-2.0
"""torch_ddp_compare.py runs end to end and prints its table (never judges a time)."""
import re
import subprocess
import sys

import pytest

from conftest import BUILD, REPO

SCRIPT = REPO / "tests" / "bench" / "torch_ddp_compare.py"

pytest.importorskip("torch", reason="python3-torch is not installed")


def bench(*args, timeout=240):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)],
                          env={"DISTTRAIN_BUILD_DIR": str(BUILD), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=timeout)


def test_one_short_round_prints_every_side_against_ddp():
    # The build tree doubles as the baseline: the A/B side must run like the default one.
    r = bench("--rounds", 1, "--steps", 5, "--warmup", 1, "--batch", 4, "--profile",
              "--sides", "disttrain,disttrain-ordered,ddp", "--baseline-build", BUILD)
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(r"^torch's BLAS: \S", r.stdout, re.M), r.stdout
    for label in ("disttrain", r"disttrain \(base\)", "disttrain ordered", r"ddp \(gloo\)"):
        row = re.search(rf"^{label}\s+([0-9.]+)\s+([0-9.]+)x(\s+[0-9.]+){{4}}$", r.stdout,
                        re.M)
        assert row and float(row.group(1)) > 0, (label, r.stdout)
    assert re.search(r"^ddp \(gloo\)\s+[0-9.]+\s+1\.00x", r.stdout, re.M), r.stdout


def test_a_baseline_without_a_library_is_refused_by_name(tmp_path):
    r = bench("--baseline-build", tmp_path, timeout=60)
    assert r.returncode != 0
    assert f"--baseline-build {tmp_path}: no core/libdisttrain.so" in r.stderr
