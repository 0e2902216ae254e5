#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Compares the ABI of a fresh build with the descriptions committed in api/abi/.

Each argument NAME=BINARY names a committed description (api/abi/NAME.abi) and the built
binary it describes. The binary is described with abidw (libabigail) and compared with
abidiff; the check fails on any change that is not a reviewed-compatible addition:

  * new functions or variables (a new DT_API function, a new public type) pass;
  * members appended at the end of a struct whose first member is struct_size or
    field_mask pass (that convention lets old and new callers share the struct; the
    plugin ops tables included, which the core copies min(struct_size, sizeof) of into
    a zeroed table, so an older plugin's table reads the new members as NULL);
  * anything else abidiff reports fails: a removed function, type or symbol (abidiff's
    incompatible-change bit), a changed signature, a reordered, removed, resized or
    retyped member, growth of any other struct, a changed soname.

Additions pass but are not guarded until the description is re-recorded, so the check
prints them and asks for scripts/record-abi.sh. With --record it writes the descriptions
instead of comparing. Exits 77 (meson's "skipped") when abidw/abidiff are missing or the
descriptions were recorded for another architecture.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

SKIP = 77

# abidiff's exit status is a bit field (abidiff(1), "RETURN VALUES").
ABIDIFF_ERROR = 1
ABIDIFF_USAGE_ERROR = 2
ABIDIFF_ABI_CHANGE = 4
ABIDIFF_ABI_INCOMPATIBLE_CHANGE = 8

# Stable, reviewable output: no source locations, paths or DT_NEEDED entries (those
# change with the build machine, not with the ABI); type ids hashed, not numbered.
ABIDW_COMMON = ["--no-show-locs", "--no-corpus-path", "--no-comp-dir-path",
                "--no-elf-needed", "--type-id-style", "hash"]

GROWABLE_FIRST_MEMBERS = ("struct_size", "field_mask")


def run(cmd):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def describe(binary, headers_dir, out):
    """Writes the abidw description of binary to out. With headers_dir (the probes),
    only types defined in the public headers are kept."""
    cmd = ["abidw"] + ABIDW_COMMON
    if headers_dir:
        cmd += ["--headers-dir", headers_dir, "--drop-private-types"]
    cmd += ["--out-file", out, binary]
    r = run(cmd)
    if r.returncode != 0:
        sys.exit(f"abidw failed on {binary} (exit {r.returncode}):\n{r.stdout}")


def architecture(path):
    with open(path, encoding="utf-8") as f:
        head = f.read(4096)
    m = re.search(r"architecture='([^']*)'", head)
    return m.group(1) if m else None


def struct_members(decl):
    return [(m.get("layout-offset-in-bits"), m.find("var-decl").get("name"))
            for m in decl.findall("data-member") if m.find("var-decl") is not None]


def undo_appended_members(recorded, fresh, out):
    """Copies fresh to out with the members appended to growable structs (relative to
    recorded) removed and their sizes restored, so that abidiff on (recorded, out) shows
    every change except that reviewed-compatible growth. Returns the names of the
    structs it shrank."""
    old = {}
    for decl in ET.parse(recorded).iter("class-decl"):
        if decl.get("is-declaration-only") != "yes" and decl.get("name"):
            old[decl.get("name")] = (decl.get("size-in-bits"), struct_members(decl))
    tree = ET.parse(fresh)
    grown = set()
    for decl in tree.iter("class-decl"):
        name = decl.get("name")
        if name not in old or decl.get("is-declaration-only") == "yes":
            continue
        old_size, old_members = old[name]
        new_members = struct_members(decl)
        if (not old_members or old_members[0][1] not in GROWABLE_FIRST_MEMBERS
                or len(new_members) <= len(old_members)
                or new_members[:len(old_members)] != old_members):
            continue
        members = [m for m in decl.findall("data-member") if m.find("var-decl") is not None]
        for extra in members[len(old_members):]:
            decl.remove(extra)
        decl.set("size-in-bits", old_size)
        grown.add(name)
    tree.write(out, encoding="utf-8", xml_declaration=False)
    return sorted(grown)


def abidiff(recorded, fresh, *extra):
    return run(["abidiff"] + list(extra) + [recorded, fresh])


def check(name, recorded, fresh, tmp):
    """Returns True when fresh is recorded or a reviewed-compatible extension of it."""
    full = abidiff(recorded, fresh)
    if full.returncode == 0:
        with open(recorded, "rb") as a, open(fresh, "rb") as b:
            same = a.read() == b.read()
        print(f"{name}: unchanged" if same else
              f"{name}: no change abidiff reports, but the description differs from the "
              "recorded one (e.g. an enumerator added, which abidiff filters as harmless); "
              "run scripts/record-abi.sh so it is guarded too")
        return True
    if full.returncode & (ABIDIFF_ERROR | ABIDIFF_USAGE_ERROR):
        print(f"{name}: abidiff failed (exit {full.returncode}):\n{full.stdout}")
        return False
    shrunk = os.path.join(tmp, name + ".without-appended.abi")
    grown = undo_appended_members(recorded, fresh, shrunk)
    rest = abidiff(recorded, shrunk, "--no-added-syms")
    if rest.returncode == 0:
        print(f"{name}: compatible additions only (new functions, types or variables"
              + (f"; members appended to {', '.join(grown)}" if grown else "") + ").")
        print("  They are not guarded until recorded: run scripts/record-abi.sh and "
              "commit api/abi/ (api/abi/README.md).")
        print(full.stdout.rstrip())
        return True
    kinds = []
    if rest.returncode & ABIDIFF_ABI_INCOMPATIBLE_CHANGE:
        kinds.append("INCOMPATIBLE change (a removed function, variable or type)")
    if rest.returncode & ABIDIFF_ABI_CHANGE:
        kinds.append("ABI change")
    print(f"{name}: FAILED, abidiff exit {rest.returncode}: {', '.join(kinds)}")
    print(f"  recorded: {recorded}")
    if grown:
        print(f"  (members appended to {', '.join(grown)} are compatible and not shown)")
    print(rest.stdout.rstrip())
    return False


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--abi-dir", required=True, help="folder of the committed descriptions")
    ap.add_argument("--headers-dir", required=True, help="public headers (api/)")
    ap.add_argument("--library", action="append", default=[], metavar="NAME=BINARY",
                    help="an exported library: described by its ELF symbols and soname")
    ap.add_argument("--probe", action="append", default=[], metavar="NAME=BINARY",
                    help="a probe built with -g by gen_abi_probe.py: described with types")
    ap.add_argument("--record", action="store_true", help="write the descriptions")
    args = ap.parse_args()

    missing = [t for t in ("abidw", "abidiff") if shutil.which(t) is None]
    if missing:
        print(f"SKIP: {' and '.join(missing)} not installed (Debian package abigail-tools; "
              "scripts/install-deps.sh installs it)")
        return SKIP

    items = [(spec, False) for spec in args.library] + [(spec, True) for spec in args.probe]
    ok = True
    with tempfile.TemporaryDirectory(prefix="dt-abi-") as tmp:
        for spec, typed in items:
            name, binary = spec.split("=", 1)
            fresh = os.path.join(tmp, name + ".abi")
            describe(binary, args.headers_dir if typed else None, fresh)
            recorded = os.path.join(args.abi_dir, name + ".abi")
            if args.record:
                shutil.copyfile(fresh, recorded)
                print(f"recorded {recorded}")
                continue
            if not os.path.exists(recorded):
                print(f"{name}: no recorded description {recorded}; run scripts/record-abi.sh")
                ok = False
                continue
            if architecture(recorded) != architecture(fresh):
                print(f"SKIP: {recorded} describes {architecture(recorded)}, this build is "
                      f"{architecture(fresh)}; the descriptions are recorded on x86_64")
                return SKIP
            ok = check(name, recorded, fresh, tmp) and ok
    if not args.record:
        print("ABI check passed" if ok else
              "ABI check FAILED: if the change is intended, see api/abi/README.md")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
