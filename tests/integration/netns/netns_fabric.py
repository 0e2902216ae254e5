# SPDX-License-Identifier: Apache-2.0
"""Several hosts on one machine: network namespaces joined by veth pairs to a bridge.

Fabric(n) makes n "host" namespaces, each with one interface eth0 at 10.77.0.<i+1>/24,
plus a hub namespace holding the bridge, so nothing touches the machine's own network:
traffic only flows between these namespaces. Names carry the pid and a counter, so
parallel runs never collide; close() (or the with-block) deletes every namespace it made,
which also removes their interfaces, even when a step failed half-way.

Fabric(n, decoy_bridge=True) also gives every host a bridge docker0 at 172.17.0.1/16, up
and listed before eth0, as on hosts that run Docker: an address only that host can use.

hosts_file(i, text) gives host i an /etc/hosts of its own (`ip netns exec` mounts
/etc/netns/<name>/hosts over /etc/hosts), so that one name resolves differently per host;
close() removes those too.
"""
import itertools
import os
import pathlib
import shutil
import subprocess

SUBNET = "10.77.0"
_counter = itertools.count()


class Unavailable(Exception):
    """Namespaces cannot be made here; the message says why (for pytest.skip)."""


def _ip(*args, check=True):
    return subprocess.run(["ip", *map(str, args)], capture_output=True, text=True,
                          timeout=30, check=check)


def probe():
    """Raises Unavailable unless this process can create network namespaces."""
    if os.geteuid() != 0:
        raise Unavailable("network namespaces need root (run the suite as root)")
    if shutil.which("ip") is None:
        raise Unavailable("the `ip` command (iproute2) is not installed")
    name = f"dtprobe{os.getpid()}x{next(_counter)}"
    r = _ip("netns", "add", name, check=False)
    if r.returncode != 0:
        raise Unavailable(f"`ip netns add` failed: {r.stderr.strip()}")
    _ip("netns", "del", name, check=False)


class Fabric:
    def __init__(self, hosts, decoy_bridge=False):
        self.decoy_bridge = decoy_bridge
        self.tag = f"{os.getpid() % 100000}x{next(_counter)}"
        self.hub = f"dthub{self.tag}"
        self.names = [f"dth{self.tag}n{i}" for i in range(hosts)]
        self.made = []
        self.etc_dirs = []
        try:
            self._build()
        except BaseException:
            self.close()
            raise

    def address(self, i):
        return f"{SUBNET}.{i + 1}"

    def _add_ns(self, name):
        _ip("netns", "add", name)
        self.made.append(name)
        _ip("-n", name, "link", "set", "lo", "up")

    def _build(self):
        self._add_ns(self.hub)
        _ip("-n", self.hub, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.hub, "link", "set", "br0", "up")
        for i, ns in enumerate(self.names):
            self._add_ns(ns)
            if self.decoy_bridge:
                # Made first, so that its index, and its place in every listing, comes
                # before eth0's.
                _ip("-n", ns, "link", "add", "docker0", "type", "bridge")
                _ip("-n", ns, "addr", "add", "172.17.0.1/16", "dev", "docker0")
                _ip("-n", ns, "link", "set", "docker0", "up")
            # The hub end stays in the hub; the other end goes straight into the host.
            _ip("-n", self.hub, "link", "add", f"v{i}", "type", "veth", "peer", "name",
                "eth0", "netns", ns)
            _ip("-n", self.hub, "link", "set", f"v{i}", "master", "br0", "up")
            _ip("-n", ns, "addr", "add", f"{self.address(i)}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")

    def exec_prefix(self, i):
        """Command prefix that runs a program on host i."""
        return ["ip", "netns", "exec", self.names[i]]

    def hosts_file(self, i, text):
        """Host i resolves names through text (an /etc/hosts) instead of the machine's."""
        folder = pathlib.Path("/etc/netns") / self.names[i]
        folder.mkdir(parents=True, exist_ok=True)
        self.etc_dirs.append(folder)
        (folder / "hosts").write_text(text)

    def cut(self, i):
        """Takes host i's link down, from inside its namespace: its packets go nowhere."""
        _ip("-n", self.names[i], "link", "set", "eth0", "down")

    def close(self):
        for name in reversed(self.made):
            _ip("netns", "del", name, check=False)
        self.made = []
        for folder in self.etc_dirs:
            shutil.rmtree(folder, ignore_errors=True)
        self.etc_dirs = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
