#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds and runs the Rust bindings' tests (bindings/rust, cargo --offline, target folder
# inside the build tree), then runs the 2-rank example under disttrainrun, and writes
# <report-dir>/rust.junit.xml with one testcase per Rust test (plus the example job).
# Usage: scripts/rust-tests.sh <report-dir>. Exits non-zero if anything failed.
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
reports=${1:?usage: scripts/rust-tests.sh <report-dir>}
build=$(cd "${DISTTRAIN_BUILD_DIR:-$repo/build}" 2>/dev/null && pwd) || {
  echo "rust-tests: build tree ${DISTTRAIN_BUILD_DIR:-$repo/build} missing; build first"; }
build=${build:-${DISTTRAIN_BUILD_DIR:-$repo/build}}
mkdir -p "$reports"
reports=$(cd "$reports" && pwd)

export DISTTRAIN_BUILD_DIR=$build
export CARGO_TARGET_DIR=$build/rust-target
export DISTTRAIN_PLUGIN_PATH=${DISTTRAIN_PLUGIN_PATH:-$build/plugins/transport/tcp}
export CARGO_TERM_COLOR=never
# The tests start their own jobs: never join one the caller belongs to.
unset DISTTRAIN_RANK DISTTRAIN_SIZE DISTTRAIN_LOCAL_RANK DISTTRAIN_LOCAL_SIZE \
      DISTTRAIN_STORE_ADDR DISTTRAIN_JOB_TOKEN DISTTRAIN_STORE_SERVER
mkdir -p "$CARGO_TARGET_DIR"
log=$CARGO_TARGET_DIR/cargo-test.log
job_log=$CARGO_TARGET_DIR/example-job.log

echo "== Rust bindings (cargo test --offline, target $CARGO_TARGET_DIR)"
if command -v cargo >/dev/null; then
  (cd "$repo/bindings/rust" && timeout 900 cargo test --offline --no-fail-fast) >"$log" 2>&1
  cargo_rc=$?
else
  echo "cargo not found: install Rust (rustup or Debian's cargo)" >"$log"
  cargo_rc=127
fi
cat "$log"

echo "== Rust example: disttrainrun -np 2 allreduce"
example=$CARGO_TARGET_DIR/debug/examples/allreduce
launcher=$build/core/launch/disttrainrun
if [ -x "$example" ] && [ -x "$launcher" ]; then
  timeout 120 "$launcher" -np 2 --timeout 90 -- "$example" >"$job_log" 2>&1
  job_rc=$?
else
  echo "missing $example or $launcher" >"$job_log"
  job_rc=1
fi
cat "$job_log"

/usr/bin/python3 - "$log" "$cargo_rc" "$job_log" "$job_rc" "$reports/rust.junit.xml" <<'PY'
"""cargo test's lines "test NAME ... ok|FAILED|ignored" -> one JUnit testcase each."""
import re
import sys
import xml.etree.ElementTree as ET

log_path, cargo_rc, job_path, job_rc, out = sys.argv[1:6]
text = open(log_path, errors="replace").read()
suite = "rust"
cases = []  # (classname, name, status, detail)
for line in text.splitlines():
    m = re.match(r"\s*Running (?:unittests )?(\S+) \((?:.*/)?([^/]+?)(?:-[0-9a-f]{8,})?\)", line)
    if m:
        suite = "rust." + m.group(2)
        continue
    m = re.match(r"\s*Doc-tests (\S+)", line)
    if m:
        suite = "rust.doc." + m.group(1)
        continue
    m = re.match(r"test (.+?) \.\.\. (ok|FAILED|ignored)\b", line)
    if m:
        cases.append([suite, m.group(1), m.group(2), ""])

# The captured output of each failed test ("---- NAME stdout ----" ... next "----").
for section in re.split(r"\n(?=---- )", text):
    m = re.match(r"---- (.+?) stdout ----", section)
    if m:
        for c in cases:
            if c[1] == m.group(1) and c[2] == "FAILED" and not c[3]:
                c[3] = section[:4000]

tail = "\n".join(text.splitlines()[-60:])
if int(cargo_rc) != 0 and not any(c[2] == "FAILED" for c in cases):
    # A build error, a crashed test binary or a time-out: no per-test line says so.
    cases.append(["rust", "cargo test --offline", "FAILED",
                  f"cargo exited with {cargo_rc}:\n{tail}"])
job = open(job_path, errors="replace").read()
cases.append(["rust.example", "disttrainrun -np 2 allreduce",
              "ok" if int(job_rc) == 0 else "FAILED", job[-4000:]])

root = ET.Element("testsuites")
ts = ET.SubElement(root, "testsuite", name="rust", tests=str(len(cases)),
                   failures=str(sum(c[2] == "FAILED" for c in cases)),
                   skipped=str(sum(c[2] == "ignored" for c in cases)))
for classname, name, status, detail in cases:
    tc = ET.SubElement(ts, "testcase", classname=classname, name=name)
    if status == "FAILED":
        ET.SubElement(tc, "failure", message=f"{name} failed").text = detail
    elif status == "ignored":
        ET.SubElement(tc, "skipped", message="ignored")
ET.ElementTree(root).write(out, encoding="utf-8", xml_declaration=True)
failed = sum(c[2] == "FAILED" for c in cases)
print(f"rust: {sum(c[2] == 'ok' for c in cases)} passed, {failed} failed, "
      f"{sum(c[2] == 'ignored' for c in cases)} skipped -> {out}")
sys.exit(1 if failed else 0)
PY
