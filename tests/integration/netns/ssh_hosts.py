# SPDX-License-Identifier: Apache-2.0
"""Two "hosts" reached through disttrainrun's ssh path: network namespaces
(netns_fabric.Fabric) and an ssh on PATH that runs each command in its host's namespace,
under that host's name."""
import contextlib
import os

import pytest

from netns_fabric import Fabric, Unavailable, probe


FAKE_SSH = """#!/bin/sh
# ssh [-o OPT | -p PORT | -i KEY]... HOST COMMAND: runs COMMAND in HOST's network
# namespace, so that disttrainrun's ssh path starts ranks on the namespace "hosts", with
# HOST as host name (a UTS namespace of its own: an elastic re-form tells hosts apart by
# their names).
while [ $# -gt 0 ]; do
  case "$1" in -o|-p|-i) shift 2 ;; -*) shift ;; *) break ;; esac
done
host=$1; shift
case "$host" in
{cases}
  *) echo "ssh: unknown host $host" >&2; exit 255 ;;
esac
exec ip netns exec "$ns" unshare --uts sh -c 'hostname "$0" && exec sh -c "$1"' "$host" "$*"
"""


@contextlib.contextmanager
def namespace_hosts(tmp_path):
    """Two "hosts" h0 and h1 (network namespaces, tests/integration/netns) and a PATH whose
    ssh runs commands in them; skips where namespaces cannot be made."""
    try:
        probe()
    except Unavailable as e:
        pytest.skip(str(e))
    with Fabric(2) as fabric:
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        ssh = bin_dir / "ssh"
        ssh.write_text(FAKE_SSH.format(cases="\n".join(
            f"  h{i}) ns={name} ;;" for i, name in enumerate(fabric.names))))
        ssh.chmod(0o755)
        yield fabric, f"{bin_dir}:{os.environ['PATH']}"
