# SPDX-License-Identifier: Apache-2.0
"""The collective engine across processes: negotiation, fusion, mismatches, stalls,
failures, join, groups, the timeline and memory. Each job has a hard timeout."""
import json
import re
import time

import pytest

from conftest import BUILD, build_path, clean_env, run


@pytest.fixture(scope="module")
def worker():
    return build_path("tests", "integration", "dt_engine_worker")


def job(disttrainrun, worker, np, *args, env=None, timeout=120, launcher_args=()):
    return run([disttrainrun, "-np", str(np), *launcher_args, worker, *args],
               env=env, timeout=timeout)


def rank_lines(output, pattern):
    """{rank: line} for lines "[r] ..." that match pattern."""
    found = {}
    for line in output.splitlines():
        m = re.match(r"\[(\d+)\] (.*)", line)
        if m and re.search(pattern, m.group(2)):
            found[int(m.group(1))] = m.group(2)
    return found


@pytest.mark.parametrize("np", [2, 3, 4])
def test_submission_order_may_differ_between_ranks(disttrainrun, worker, np):
    r = job(disttrainrun, worker, np, "order", "100")
    assert r.returncode == 0, r.stdout + r.stderr
    assert len(rank_lines(r.stdout, "order ok")) == np


def test_a_wait_starts_a_cycle_at_once(disttrainrun, worker):
    # With a 60 s tick, asynchronous operations complete only because each rank's wait
    # asks its engine to negotiate now: without that the job would take a whole tick.
    env = clean_env({"DISTTRAIN_CYCLE_TIME_MS": "60000"})
    start = time.monotonic()
    r = job(disttrainrun, worker, 2, "order", "20", env=env, timeout=180)
    elapsed = time.monotonic() - start
    assert r.returncode == 0, r.stdout + r.stderr
    assert len(rank_lines(r.stdout, "order ok")) == 2
    assert elapsed < 30, f"the job waited for the engine's tick ({elapsed:.1f} s)"


def test_an_idle_job_negotiates_less_often(disttrainrun, worker):
    # 1.5 s with nothing pending anywhere: each rank negotiates every quiet tick (64 ms),
    # about 25 empty cycles instead of 1,500 at the 1 ms tick (a forward pass's CPU,
    # given back; the tick doubling up to 8 ms, which ranks outside a group still use,
    # gave about 200).
    env = clean_env({"DISTTRAIN_LOG_LEVEL": "info"})
    r = job(disttrainrun, worker, 2, "idle", "1500", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert len(rank_lines(r.stdout, "idle ok")) == 2
    counts = [int(n) for n in re.findall(r"(\d+) empty negotiation cycles", r.stdout + r.stderr)]
    assert len(counts) == 2, r.stdout + r.stderr
    assert max(counts) < 100, counts


def test_a_rank_with_nothing_pending_negotiates_rarely_while_peers_wait(disttrainrun,
                                                                       worker):
    # Rank 0 waits 1.5 s in an allreduce for rank 1, which computes meanwhile. Only rank
    # 1's submission can make anything ready, so its engine negotiates every quiet tick
    # (<= 100 ms), not every 1 ms tick (~1,500 cycles of the straggler's own CPU); and its
    # allreduce still runs at once, since rank 0 already waits in the negotiation.
    env = clean_env({"DISTTRAIN_LOG_LEVEL": "info"})
    r = job(disttrainrun, worker, 2, "straggler", "1500", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    m = re.search(r"\[1\] straggler ok call_ms=([0-9.]+)", r.stdout)
    assert m, r.stdout + r.stderr
    print(f"the late rank's allreduce took {m.group(1)} ms")
    assert float(m.group(1)) < 100, r.stdout
    counts = {int(rk): int(n) for rk, n in re.findall(
        r"\[(\d)\] disttrain\[rank \d\] info engine: (\d+) empty negotiation cycles",
        r.stdout + r.stderr)}
    assert 1 in counts, r.stdout + r.stderr
    assert counts[1] < 150, counts


def test_the_first_submission_after_idling_starts_a_cycle_at_once(disttrainrun, worker):
    # A 500 ms tick backs off to 1, 2, 4 s while idle; the allreduce submitted 2.2 s after
    # the barrier would wait for the cycle at 3.5 s, were a submission in an idle job not
    # to wake the engine. Its completion is polled, so no wait wakes it either.
    env = clean_env({"DISTTRAIN_CYCLE_TIME_MS": "500"})
    r = job(disttrainrun, worker, 2, "idle", "2200", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    latencies = [float(m.group(1)) for m in
                 re.finditer(r"idle ok latency_ms=([0-9.]+)", r.stdout)]
    assert len(latencies) == 2, r.stdout + r.stderr
    assert max(latencies) < 500, latencies


def test_a_blocked_rank_joins_the_cycle_its_late_peer_starts(disttrainrun, worker):
    # Rank 1 calls each blocking allreduce 150 ms after rank 0, with a 100 ms tick. Rank
    # 1's engine negotiates at 100 ms (nothing of its own yet), then rank 0's engine would
    # sleep until 200 ms and rank 1's call, woken at 150 ms, would wait for it: ~50 ms
    # late. With every rank on this host the negotiation runs in shared memory, and a
    # blocked rank's engine joins the cycle its peer starts as soon as the peer starts it.
    env = clean_env({"DISTTRAIN_CYCLE_TIME_MS": "100"})
    r = job(disttrainrun, worker, 2, "late", "6", "150", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    m = re.search(r"late ok excess_ms=(-?[0-9.]+)", r.stdout)
    assert m, r.stdout + r.stderr
    assert float(m.group(1)) < 25, f"rank 0 waited {m.group(1)} ms past rank 1's call"


@pytest.mark.parametrize("threshold", [None, "0", "16"],
                         ids=["fused", "unfused", "threshold-below-one-tensor"])
def test_fusion_gives_the_same_results(disttrainrun, worker, threshold):
    env = {} if threshold is None else {"DISTTRAIN_FUSION_THRESHOLD": threshold}
    r = job(disttrainrun, worker, 2, "fusion", "3", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert len(rank_lines(r.stdout, "fusion ok steps=3")) == 2


@pytest.mark.parametrize("field,expect", [
    ("count", "ranks disagree on element count: rank 0 16, rank 1 32"),
    ("dtype", "ranks disagree on dtype: rank 0 float32, rank 1 float64"),
    ("op", "ranks disagree on reduce op: rank 0 sum, rank 1 max"),
    ("root", "ranks disagree on root: rank 0 0, rank 1 1"),
])
def test_mismatch_fails_on_every_rank_naming_field_and_values(disttrainrun, worker, field,
                                                              expect):
    r = job(disttrainrun, worker, 2, "mismatch", field)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = rank_lines(r.stdout, "DT_ERR_MISMATCH")
    assert set(lines) == {0, 1}
    for line in lines.values():
        assert "'weights'" in line and expect in line
    assert len(rank_lines(r.stdout, "after ok")) == 2


def test_a_rank_late_to_a_mismatch_fails_with_the_others(disttrainrun, worker):
    """Ranks 1 and 2 disagree on "step" while rank 0 has not submitted it yet: every rank
    fails with the mismatch once rank 0 submits (not rank 0 alone at the time-out), and
    the next rounds of the same name pair up round by round."""
    env = clean_env({"DISTTRAIN_ORDERED": "0", "DISTTRAIN_TIMEOUT": "20"})
    r = job(disttrainrun, worker, 3, "late_mismatch", env=env)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    first = rank_lines(r.stdout, "^round 0: ")
    assert set(first) == {0, 1, 2}, out
    for line in first.values():
        assert "DT_ERR_MISMATCH" in line, out
        assert "ranks disagree on element count" in line, out
        assert float(re.search(r"after ([0-9.]+) s", line).group(1)) < 5, out
    for rnd in (1, 2):
        lines = rank_lines(r.stdout, f"^round {rnd}: ")
        assert set(lines) == {0, 1, 2}, out
        for line in lines.values():
            m = re.search(r"DT_OK sum=(\S+) want=(\S+)", line)
            assert m and m.group(1) == m.group(2), out


def test_same_name_twice_in_flight(disttrainrun, worker):
    r = job(disttrainrun, worker, 2, "twice")
    assert r.returncode == 0, r.stdout + r.stderr
    for line in rank_lines(r.stdout, "second:").values():
        assert "'dup'" in line and "already in flight" in line


def test_name_only_some_ranks_submit_warns_then_times_out(disttrainrun, worker):
    start = time.monotonic()
    r = job(disttrainrun, worker, 3, "partial",
            env={"DISTTRAIN_TIMEOUT": "3", "DISTTRAIN_STALL_WARN_S": "1",
                 "PARTIAL_SLEEP_S": "5"})
    assert r.returncode == 0, r.stdout + r.stderr
    assert time.monotonic() - start < 30
    warn = rank_lines(r.stderr, "warn stall")
    assert 0 in warn and "'only.rank0' submitted by rank 0" in warn[0]
    assert "ranks 1, 2" in warn[0]
    err = rank_lines(r.stdout, "DT_ERR_TIMEOUT")
    assert "ranks 1, 2 did not submit it" in err[0]


def test_cached_name_only_some_ranks_submit_times_out(disttrainrun, worker):
    # The response cache holds the call back until it has waited half the time-out; the
    # time-out still counts from the submission (it used to start again at the
    # coordinator: 6 s here).
    start = time.monotonic()
    r = job(disttrainrun, worker, 2, "partial_cached",
            env={"DISTTRAIN_TIMEOUT": "4", "DISTTRAIN_STALL_WARN_S": "0",
                 "PARTIAL_SLEEP_S": "8"})
    assert r.returncode == 0, r.stdout + r.stderr
    assert time.monotonic() - start < 30
    err = rank_lines(r.stdout, "DT_ERR_TIMEOUT")
    assert "but rank 1 did not submit it" in err[0], err
    waited = float(re.search(r"\(after ([\d.]+) s\)", err[0]).group(1))
    assert 3.9 < waited < 5.2, err[0]


def test_join_keeps_reducing_with_identity(disttrainrun, worker):
    r = job(disttrainrun, worker, 2, "join")
    assert r.returncode == 0, r.stdout + r.stderr
    # Rank 1 has 5 batches, rank 0 has 3: the last two sum only rank 1's 1 and average
    # over the one rank still reducing.
    assert "[1] batch 2 sum=2 avg=1.5" in r.stdout
    assert "[1] batch 3 sum=1 avg=2" in r.stdout
    assert "[1] batch 4 sum=1 avg=2" in r.stdout
    assert "[0] joined last=1" in r.stdout and "[1] joined last=1" in r.stdout


def test_join_on_device_memory(disttrainrun, worker):
    """The joined rank takes part with host memory it makes up while the other stages
    device memory of the fake device (which the CPU cannot touch): same results. (Join
    needs negotiation, so not ordered mode.)"""
    fake = BUILD / "tests" / "plugins" / "fakedevice"
    if not (fake / "libdt-memory-fakedevice.so").exists():
        pytest.skip("the fake device was not built")
    env = clean_env({"DISTTRAIN_MEMORY": "fakedevice",
                     "DISTTRAIN_FAKE_DEVICE_DELAY_US": "100",
                     "DISTTRAIN_PLUGIN_PATH": f"{BUILD / 'plugins/transport/tcp'}:{fake}"})
    r = job(disttrainrun, worker, 2, "join_device", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[1] batch 2 sum=2 sum2=4 avg=1.5" in r.stdout
    assert "[1] batch 3 sum=1 sum2=2 avg=2" in r.stdout
    assert "[1] batch 4 sum=1 sum2=2 avg=2" in r.stdout
    assert "[0] joined last=1" in r.stdout and "[1] joined last=1" in r.stdout


def fake_device_env(extra=None):
    fake = BUILD / "tests" / "plugins" / "fakedevice"
    if not (fake / "libdt-memory-fakedevice.so").exists():
        pytest.skip("the fake device was not built")
    return clean_env({"DISTTRAIN_MEMORY": "fakedevice",
                      "DISTTRAIN_PLUGIN_PATH": f"{BUILD / 'plugins/transport/tcp'}:{fake}",
                      **(extra or {})})


@pytest.mark.parametrize("ordered", ["0", "1"])
def test_a_memory_type_the_pointer_contradicts_fails_that_call_alone(disttrainrun, worker,
                                                                     ordered):
    """Rank 0 calls fake-device memory host memory (a CPU read of it would kill the
    process), rank 1 calls host memory device memory (the provider's copies would fail in
    the engine): each call is refused at once, and both ranks' next calls run."""
    env = fake_device_env({"DISTTRAIN_ORDERED": ordered, "DISTTRAIN_TIMEOUT": "20"})
    r = job(disttrainrun, worker, 2, "wrong_memory", env=env, timeout=60)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    wrong = rank_lines(r.stdout, "wrong memory: ")
    assert "DT_ERR_INVALID_ARGUMENT" in wrong[0] and "is device memory (device 0) to the " \
        "fakedevice memory provider" in wrong[0], out
    assert "DT_ERR_INVALID_ARGUMENT" in wrong[1] and "is host memory to the fakedevice " \
        "memory provider" in wrong[1], out
    assert len(rank_lines(r.stdout, "after: host sum=3 device sum=3")) == 2, out
    assert "left the job" not in out, out


@pytest.mark.parametrize("ordered", ["0", "1"])
def test_a_rank_that_hits_an_error_of_its_own_is_said_to_have_stopped(disttrainrun, worker,
                                                                      ordered):
    """Rank 1's device copy fails (its buffer runs past the end of its fake device), which
    breaks its context while the process lives on: rank 0 hears that rank 1 hit an error
    and stopped, and why, not that it left the job."""
    env = fake_device_env({"DISTTRAIN_ORDERED": ordered, "DISTTRAIN_TIMEOUT": "20",
                           "DISTTRAIN_FAKE_DEVICE_BYTES": str(1 << 20)})
    r = job(disttrainrun, worker, 2, "device_error", env=env, timeout=60)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    failed = rank_lines(r.stdout, "device error: ")
    assert "copy_async" in failed[1], out
    assert "DT_ERR_PEER_LOST" in failed[0], out
    assert "rank 1 hit an error and stopped: " in failed[0], out
    assert "copy_async" in failed[0], out
    assert "left the job" not in out, out


@pytest.mark.parametrize("ordered", ["0", "1"])
def test_groups_reduce_among_members_only(disttrainrun, worker, ordered):
    env = clean_env({"DISTTRAIN_ORDERED": ordered, "DISTTRAIN_TIMEOUT": "20"})
    r = job(disttrainrun, worker, 4, "groups", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[0] group rank=0 size=2 sum=2 world=6" in r.stdout
    assert "[2] group rank=1 size=2 sum=2 world=6" in r.stdout
    assert "[1] group rank=0 size=2 sum=4 world=6" in r.stdout
    assert "[3] group rank=1 size=2 sum=4 world=6" in r.stdout
    assert len(rank_lines(r.stdout, "mismatched lists: DT_ERR_MISMATCH")) == 4
    # A list only rank 1 refuses fails there, and at once on the others too.
    refused = rank_lines(r.stdout, "^refused list: ")
    assert set(refused) == {0, 1, 2, 3}, r.stdout
    assert "DT_ERR_INVALID_ARGUMENT" in refused[1] and "listed twice" in refused[1]
    for rank in (0, 2, 3):
        assert "DT_ERR_MISMATCH" in refused[rank], r.stdout
    for line in refused.values():
        assert float(re.search(r"after ([0-9.]+) s", line).group(1)) < 5, r.stdout
    assert len(rank_lines(r.stdout, "group after refused list ok")) == 4


@pytest.mark.parametrize("ordered", ["0", "1"])
def test_nested_groups_and_unnamed_calls_agree(disttrainrun, worker, ordered):
    """Group ids and the names of unnamed calls are counted per parent and per group,
    so ranks that took no part in a nested creation, or made other unnamed calls in
    their own group, still agree with the rest."""
    env = clean_env({"DISTTRAIN_ORDERED": ordered, "DISTTRAIN_TIMEOUT": "20"})
    r = job(disttrainrun, worker, 4, "nested_groups", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[0] nested b=2 c=0 world=6" in r.stdout
    assert "[1] nested b=2 c=0 world=6" in r.stdout
    assert "[2] nested b=0 c=20 world=6" in r.stdout
    assert "[3] nested b=0 c=20 world=6" in r.stdout


def test_abort_fails_peers_promptly(disttrainrun, worker):
    r = job(disttrainrun, worker, 2, "abort", timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[1] after abort: DT_ERR_ABORTED" in r.stdout
    assert "rank 1 aborted its context" in rank_lines(r.stdout, "waiting rank")[0]
    assert "[0] context status: DT_ERR_PEER_LOST" in r.stdout


def test_a_rank_that_leaves_fails_its_waiting_peer_promptly(disttrainrun, worker):
    """Rank 1 destroys its context (and stays alive) while rank 0 waits in a collective:
    rank 0 fails at once from rank 1's notice, and rank 1's destroy waits for rank 0 to
    leave rather than closing the connections under it."""
    r = job(disttrainrun, worker, 2, "leave", timeout=60)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    waiting = rank_lines(r.stdout, "waiting rank")[0]
    assert "DT_ERR_PEER_LOST" in waiting and "rank 1 left the job" in waiting, out
    waited = float(re.search(r"after ([0-9.]+) s", waiting).group(1))
    assert waited < 4, f"rank 0 learned of the departure only after {waited} s:\n{out}"
    left = rank_lines(r.stdout, "left: ")[1]
    assert left.startswith("left: DT_OK"), out
    assert float(re.search(r"after ([0-9.]+) s", left).group(1)) < 4.5, out


@pytest.mark.parametrize("ordered", ["0", "1"])
def test_sigkill_of_a_rank_fails_every_survivor_promptly(disttrainrun, worker, ordered):
    """20 trials, 4 ranks: a rank SIGKILLs itself mid-loop; no trial may hang. Ordered mode
    too (the trainer's default): there the survivors learn of it in the collective itself."""
    env = clean_env({"DISTTRAIN_ORDERED": ordered})
    for trial in range(20):
        victim = trial % 4
        kill_at = 5 + (trial * 7) % 30
        start = time.monotonic()
        r = job(disttrainrun, worker, 4, "fault", str(victim), str(kill_at),
                launcher_args=("--grace", "10"), timeout=60, env=env)
        elapsed = time.monotonic() - start
        out = r.stdout + r.stderr
        assert r.returncode != 0, out
        assert f"disttrainrun: rank {victim} " in r.stderr and "signal 9" in r.stderr, out
        failed = rank_lines(r.stdout, "failed after")
        survivors = {0, 1, 2, 3} - {victim}
        assert set(failed) == survivors, f"trial {trial}:\n{out}"
        for rank, line in failed.items():
            assert "DT_ERR_PEER_LOST" in line, line
            assert re.search(rf"ranks? ([0-9, ]*\b)?{victim}\b", line.split("DT_ERR_PEER_LOST")[1]), line
        assert elapsed < 20, f"trial {trial} took {elapsed:.1f} s"


@pytest.mark.parametrize("shm", ["1", "0"])
def test_timeline_is_valid_json_with_every_phase(disttrainrun, worker, tmp_path, shm):
    path = tmp_path / "timeline.json"
    r = job(disttrainrun, worker, 2, "fusion", "1",
            env={"DISTTRAIN_TIMELINE": str(path), "DISTTRAIN_SHM": shm})
    assert r.returncode == 0, r.stdout + r.stderr
    events = json.loads(path.read_text())
    rows = {e["tid"]: e["args"]["name"] for e in events
            if e.get("ph") == "M" and e["name"] == "thread_name"}
    assert "grad.0" in rows.values() and "grad.999" in rows.values()
    phases = {}
    for e in events:
        if e.get("ph") == "X" and e.get("tid") in rows:
            phases.setdefault(e["tid"], set()).add(e["name"])
    # Which operations share a fused transfer depends on when each rank's cycles catch
    # them (the first may well run alone), so any fused operation will do.
    fused = [p for p in phases.values() if "MEMCPY_IN_FUSION_BUFFER" in p]
    assert fused, phases
    assert {"NEGOTIATE", "QUEUE", "MEMCPY_IN_FUSION_BUFFER", "allreduce",
            "MEMCPY_OUT_FUSION_BUFFER"} <= fused[0]
    fusions = [e for e in events if e.get("name") == "FUSION"]
    assert fusions and max(f["args"]["tensors"] for f in fusions) > 1
    # The router names the path that ran each collective: both ranks share this host.
    paths = {e["args"]["path"] for e in events
             if e.get("ph") == "X" and e["name"] == "allreduce"}
    if shm == "1":
        assert paths == {"shm_local"}, paths
    else:
        assert paths and paths <= {"recursive_doubling", "halving_doubling", "ring"}, paths


def test_ordered_mode_writes_each_collective_to_the_timeline(disttrainrun, worker, tmp_path):
    path = tmp_path / "timeline.json"
    r = job(disttrainrun, worker, 2, "fusion", "1",
            env=clean_env({"DISTTRAIN_TIMELINE": str(path), "DISTTRAIN_ORDERED": "1"}))
    assert r.returncode == 0, r.stdout + r.stderr
    events = json.loads(path.read_text())
    ran = [e for e in events if e.get("ph") == "X" and e["name"] == "allreduce"]
    assert len(ran) >= 1000, len(ran)  # one per call: nothing is fused in ordered mode
    assert {e["args"]["path"] for e in ran} == {"shm_local"}
    assert all(e["args"]["bytes"] > 0 for e in ran)


def test_debug_log_names_each_collective_path(disttrainrun, worker):
    r = job(disttrainrun, worker, 2, "fusion", "1",
            env={"DISTTRAIN_LOG_LEVEL": "debug", "DISTTRAIN_SHM": "0",
                 "DISTTRAIN_ALGORITHM": "ring"})
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(r"routing: allreduce '[^']+' \(\d+ B, 2 ranks, host memory\): ring",
                     r.stderr), r.stderr[-3000:]


def test_timeline_survives_a_killed_rank(disttrainrun, worker, tmp_path):
    path = tmp_path / "killed.json"
    r = job(disttrainrun, worker, 2, "fault", "0", "40",
            env={"DISTTRAIN_TIMELINE": str(path)}, launcher_args=("--grace", "10"))
    assert r.returncode != 0
    events = json.loads(path.read_text())  # rank 0 was SIGKILLed while writing
    assert any(e.get("name") == "allreduce" for e in events)


def test_the_files_of_a_job_share_one_time_axis(disttrainrun, worker, tmp_path):
    """Each process writes its own file; times are microseconds since the Unix epoch, so
    the files concatenated are one trace of the job, a row per rank."""
    before = time.time() * 1e6
    r = job(disttrainrun, worker, 2, "fusion", "1",
            env={"DISTTRAIN_TIMELINE": str(tmp_path / "t.{rank}.json")})
    after = time.time() * 1e6
    assert r.returncode == 0, r.stdout + r.stderr
    merged = [e for rank in (0, 1) for e in json.loads((tmp_path / f"t.{rank}.json").read_text())]
    names = {e["pid"]: e["args"]["name"] for e in merged if e["name"] == "process_name"}
    assert names == {0: "rank 0", 1: "rank 1"}, names
    timed = [e for e in merged if "ts" in e]
    assert timed and all(before <= e["ts"] <= after for e in timed), (before, after)
    # A collective runs on both ranks at once (neither can finish it before the other
    # has started it): in the merged trace, each one's two events overlap.
    rows = {(e["pid"], e["tid"]): e["args"]["name"] for e in merged
            if e["name"] == "thread_name"}
    spans = {}
    for e in merged:
        if e.get("ph") == "X" and e["name"] == "allreduce":
            spans.setdefault(rows[(e["pid"], e["tid"])], {})[e["pid"]] = (e["ts"],
                                                                         e["ts"] + e["dur"])
    pairs = [s for s in spans.values() if len(s) == 2]
    apart = [s for s in pairs if max(s[0][0], s[1][0]) > min(s[0][1], s[1][1]) + 2000]
    assert pairs and not apart, f"{len(apart)} of {len(pairs)} apart, e.g. {apart[:3]}"


def test_no_memory_growth_over_10000_steps(disttrainrun, worker):
    r = job(disttrainrun, worker, 2, "leak", "10000", timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    for line in rank_lines(r.stdout, "leak rss").values():
        warm = int(re.search(r"rss_warm_kib=(\d+)", line).group(1))
        end = int(re.search(r"rss_end_kib=(\d+)", line).group(1))
        print(f"resident memory: {warm} KiB after 1,000 steps, {end} KiB after 10,000")
        assert end - warm < 2048, line
