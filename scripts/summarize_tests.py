#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Adds up the JUnit reports of every suite into one closing line.

Prints "N passed, N failed, N skipped" and exits 1 if anything failed (or no report was
written at all, which means a suite did not run).
"""
import pathlib
import sys
import xml.etree.ElementTree as ET


def count(path):
    passed = failed = skipped = 0
    root = ET.parse(path).getroot()
    for case in root.iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        elif case.find("skipped") is not None:
            skipped += 1
        else:
            passed += 1
    return passed, failed, skipped


def main():
    reports = sorted(pathlib.Path(sys.argv[1]).glob("*.xml"))
    totals = [0, 0, 0]
    for report in reports:
        try:
            p, f, s = count(report)
        except ET.ParseError as e:
            print(f"{report.name}: unreadable report ({e})")
            p, f, s = 0, 1, 0
        print(f"{report.name}: {p} passed, {f} failed, {s} skipped")
        totals = [totals[0] + p, totals[1] + f, totals[2] + s]
    if not reports:
        print("no test report was written")
        totals[1] += 1
    print(f"{totals[0]} passed, {totals[1]} failed, {totals[2]} skipped")
    return 1 if totals[1] else 0


if __name__ == "__main__":
    sys.exit(main())
