#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks what the built binaries export (nm -D --defined-only).

  check_exports.py --header disttrain.h --library libdisttrain.so \
      --plugin-dir DIR [--plugin-dir DIR ...] --min-plugins N

- libdisttrain.so exports only dt_* functions, and exactly those that disttrain.h
  declares with DT_API: no C++ symbol, no helper leaks through the version script.
- Every plugin (libdt-*.so found under the plugin folders) exports exactly
  dt_plugin_negotiate; fixture_nosym, built to lack it, exports nothing at all.
"""
import argparse
import pathlib
import re
import subprocess
import sys

DECL = re.compile(r"\bDT_API\s+[^;(){}]*?\b(dt_\w+)\s*\(", re.S)
NO_ENTRY_FIXTURES = {"libdt-transport-fixture_nosym.so"}


def exported(path):
    out = subprocess.run(["nm", "-D", "--defined-only", str(path)], check=True,
                         capture_output=True, text=True, timeout=60).stdout
    symbols = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3:
            symbols.add(parts[2].split("@")[0])
    return symbols


def declared(header):
    text = pathlib.Path(header).read_text(encoding="utf-8")
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return set(DECL.findall(text))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--header", action="append", required=True)
    parser.add_argument("--library", required=True)
    parser.add_argument("--plugin-dir", action="append", default=[])
    parser.add_argument("--min-plugins", type=int, default=1)
    args = parser.parse_args()
    failures = []

    lib = exported(args.library)
    api = set().union(*(declared(h) for h in args.header))
    not_dt = sorted(s for s in lib if not s.startswith("dt_"))
    if not_dt:
        failures.append(f"{args.library} exports symbols outside dt_*: {not_dt}")
    undeclared = sorted(s for s in lib if s.startswith("dt_") and s not in api)
    if undeclared:
        failures.append(f"{args.library} exports dt_* symbols that no public header "
                        f"declares: {undeclared}")
    missing = sorted(api - lib)
    if missing:
        failures.append(f"{args.library} does not export: {missing}")
    print(f"libdisttrain.so exports {len(lib)} symbols, disttrain.h declares {len(api)}")

    plugins = sorted({p for d in args.plugin_dir for p in pathlib.Path(d).rglob("libdt-*.so")
                      if p.is_file()})
    for plugin in plugins:
        symbols = exported(plugin)
        expected = set() if plugin.name in NO_ENTRY_FIXTURES else {"dt_plugin_negotiate"}
        status = "ok" if symbols == expected else "WRONG"
        print(f"{plugin}: {sorted(symbols)} {status}")
        if symbols != expected:
            failures.append(f"{plugin} exports {sorted(symbols)}, expected "
                            f"{sorted(expected)}")
    if len(plugins) < args.min_plugins:
        failures.append(f"found {len(plugins)} plugins under {args.plugin_dir}, expected at "
                        f"least {args.min_plugins}: build them first")

    for failure in failures:
        print("FAIL:", failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
