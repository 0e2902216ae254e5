#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Turns the TAP of tests/packaging/installed_checks.sh into a JUnit report that
scripts/summarize_tests.py counts: one testcase per check, the "# " lines after a failed
check as its failure text.

    tap_to_junit.py SUITE OUT.xml TAP_FILE      the checks' results
    tap_to_junit.py SUITE OUT.xml --skip REASON  one skipped testcase saying why
    tap_to_junit.py SUITE OUT.xml --fail NAME DETAIL_FILE  one failed testcase

A TAP file without its closing "1..N" plan means the checks did not finish: that is a
failure of its own, so a crash half-way never passes.
"""
import re
import sys
import xml.etree.ElementTree as ET


def parse(text):
    """[(name, "ok"|"failed"|"skipped", detail)] and whether the plan line was seen."""
    cases, planned = [], False
    for line in text.splitlines():
        m = re.match(r"(not )?ok \d+ - (.*?)(?: # SKIP (.*))?$", line)
        if m:
            status = "failed" if m.group(1) else ("skipped" if m.group(3) else "ok")
            cases.append([m.group(2), status, m.group(3) or ""])
        elif line.startswith("# ") and cases and cases[-1][1] == "failed":
            cases[-1][2] += line[2:] + "\n"
        elif re.match(r"1\.\.\d+$", line):
            planned = True
    return cases, planned


def write(suite, out, cases):
    root = ET.Element("testsuites")
    ts = ET.SubElement(root, "testsuite", name=suite, tests=str(len(cases)),
                       failures=str(sum(c[1] == "failed" for c in cases)),
                       skipped=str(sum(c[1] == "skipped" for c in cases)))
    for name, status, detail in cases:
        tc = ET.SubElement(ts, "testcase", classname=suite, name=name)
        if status == "failed":
            ET.SubElement(tc, "failure", message=f"{name} failed").text = detail
        elif status == "skipped":
            ET.SubElement(tc, "skipped", message=detail)
    ET.ElementTree(root).write(out, encoding="utf-8", xml_declaration=True)
    failed = sum(c[1] == "failed" for c in cases)
    print(f"{suite}: {sum(c[1] == 'ok' for c in cases)} passed, {failed} failed, "
          f"{sum(c[1] == 'skipped' for c in cases)} skipped -> {out}")
    return 1 if failed else 0


def main(argv):
    if len(argv) < 4:
        sys.exit(__doc__)
    suite, out = argv[1], argv[2]
    if argv[3] == "--skip":
        return write(suite, out, [[f"{suite} (skipped)", "skipped", " ".join(argv[4:])]])
    if argv[3] == "--fail":
        detail = open(argv[5], errors="replace").read()[-8000:] if len(argv) > 5 else ""
        return write(suite, out, [[argv[4], "failed", detail]])
    cases, planned = parse(open(argv[3], errors="replace").read())
    if not planned:
        cases.append(["the checks ran to the end", "failed",
                      f"{argv[3]} has no closing plan line: the checks stopped early"])
    return write(suite, out, cases)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
