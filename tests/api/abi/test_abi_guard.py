# SPDX-License-Identifier: Apache-2.0
"""The ABI guard itself (check_abi.py against the descriptions in api/abi/): a copy of the
public headers whose probe is built here passes unchanged and with a member appended to
a field_mask struct, and fails when a public struct member is removed or a function
disappears. Skips without abigail-tools (abidw, abidiff) or a C compiler."""
import shutil
import subprocess
import sys

import pytest

from conftest import REPO

ABI = REPO / "tests" / "api" / "abi"
HEADERS = ["disttrain.h", "compute.h"]

pytestmark = pytest.mark.skipif(
    not (shutil.which("abidw") and shutil.which("abidiff") and shutil.which("cc")),
    reason="abigail-tools (abidw, abidiff) or cc is not installed")


def probe_of(tmp_path, edit=None):
    """Builds the public-API probe of a copy of api/disttrain (edited by edit(text) ->
    text, applied to disttrain.h) and returns its path."""
    api = tmp_path / "api"
    shutil.copytree(REPO / "api" / "disttrain", api / "disttrain")
    header = api / "disttrain" / "disttrain.h"
    if edit:
        text = header.read_text()
        changed = edit(text)
        assert changed != text, "the edit changed nothing"
        header.write_text(changed)
    source = tmp_path / "probe.c"
    subprocess.run([sys.executable, str(ABI / "gen_abi_probe.py"), str(source),
                    *[str(api / "disttrain" / h) for h in HEADERS]], check=True)
    probe = tmp_path / "probe.so"
    subprocess.run(["cc", "-std=gnu99", "-g", "-O0", "-shared", "-fPIC", "-I", str(api),
                    "-Wl,-soname,libabi_probe_public.so",  # as meson names the probe
                    "-o", str(probe), str(source)], check=True)
    return api, probe


def check(api, probe):
    return subprocess.run([sys.executable, str(ABI / "check_abi.py"), "--abi-dir",
                           str(REPO / "api" / "abi"), "--headers-dir", str(api),
                           "--probe", f"public-api={probe}"],
                          capture_output=True, text=True, timeout=120)


def test_the_headers_as_they_are_pass(tmp_path):
    r = check(*probe_of(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_removed_struct_member_fails(tmp_path):
    # dt_op_params_t loses its last member, the producer's stream.
    def drop_stream(text):
        return text.replace("    void *stream;\n} dt_op_params_t;", "} dt_op_params_t;")
    r = check(*probe_of(tmp_path, drop_stream))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "dt_op_params" in r.stdout and "1 data member deletion" in r.stdout, r.stdout


def test_a_removed_function_fails(tmp_path):
    def drop_reform(text):
        return text.replace("DT_API dt_status_t dt_context_reform(dt_context_h ctx);", "")
    r = check(*probe_of(tmp_path, drop_reform))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "dt_context_reform" in r.stdout + r.stderr


def test_a_member_appended_to_a_field_mask_struct_passes(tmp_path):
    def append(text):
        return text.replace("    void *stream;\n} dt_op_params_t;",
                            "    void *stream;\n    int appended;\n} dt_op_params_t;")
    r = check(*probe_of(tmp_path, append))
    assert r.returncode == 0, r.stdout + r.stderr
