# SPDX-License-Identifier: Apache-2.0
"""os.fork() after disttrain.init(), as a helper process or data loader worker is made:
the child inherits the default context, a process set and a request in flight, checks
that using them raises UsageError naming the parent, and leaves with sys.exit(0), so the
atexit handler of `import disttrain` and garbage collection close its copies: they must
only forget them (no dt_context_destroy or dt_request_free in the child). The parent,
once the child is gone, keeps reducing with the other ranks.
Prints "OK" on success; raises (non-zero exit) otherwise."""
import atexit
import os
import signal
import sys
import time

import numpy as np

# Far more than the child needs (it makes no collective); a child that hung would
# otherwise outlive the job.
CHILD_LIMIT_S = 30
released_in_child = []


def check_child_released_nothing():
    """Registered before `import disttrain`, so it runs after disttrain's own handler."""
    if released_in_child:
        print(f"child: its exit called {released_in_child} on the parent's objects",
              flush=True)
        os._exit(1)


atexit.register(check_child_released_nothing)

import disttrain  # noqa: E402 (after the handler above, so that its handler runs first)
from disttrain import _lib  # noqa: E402


def spy_on_releases():
    lib = _lib.lib()
    for name in ("dt_context_destroy", "dt_request_free"):
        def spy(handle, real=getattr(lib, name), name=name):
            released_in_child.append(name)
            return real(handle)
        setattr(lib, name, spy)


def child():
    spy_on_releases()
    for what, call in (("allreduce", lambda: disttrain.allreduce(np.ones(1, np.float32))),
                       ("process set", lambda: ps.barrier()),
                       ("request", lambda: pending.wait())):
        try:
            call()
            print(f"child: the {what} on the parent's context worked", flush=True)
            sys.exit(1)
        except disttrain.UsageError as e:
            if f"belongs to process {os.getppid()}" not in str(e):
                print(f"child: the {what} failed with {e}", flush=True)
                sys.exit(1)
    print("child exits", flush=True)
    sys.exit(0)


def wait_child(pid):
    deadline = time.monotonic() + CHILD_LIMIT_S
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise SystemExit(f"the forked child had not exited after {CHILD_LIMIT_S} s; "
                             f"killed it (its exit hung on the parent's context)")
        time.sleep(0.01)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"the forked child failed (exit {os.waitstatus_to_exitcode(status)})")


disttrain.init()
r, n = disttrain.rank(), disttrain.size()
ps = disttrain.add_process_set(list(range(n)))
pending = disttrain.allreduce_async(np.full(8, r + 1, np.float32), op="sum", name="pending")
sys.stdout.flush()
pid = os.fork()
if pid == 0:
    child()
wait_child(pid)

np.testing.assert_array_equal(pending.wait(), np.full(8, n * (n + 1) / 2, np.float32))
for it in range(200):
    x = np.full(4096, float(r + 1), np.float32)
    np.testing.assert_array_equal(disttrain.allreduce(x, op="sum", name="loop"),
                                  np.full(4096, n * (n + 1) / 2, np.float32))
np.testing.assert_array_equal(ps.allreduce(np.ones(3, np.float32), op="sum"),
                              np.full(3, n, np.float32))
disttrain.shutdown()
print("OK", flush=True)
