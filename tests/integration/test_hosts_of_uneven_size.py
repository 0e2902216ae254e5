# SPDX-License-Identifier: Apache-2.0
"""Jobs whose hosts hold different numbers of ranks (2 on one, 1 on the other), on two
"hosts" made of network namespaces, started through disttrainrun's ssh path, shared
memory on (the default). The ranks that share a host run the hierarchical allreduce, in
which a rank alone on its host leads it: every rank must take part in the same way, or
the job hangs until DISTTRAIN_TIMEOUT. disttrain-perf checks every result."""
import pathlib
import re
import sys
import time

import pytest

from conftest import build_path, run

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "netns"))
from ssh_hosts import namespace_hosts  # noqa: E402


@pytest.mark.parametrize("hosts", ["h0:2,h1:1", "h0:1,h1:2"])
def test_allreduce_on_hosts_of_two_and_one_rank(disttrainrun, tmp_path, hosts):
    perf = build_path("models", "tools", "disttrain-perf")
    with namespace_hosts(tmp_path) as (fabric, path):
        start = time.monotonic()
        r = run(fabric.exec_prefix(0) + [
            disttrainrun, "-np", "3", "--launcher", "ssh", "-H", hosts, "--timeout", "60",
            perf, "-b", "4", "-e", "4M", "-f", "16", "-n", "5", "-w", "1"],
            env={"PATH": path, "DISTTRAIN_TIMEOUT": "20"}, timeout=90)
        took = time.monotonic() - start
    assert r.returncode == 0, r.stdout + r.stderr
    rows = [l.split() for l in r.stdout.splitlines() if re.match(r"^\[0\]\s+\d", l)]
    assert len(rows) == 6, r.stdout  # 4 B to 4 MiB by 16x
    assert all(row[-1] == "0" for row in rows), f"wrong values:\n{r.stdout}"
    # Well under DISTTRAIN_TIMEOUT: no rank waited for a peer that never came.
    assert took < 15, f"took {took:.1f} s:\n{r.stdout}{r.stderr}"
