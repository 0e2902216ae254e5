# SPDX-License-Identifier: Apache-2.0
"""The ucx transport in real jobs on one host: a SIGKILLed rank fails every survivor
promptly with DT_ERR_PEER_LOST, and ranks that disagree on a large count return from
the call with an error; in neither case may UCX abort a process. Shared memory off (UCX carries every
byte, over its own shared-memory transports) and on (core/shm carries the collectives,
UCX the negotiation and what crosses hosts).

Skipped when the ucx plugin was not built. Every job has a timeout.
"""
import re

import pytest

from conftest import BUILD, build_path, run

UCX_DIR = BUILD / "plugins" / "transport" / "ucx"

pytestmark = pytest.mark.skipif(not (UCX_DIR / "libdt-transport-ucx.so").exists(),
                                reason=f"ucx transport not built ({UCX_DIR})")

# What UCX prints when it aborts or catches a fatal signal (ucs_handle_error).
CRASH = re.compile(r"backtrace|Caught signal|signal (6|11)\b|core dumped")


def ucx_env(shm, ordered):
    # A generous timeout: only the transport's own detection can be fast enough.
    return {"DISTTRAIN_PLUGIN_PATH": str(UCX_DIR), "DISTTRAIN_TRANSPORT": "ucx",
            "DISTTRAIN_SHM": shm, "DISTTRAIN_ORDERED": ordered, "DISTTRAIN_TIMEOUT": "60"}


def rank_lines(output, pattern):
    """{rank: line} for the lines "[r] ..." that match pattern."""
    found = {}
    for line in output.splitlines():
        m = re.match(r"\[(\d+)\] (.*)", line)
        if m and re.search(pattern, m.group(2)):
            found[int(m.group(1))] = m.group(2)
    return found


@pytest.mark.parametrize("ordered", ["0", "1"])
@pytest.mark.parametrize("shm", ["0", "1"])
def test_sigkill_of_a_local_rank_fails_every_survivor_promptly(disttrainrun, shm, ordered):
    """4 ranks in an allreduce loop; one SIGKILLs itself. Every survivor must report
    DT_ERR_PEER_LOST within 5 s of its loop's start (the kill comes within milliseconds of
    it), and exit by itself: a survivor that hung would be killed by the launcher after
    its 10 s grace and print nothing; one that UCX aborted would print a backtrace."""
    worker = build_path("tests", "integration", "dt_engine_worker")
    for trial in range(4):
        victim = (trial + int(shm) + 2 * int(ordered)) % 4
        kill_at = 5 + (trial * 7) % 20
        r = run([disttrainrun, "-np", "4", "--grace", "10", worker, "fault", victim, kill_at],
                env=ucx_env(shm, ordered), timeout=60)
        out = r.stdout + r.stderr
        where = f"trial {trial} (rank {victim} killed at iteration {kill_at}):\n{out}"
        assert f"rank {victim} " in r.stderr and "signal 9" in r.stderr, where
        failed = rank_lines(r.stdout, "failed after")
        assert set(failed) == {0, 1, 2, 3} - {victim}, where
        for line in failed.values():
            assert "DT_ERR_PEER_LOST" in line, where
            seconds = float(re.search(r"iterations \(([0-9.]+) s\b", line).group(1))
            assert seconds < 5, where
        assert not CRASH.search(out), where


@pytest.mark.parametrize("np", [2, 4])
def test_large_count_mismatch_in_ordered_mode_fails_without_abort(disttrainrun, np):
    """Ranks pass 4, 8, 12, 16 MiB to one allreduce. Ordered mode trusts the counts, so
    a rank whose own receives all fit may even return DT_OK; but every rank must return
    from the call (none dies inside UCX: the old endpoints aborted on a failed read of a
    peer's freed buffer), the others with an error, and the job must end."""
    worker = build_path("tests", "plugins", "ucx", "ucx_mismatch_worker")
    for trial in range(3):
        r = run([disttrainrun, "-np", str(np), "--grace", "10", worker],
                env=ucx_env("0", "1"), timeout=60)
        out = r.stdout + r.stderr
        where = f"trial {trial}:\n{out}"
        returned = rank_lines(r.stdout, r"^mismatch( succeeded|: DT_ERR_)")
        assert set(returned) == set(range(np)), where
        assert any("DT_ERR_" in line for line in returned.values()), where
        assert not CRASH.search(out) and "killed by signal" not in out, where
