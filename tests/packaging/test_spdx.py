# SPDX-License-Identifier: Apache-2.0
"""Every source file starts with its SPDX-License-Identifier line (scripts/spdx.py), and
the script finds and fixes files without it in each language's comment syntax."""
import subprocess

from conftest import REPO

SPDX = ["/usr/bin/python3", str(REPO / "scripts" / "spdx.py")]


def spdx(*args):
    return subprocess.run(SPDX + list(args), capture_output=True, text=True, timeout=120)


def test_every_source_file_has_the_spdx_line():
    r = spdx("--check", str(REPO))
    assert r.returncode == 0, f"{r.stdout}{r.stderr}"


def test_check_lists_files_without_it_and_fix_adds_it_after_a_shebang(tmp_path):
    files = {
        "lib.c": "int x;\n",
        "api.h": "#pragma once\n",
        "core.cc": "int y;\n",
        "tool.py": "#!/usr/bin/env python3\n\"\"\"Doc.\"\"\"\n",
        "run.sh": "#!/bin/sh\necho hi\n",
        "meson.build": "project('x')\n",
        "lib.rs": "//! Crate docs.\n",
        "README.md": "# not source\n",
        "done.cc": "// SPDX-License-Identifier: Apache-2.0\nint z;\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, timeout=60)

    r = spdx("--check", str(tmp_path))
    assert r.returncode == 1
    listed = sorted(line.split(":")[0] for line in r.stdout.splitlines()
                    if not line.startswith("spdx:"))
    assert listed == ["api.h", "core.cc", "lib.c", "lib.rs", "meson.build", "run.sh",
                      "tool.py"]

    assert spdx("--fix", str(tmp_path)).returncode == 0
    read = lambda name: (tmp_path / name).read_text()  # noqa: E731
    assert read("lib.c") == "/* SPDX-License-Identifier: Apache-2.0 */\nint x;\n"
    assert read("core.cc") == "// SPDX-License-Identifier: Apache-2.0\nint y;\n"
    assert read("tool.py") == ("#!/usr/bin/env python3\n# SPDX-License-Identifier: Apache-2.0\n"
                               "\"\"\"Doc.\"\"\"\n")
    assert read("run.sh") == "#!/bin/sh\n# SPDX-License-Identifier: Apache-2.0\necho hi\n"
    assert read("README.md") == "# not source\n"
    assert read("done.cc") == files["done.cc"]
    assert spdx("--check", str(tmp_path)).returncode == 0
