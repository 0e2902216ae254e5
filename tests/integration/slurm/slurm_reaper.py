# SPDX-License-Identifier: Apache-2.0
"""Ends whatever a test cluster left behind, even when the test process is killed.

Run by Cluster as `python3 slurm_reaper.py SLURM_CONF DIR` with a pipe on stdin. When the
pipe closes (Cluster.close(), or the test process died and the kernel closed it), it
kills every process whose environment names this cluster's SLURM_CONF (the daemons, the
step daemons, srun, sbatch and the tasks all carry it: the test sets it for each) and
removes DIR.
"""
import os
import shutil
import signal
import sys


def processes_of(conf):
    marker = f"SLURM_CONF={conf}".encode()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                if marker in f.read().split(b"\0"):
                    yield int(name)
        except OSError:
            pass  # gone, or not ours to read


def main():
    conf, folder = sys.argv[1], sys.argv[2]
    sys.stdin.buffer.read()  # returns at EOF: the cluster is done, one way or another
    for pid in processes_of(conf):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
