#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks (--check, the default) or adds (--fix) the line
"SPDX-License-Identifier: Apache-2.0" at the top of every source file: C, C++, CUDA and
headers, Python, Rust, shell, Meson and CMake files, and debian/rules. It goes on the
first line, or on the second after a "#!" line, in the file's own comment syntax.

    scripts/spdx.py [--check | --fix] [ROOT]

The files are those git lists in ROOT (tracked, and new ones that are not ignored), so a
build tree is never touched. --check prints every file without the line and exits 1.
"""
import pathlib
import subprocess
import sys

LICENSE = "Apache-2.0"
TAG = "SPDX-License-Identifier:"
# How a line comment looks, by suffix or by whole name. C files and headers use /* */:
# the public headers must stay valid for every C standard a user compiles with.
BY_SUFFIX = {
    ".c": ("/* ", " */"), ".h": ("/* ", " */"),
    ".cc": ("// ", ""), ".cpp": ("// ", ""), ".hpp": ("// ", ""), ".cu": ("// ", ""),
    ".rs": ("// ", ""),
    ".py": ("# ", ""), ".sh": ("# ", ""), ".cmake": ("# ", ""), ".in": None,
}
BY_NAME = {
    "meson.build": ("# ", ""), "meson_options.txt": ("# ", ""),
    "CMakeLists.txt": ("# ", ""), "rules": ("# ", ""),
}
# Where a file's header may sit: its first lines (a shebang comes first).
HEAD_LINES = 2


def comment_style(path):
    if path.name in BY_NAME:
        if path.name == "rules" and path.parent.name != "debian":
            return None
        return BY_NAME[path.name]
    if path.suffix == ".in":  # a template: the syntax of what it becomes
        return comment_style(path.with_suffix(""))
    return BY_SUFFIX.get(path.suffix)


def source_files(root):
    listed = subprocess.run(
        ["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True, check=True, timeout=60).stdout.decode().split("\0")
    for name in sorted(set(filter(None, listed))):
        path = root / name
        if path.is_file() and not path.is_symlink() and comment_style(path):
            yield path


def has_tag(text):
    return any(TAG in line for line in text.splitlines()[:HEAD_LINES])


def add_tag(path, text):
    opening, closing = comment_style(path)
    line = f"{opening}{TAG} {LICENSE}{closing}\n"
    if text.startswith("#!"):
        first, _, rest = text.partition("\n")
        return f"{first}\n{line}{rest}"
    return line + text


def main(argv):
    args = [a for a in argv[1:] if a.startswith("--")]
    paths = [a for a in argv[1:] if not a.startswith("--")]
    if any(a not in ("--check", "--fix") for a in args) or len(paths) > 1:
        sys.exit(__doc__)
    fix = "--fix" in args
    root = pathlib.Path(paths[0] if paths else pathlib.Path(__file__).resolve().parent.parent)
    missing = []
    for path in source_files(root):
        text = path.read_text(encoding="utf-8")
        if has_tag(text):
            continue
        if fix:
            path.write_text(add_tag(path, text), encoding="utf-8")
        missing.append(path.relative_to(root))
    if fix:
        print(f"spdx: added the {LICENSE} line to {len(missing)} files")
        return 0
    for name in missing:
        print(f"{name}: no '{TAG} {LICENSE}' line at the top")
    if missing:
        print(f"spdx: {len(missing)} files lack the line: run scripts/spdx.py --fix")
        return 1
    print("spdx: every source file has the line")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
