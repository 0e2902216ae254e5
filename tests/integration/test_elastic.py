# SPDX-License-Identifier: Apache-2.0
"""Elastic jobs (disttrainrun --elastic): a rank killed with SIGKILL mid-job is an error on
the survivors, who re-form without it (dt_context_reform) and finish every step on the
smaller job; rank 0's death loses nothing since disttrainrun serves the store; with
--max-restarts a replacement joins when the ranks next poll for joiners; --min-np ends
the job when too few ranks are left; with --host-discovery-script the job grows onto new
slots; a rank killed during a re-form leaves the others re-formed or failed, never hung;
a host cut off from the network (its own namespace) is lost like a dead rank; each
process's timeline keeps its whole history in a file of its own. The recovery benchmark
has a smoke run here. Each job has a hard timeout."""
import json
import os
import pathlib
import re
import subprocess
import sys
import time

import pytest

from conftest import REPO, build_path, clean_env, run

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "netns"))
from ssh_hosts import namespace_hosts  # noqa: E402

STEPS = 12


@pytest.fixture(scope="module")
def worker():
    return build_path("tests", "integration", "dt_elastic_worker")


def elastic_job(disttrainrun, worker, np, victims, ordered="0", launcher_args=()):
    env = {"DISTTRAIN_ORDERED": ordered, "DISTTRAIN_TIMEOUT": "30"}
    return run([disttrainrun, "-np", str(np), "--elastic", *launcher_args, worker, str(STEPS),
                *[str(v) for v in victims]], env=env, timeout=90)


def lines(output, pattern):
    return [m for m in (re.match(r"\[(\d+)\] (.*)", l) for l in output.splitlines())
            if m and re.search(pattern, m.group(2))]


@pytest.mark.parametrize("ordered", ["0", "1"])
@pytest.mark.parametrize("np,victims", [(3, [2]), (3, [0]), (4, [1, 3])])
def test_survivors_reform_and_finish_every_step(disttrainrun, worker, np, victims, ordered):
    r = elastic_job(disttrainrun, worker, np, victims, ordered)
    assert r.returncode == 0, r.stdout + r.stderr
    survivors = [rank for rank in range(np) if rank not in victims]
    size = len(survivors)
    done = {int(m.group(1)): m.group(2) for m in lines(r.stdout, "^done ")}
    assert sorted(done) == survivors, r.stdout + r.stderr
    # New ranks follow the old order: the survivors become 0..size-1.
    for new_rank, old_rank in enumerate(survivors):
        assert done[old_rank] == f"done rank={new_rank} size={size} steps={STEPS}", r.stdout
    reformed = lines(r.stdout, r"^reformed ")
    assert len(reformed) == size, r.stdout
    for m in reformed:
        took = float(re.search(r"took_ms=([\d.]+)", m.group(2)).group(1))
        # One death is seen by the survivors, so no settle time (1 s) is waited. Of two at
        # once, the second may not have been seen yet: then the settle time passes.
        assert took < (900 if len(victims) == 1 else 2000), m.group(0)
    for v in victims:
        assert f"rank {v} (host localhost" in r.stderr and "(--elastic)" in r.stderr, r.stderr


@pytest.mark.parametrize("ordered", ["0", "1"])
def test_a_replacement_joins_and_the_job_ends_on_every_rank(disttrainrun, worker, ordered):
    r = run([disttrainrun, "-np", "3", "--elastic", "--max-restarts", "1", worker, "60", "1"],
            env={"DISTTRAIN_ORDERED": ordered, "DISTTRAIN_TIMEOUT": "30"}, timeout=90)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "started a replacement (pid" in r.stderr and "restart 1 of 1" in r.stderr
    done = sorted(m.group(2) for m in lines(r.stdout, "^done "))
    # Old ranks 0 and 2 and the replacement (tagged [1]) end as ranks 0-2 of 3.
    assert done == [f"done rank={k} size=3 steps=60" for k in range(3)], r.stdout + r.stderr
    # The replacement comes in at the re-form after the loss when it has registered by
    # then, else at a later step boundary (grew).
    joined = lines(r.stdout, r"^(grew|reformed) step=\d+ .*size=3")
    assert len(joined) == 2, r.stdout


def test_each_process_keeps_its_whole_timeline_in_a_file_of_its_own(disttrainrun, worker,
                                                                     tmp_path):
    # Rank 0 dies at step 3 and a replacement joins. The survivors become ranks 0 and 1,
    # and the replacement starts numbered 0: none of them may write the dead rank's file,
    # and the survivors' files must keep what came before the re-form.
    r = run([disttrainrun, "-np", "3", "--elastic", "--max-restarts", "1", worker, "60", "0"],
            env={"DISTTRAIN_TIMEOUT": "30",
                 "DISTTRAIN_TIMELINE": str(tmp_path / "tl.{rank}.json")}, timeout=90)
    assert r.returncode == 0, r.stdout + r.stderr
    # The replacement's file is named by its launch id, the first after the job's ranks.
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == [f"tl.{n}.json" for n in range(4)], names
    traces = {n: json.loads((tmp_path / f"tl.{n}.json").read_text()) for n in range(4)}

    def marks(n, what):
        return [e for e in traces[n] if e["ph"] == "i" and e["name"] == what]

    def steps(n):  # the worker's allreduces ("step"), each a row of its own
        row = next(e["tid"] for e in traces[n]
                   if e["name"] == "thread_name" and e["args"]["name"] == "step")
        return [e for e in traces[n] if e["ph"] == "X" and e["tid"] == row
                and e["name"] == "allreduce"]

    for n, trace in traces.items():
        assert {e["pid"] for e in trace} == {n}, trace
    assert len(steps(0)) == 3 and not marks(0, "REFORM"), traces[0]  # steps 0-2, then died
    for old_rank, new_rank in ((1, 0), (2, 1)):
        reforms = marks(old_rank, "REFORM")
        assert reforms and reforms[0]["args"]["rank"] == new_rank, traces[old_rank]
        assert reforms[-1]["args"]["size"] == 3, reforms
        before = [e for e in steps(old_rank) if e["ts"] < reforms[0]["ts"]]
        after = [e for e in steps(old_rank) if e["ts"] > reforms[-1]["ts"]]
        assert len(before) >= 3 and after, traces[old_rank]
    joins = marks(3, "JOIN")
    assert len(joins) == 1, traces[3]
    assert (joins[0]["args"]["rank"], joins[0]["args"]["size"]) == (2, 3), joins
    assert steps(3), traces[3]


def test_below_min_np_the_job_stops(disttrainrun, worker):
    r = elastic_job(disttrainrun, worker, 3, [1], launcher_args=("--min-np", "3"))
    assert r.returncode == 128 + 9, r.stdout + r.stderr
    assert "rank 1 (host localhost" in r.stderr and "stopped the other ranks" in r.stderr
    assert not lines(r.stdout, "^done "), r.stdout


def test_a_reform_short_of_the_minimum_fails_every_survivor_cleanly(worker):
    # DISTTRAIN_MIN_SIZE above what is left, set by each rank itself (disttrainrun sets it
    # from --min-np, whose own stop rule would end the job first): the survivors' re-form
    # times out, and the context then refuses every call.
    r = run([build_path("core", "launch", "disttrainrun"), "-np", "3", "--elastic", "--",
             "sh", "-c", f'DISTTRAIN_MIN_SIZE=3 exec "{worker}" {STEPS} 2'],
            env={"DISTTRAIN_TIMEOUT": "2"}, timeout=60)
    assert r.returncode != 0
    errors = lines(r.stderr, r"error: dt_context_reform: DT_ERR_TIMEOUT: .*it needs at "
                             r"least 3 \(DISTTRAIN_MIN_SIZE\)")
    assert len(errors) == 2, r.stderr
    after = lines(r.stderr, r"after a failed re-form: DT_ERR_TIMEOUT: .*could not re-form")
    assert len(after) == 2, r.stderr


def test_reform_outside_an_elastic_job_is_refused(disttrainrun, worker):
    r = run([disttrainrun, "-np", "2", worker, "reform"], timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert len(lines(r.stdout, "reform: DT_ERR_INVALID_STATE: .*DISTTRAIN_ELASTIC=1")) == 2


def test_elastic_needs_a_store_that_outlives_rank_0(worker):
    env = {"DISTTRAIN_ELASTIC": "1", "DISTTRAIN_RANK": "0", "DISTTRAIN_SIZE": "2",
           "DISTTRAIN_STORE_ADDR": "127.0.0.1:1", "DISTTRAIN_JOB_TOKEN": "x" * 32}
    r = run([worker, "reform"], env=env, timeout=60)
    assert r.returncode == 1
    assert "DISTTRAIN_ELASTIC=1 needs a rendezvous store that outlives every rank" in r.stderr


def test_min_np_needs_elastic(disttrainrun, worker):
    r = run([disttrainrun, "-np", "2", "--min-np", "2", worker, "reform"], timeout=30)
    assert r.returncode == 2
    assert "--min-np is for elastic jobs: add --elastic" in r.stderr


def discovery_script(tmp_path, body):
    script = tmp_path / "discover.sh"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(0o755)
    return script


def test_a_discovery_script_grows_the_job_from_2_to_4(disttrainrun, worker, tmp_path):
    # Before the job (the first run) 2 slots; from its second run on, a second later, 4.
    script = discovery_script(tmp_path, 'if [ -e "$0.ran" ]; then echo localhost:4\n'
                                        'else touch "$0.ran"; echo localhost:2; fi\n')
    r = run([disttrainrun, "-np", "2", "--elastic", "--max-np", "4",
             "--host-discovery-script", script, worker, STEPS, "-1"],
            env={"DISTTRAIN_TIMEOUT": "30", "DT_WORKER_UNTIL_SIZE": "4"}, timeout=90)
    assert r.returncode == 0, r.stdout + r.stderr
    for new_rank in (2, 3):
        assert re.search(rf"started rank {new_rank} on host localhost \(pid \d+\) to join "
                         r"the job: \d of --max-np 4 running", r.stderr), r.stderr
    assert "started rank 4" not in r.stderr, r.stderr  # never past --max-np
    # The first ranks let the new ones in at a step boundary and end in a job of 4.
    for first in ("0", "1"):
        grew = [m for m in lines(r.stdout, r"^grew ") if m.group(1) == first]
        assert grew and grew[-1].group(2).endswith("size=4"), r.stdout
    done = sorted(m.group(2) for m in lines(r.stdout, "^done "))
    assert len(done) == 4 and all("size=4" in d for d in done), r.stdout + r.stderr


def test_this_machine_under_another_name_keeps_its_slot_count(disttrainrun, worker, tmp_path):
    # The first ranks run on "localhost"; the script then names this machine by its host
    # name with 3 slots: one new rank, not 3 (--max-np 4 would allow 2 more).
    script = discovery_script(tmp_path, 'if [ -e "$0.ran" ]; then echo "$(hostname):3"\n'
                                        'else touch "$0.ran"; echo localhost:2; fi\n')
    r = run([disttrainrun, "-np", "2", "--elastic", "--max-np", "4",
             "--host-discovery-script", script, worker, STEPS, "-1"],
            env={"DISTTRAIN_TIMEOUT": "30", "DT_WORKER_UNTIL_SIZE": "3"}, timeout=90)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "started rank 2 on host" in r.stderr and "started rank 3" not in r.stderr, r.stderr
    done = sorted(m.group(2) for m in lines(r.stdout, "^done "))
    assert len(done) == 3 and all("size=3" in d for d in done), r.stdout + r.stderr


def test_a_new_rank_that_cannot_start_does_not_stop_the_job(disttrainrun, worker, tmp_path):
    # The script adds a remote host, but there is no ssh to reach it (PATH has none): the
    # job goes on with its ranks, and that host gets no more tries.
    script = discovery_script(tmp_path, 'if [ -e "$0.ran" ]; then printf "localhost:2\\n'
                                        'far.invalid:1\\n"; else : > "$0.ran"; '
                                        'echo localhost:2; fi\n')
    r = run([disttrainrun, "-np", "2", "--elastic", "--max-np", "3",
             "--host-discovery-script", script, worker, "250", "-1"],
            env={"DISTTRAIN_TIMEOUT": "30", "PATH": str(tmp_path / "nothing")}, timeout=90)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "rank 2 on host far.invalid could not start: cannot run 'ssh'" in r.stderr, r.stderr
    assert "no more new ranks on host far.invalid" in r.stderr, r.stderr
    assert "rank 3" not in r.stderr, r.stderr
    assert len(lines(r.stdout, "^done rank=.* size=2 ")) == 2, r.stdout + r.stderr


def test_ranks_on_a_host_that_leaves_the_list_are_left_alone(disttrainrun, worker, tmp_path):
    # From its second run on the script lists no host at all: the running ranks go on
    # (disttrainrun kills none) and the job ends well.
    script = discovery_script(tmp_path, 'echo run >> "$0.runs"\n'
                                        'if [ -e "$0.ran" ]; then exit 0; fi\n'
                                        ': > "$0.ran"; echo localhost:2\n')
    r = run([disttrainrun, "-np", "2", "--elastic", "--max-np", "2",
             "--host-discovery-script", script, worker, "250", "-1"],
            env={"DISTTRAIN_TIMEOUT": "30"}, timeout=90)
    assert r.returncode == 0, r.stdout + r.stderr
    assert len(lines(r.stdout, "^done rank=.* size=2 steps=250")) == 2, r.stdout + r.stderr
    runs = (tmp_path / "discover.sh.runs").read_text().count("run")
    assert runs >= 2, f"the script ran {runs} time(s): never during the job"


def test_a_discovery_script_that_fails_during_the_job_is_reported(disttrainrun, worker,
                                                                   tmp_path):
    script = discovery_script(tmp_path, 'if [ -e "$0.ran" ]; then echo "inventory down" >&2; '
                                        'exit 3; fi\ntouch "$0.ran"; echo localhost:2\n')
    r = run([disttrainrun, "-np", "2", "--elastic", "--max-np", "3",
             "--host-discovery-script", script, worker, "250", "-1"],
            env={"DISTTRAIN_TIMEOUT": "30"}, timeout=90)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"--host-discovery-script {script} exited with code 3: inventory down; kept " \
           "the hosts it listed before" in r.stderr, r.stderr
    assert r.stderr.count("inventory down") == 1, r.stderr  # said once, not every second
    assert len(lines(r.stdout, "^done rank=.* size=2 ")) == 2, r.stdout


@pytest.mark.parametrize("args,message", [
    (["-np", "2", "--elastic", "--min-np", "2", "--max-np", "1"],
     "--max-np 1 is less than --min-np 2"),
    (["-np", "3", "--elastic", "--max-np", "2"], "-np 3 is more than --max-np 2"),
    (["-np", "2", "--max-np", "4"], "--max-np is for elastic jobs: add --elastic"),
    (["-np", "2", "--elastic", "--host-discovery-script", "/bin/true"],
     "--host-discovery-script needs --max-np B"),
    (["-np", "2", "--elastic", "--max-np", "3", "-H", "localhost:3",
      "--host-discovery-script", "/bin/true"], "drop -H and --hostfile"),
])
def test_bad_growth_options_are_refused(disttrainrun, worker, args, message):
    r = run([disttrainrun, *args, worker, STEPS, "-1"], timeout=30)
    assert r.returncode == 2, r.stdout + r.stderr
    assert message in r.stderr, r.stderr


def test_a_discovery_script_that_cannot_run_or_fails_is_refused(disttrainrun, worker,
                                                               tmp_path):
    plain = tmp_path / "not_executable.sh"
    plain.write_text("#!/bin/sh\necho localhost:2\n")
    r = run([disttrainrun, "-np", "2", "--elastic", "--max-np", "2",
             "--host-discovery-script", plain, worker, STEPS, "-1"], timeout=30)
    assert r.returncode == 2, r.stderr
    assert "--host-discovery-script: cannot run" in r.stderr and "chmod +x" in r.stderr, r.stderr

    failing = discovery_script(tmp_path, 'echo "no inventory for cluster x" >&2; exit 3\n')
    r = run([disttrainrun, "-np", "2", "--elastic", "--max-np", "2",
             "--host-discovery-script", failing, worker, STEPS, "-1"], timeout=30)
    assert r.returncode == 1, r.stderr
    assert f"--host-discovery-script {failing} exited with code 3: no inventory for " \
           "cluster x" in r.stderr, r.stderr

    slow = discovery_script(tmp_path, "sleep 30\n")
    started = time.monotonic()
    r = run([disttrainrun, "-np", "2", "--elastic", "--max-np", "2",
             "--host-discovery-script", slow, worker, STEPS, "-1"], timeout=30)
    assert r.returncode == 1 and "took more than 5 s and was killed" in r.stderr, r.stderr
    assert time.monotonic() - started < 15

    few = discovery_script(tmp_path, "echo localhost:1\n")
    r = run([disttrainrun, "-np", "2", "--elastic", "--max-np", "2",
             "--host-discovery-script", few, worker, STEPS, "-1"], timeout=30)
    assert r.returncode == 1, r.stderr
    assert "lists 1 slot(s) (localhost:1), fewer than the -np 2 ranks" in r.stderr, r.stderr


def test_a_kill_during_the_reform_never_hangs(disttrainrun, worker):
    # Rank 1 dies at step 3; rank 3 dies 20 ms into the re-form that follows. Rank 3 may
    # have been counted in by then (the others then fail to connect to it, within
    # DISTTRAIN_TIMEOUT, and say so) or not (they re-form without it): either way every
    # survivor ends by itself, in time, with an answer.
    limit = 60
    started = time.monotonic()
    r = run([disttrainrun, "-np", "4", "--elastic", worker, STEPS, "1"],
            env={"DISTTRAIN_TIMEOUT": "3", "DT_WORKER_DIE_IN_REFORM": "3"}, timeout=limit)
    assert time.monotonic() - started < limit
    assert "rank 1 (host localhost" in r.stderr and "rank 3 (host localhost" in r.stderr, \
        r.stderr
    for survivor in ("0", "2"):
        done = [m for m in lines(r.stdout, "^done ") if m.group(1) == survivor]
        failed = [m for m in lines(r.stderr, r"^error: dt_context_reform")
                  if m.group(1) == survivor]
        assert done or failed, f"rank {survivor} gave no answer\n{r.stdout}{r.stderr}"
        if done:
            assert done[0].group(2).endswith(f"size=2 steps={STEPS}"), r.stdout


@pytest.mark.parametrize("die_after_ms", [1, 5, 20])
def test_a_kill_during_the_reform_recovers_well_before_the_timeout(disttrainrun, worker,
                                                                    die_after_ms):
    # Rank 1 dies at step 3, rank 3 some ms into the re-form that follows: before it
    # arrived, after, or while the re-formed job connects. disttrainrun publishes both
    # deaths in its store, so the survivors neither wait for latecomers nor wait out
    # DISTTRAIN_TIMEOUT (30 s) for a member that died while they connected: the job ends
    # well within a bound that waiting the timeout cannot meet.
    started = time.monotonic()
    r = run([disttrainrun, "-np", "4", "--elastic", worker, STEPS, "1"],
            env={"DISTTRAIN_TIMEOUT": "30", "DT_WORKER_DIE_IN_REFORM": f"3:{die_after_ms}"},
            timeout=60)
    took = time.monotonic() - started
    assert r.returncode == 0, r.stdout + r.stderr
    done = {int(m.group(1)): m.group(2) for m in lines(r.stdout, "^done ")}
    assert done == {0: f"done rank=0 size=2 steps={STEPS}",
                    2: f"done rank=1 size=2 steps={STEPS}"}, r.stdout + r.stderr
    assert took < 15, f"took {took:.1f} s\n{r.stdout}{r.stderr}"


def test_a_slow_survivor_is_waited_for_not_left_out(disttrainrun, worker):
    # Rank 1 dies at step 3 while rank 2 spends a second before that step's allreduce (a
    # long data load). disttrainrun publishes the death and nobody saw rank 2 lost, so
    # rank 0's re-form waits for rank 2 (up to DISTTRAIN_TIMEOUT), not only for the
    # settle time (made short here): both end in a job of 2.
    r = run([disttrainrun, "-np", "3", "--elastic", worker, str(STEPS), "1"],
            env={"DISTTRAIN_TIMEOUT": "30", "DISTTRAIN_ELASTIC_SETTLE_MS": "100",
                 "DT_WORKER_SLOW_RANK": "2:1000"}, timeout=90)
    assert r.returncode == 0, r.stdout + r.stderr
    done = {int(m.group(1)): m.group(2) for m in lines(r.stdout, "^done ")}
    assert done == {0: f"done rank=0 size=2 steps={STEPS}",
                    2: f"done rank=1 size=2 steps={STEPS}"}, r.stdout + r.stderr


@pytest.mark.parametrize("die_after_ms", [2, 5])
def test_a_replacement_meets_again_when_a_member_dies_as_it_is_let_in(disttrainrun, worker,
                                                                     die_after_ms):
    # Rank 1 dies at step 3; its replacement waits past the re-form after the loss, so a
    # step boundary lets it in. Rank 2 dies some ms into that re-form: before it arrived,
    # or while the re-formed job connects, when every member meets again without it, the
    # replacement as much as rank 0. Either way the two end as a job of 2.
    r = run([disttrainrun, "-np", "3", "--elastic", "--max-restarts", "1", worker, str(STEPS),
             "1"],
            env={"DISTTRAIN_TIMEOUT": "30", "DT_WORKER_JOINER_WAITS_MS": "300",
                 "DT_WORKER_DIE_IN_GROW": f"2:{die_after_ms}"}, timeout=90)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "DT_ERR_PLUGIN_NOT_FOUND" not in r.stderr, r.stderr
    done = {int(m.group(1)): m.group(2) for m in lines(r.stdout, "^done ")}
    # Rank 0, and the replacement (tagged [1]) after it.
    assert sorted(done) == [0, 1], r.stdout + r.stderr
    for new_rank, tag in enumerate([0, 1]):
        assert done[tag].startswith(f"done rank={new_rank} size=2 "), r.stdout + r.stderr


def test_a_joiner_killed_while_waiting_is_no_longer_counted(disttrainrun, worker):
    # Rank 1 dies at step 3 and its replacement dies 300 ms after it starts, while it
    # waits: the ranks ask for joiners only from step 60 on (about 0.6 s later). Counted
    # as waiting, it would make the ranks re-form for it at every later step, each re-form
    # waiting in vain for it (the settle time, 1 s); its death notice ends that.
    steps = 90
    started = time.monotonic()
    r = run([disttrainrun, "-np", "3", "--elastic", "--max-restarts", "1", worker, str(steps),
             "1"],
            env={"DISTTRAIN_TIMEOUT": "30", "DT_WORKER_POLL_FROM_STEP": "60",
                 "DT_WORKER_JOINER_DIES_MS": "300"}, timeout=90)
    took = time.monotonic() - started
    assert r.returncode == 0, r.stdout + r.stderr
    assert "started a replacement (pid" in r.stderr, r.stderr
    assert lines(r.stdout, "^joining "), r.stdout + r.stderr
    if lines(r.stdout, r"^reformed .*size=3"):
        pytest.skip("the replacement registered before the re-form after the loss, which "
                    "let it in: it died as a member, not while waiting")
    assert re.search(r"rank 1 \(host localhost, pid \d+\) was killed by signal 9", r.stderr)
    assert not lines(r.stdout, "^grew "), r.stdout + r.stderr
    done = sorted(m.group(2) for m in lines(r.stdout, "^done "))
    assert done == [f"done rank={k} size=2 steps={steps}" for k in range(2)], r.stdout
    assert took < 15, f"took {took:.1f} s\n{r.stdout}{r.stderr}"


def test_falling_below_min_np_stops_every_survivor(disttrainrun, worker):
    # Two of 4 die together and --min-np is 3: the job ends at once with the reason, and
    # every survivor is accounted for.
    r = elastic_job(disttrainrun, worker, 4, [1, 3], launcher_args=("--min-np", "3"))
    assert r.returncode != 0, r.stdout + r.stderr
    assert re.search(r"rank [13] \(host localhost, pid \d+\) was killed by signal 9 \(Killed\)"
                     r"; 2 rank\(s\) left, fewer than --min-np 3; stopped the other ranks",
                     r.stderr), r.stderr
    assert "ranks 0, 2 were stopped by disttrainrun with signal 15" in r.stderr, r.stderr
    assert not lines(r.stdout, "^done "), r.stdout


def test_recovery_benchmark_smoke(build_dir):
    # One trial of each scenario: the benchmark runs and prints a row for each, with no
    # hang. The times are printed, not judged.
    bench = REPO / "tests" / "bench" / "elastic_recovery.py"
    r = subprocess.run([sys.executable, str(bench), "--build-dir", str(build_dir),
                        "--trials", "1", "--deadline", "40", "--timeout", "3"],
                       env=clean_env(), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = {l.split()[0]: l.split() for l in r.stdout.splitlines()
            if l and not l.startswith(("#", "-", "scenario"))}
    assert sorted(rows) == sorted(["one", "rank0", "two", "in-reform", "replacement"]), r.stdout
    for name, cols in rows.items():
        assert cols[1] == "1" and cols[6] == "0", f"{name} hung:\n{r.stdout}"
        if name != "in-reform":
            assert cols[5] == "0", f"{name} failed:\n{r.stdout}"


def test_new_slots_on_another_host_get_ranks_through_ssh(disttrainrun, worker, tmp_path):
    # The job starts on h0 (2 ranks); the script then adds h1:2, whose ranks disttrainrun
    # starts through its ssh path, and which join: every rank ends in a job of 4. A
    # re-form may let in one new rank before the other: a job of 2 ranks on one host and 1
    # on the other, with shared memory and the hierarchical allreduce.
    script = discovery_script(tmp_path, 'if [ -e "$0.ran" ]; then printf "h0:2\\nh1:2\\n"\n'
                                        'else touch "$0.ran"; echo h0:2; fi\n')
    with namespace_hosts(tmp_path) as (fabric, path):
        r = run(fabric.exec_prefix(0) + [
            disttrainrun, "-np", "2", "--elastic", "--max-np", "4", "--launcher", "ssh",
            "--host-discovery-script", script, "-x", "DT_WORKER_UNTIL_SIZE", "--timeout", "60",
            worker, STEPS, "-1"],
            env={"PATH": path, "DISTTRAIN_TIMEOUT": "20", "DT_WORKER_UNTIL_SIZE": "4"},
            timeout=90)
    assert r.returncode == 0, r.stdout + r.stderr
    for new_rank in (2, 3):
        assert f"started rank {new_rank} on host h1" in r.stderr, r.stderr
    done = sorted(m.group(2) for m in lines(r.stdout, "^done "))
    assert len(done) == 4 and all("size=4" in d for d in done), r.stdout + r.stderr


def test_a_host_cut_off_is_lost_and_the_other_reforms_hierarchically(disttrainrun, worker,
                                                                        tmp_path):
    # Two "hosts" (network namespaces, tests/integration/netns) with 2 ranks each, so the
    # allreduce is hierarchical (shared memory on each host, tcp between them). Host 1's
    # link goes down mid-job: its ranks are silent, not dead. Ranks 0 and 1 (host 0, where
    # disttrainrun and its store run) time out on them, re-form as a job of 2 and finish;
    # ranks 2 and 3 cannot reach the store any more and fail; nothing hangs.
    with namespace_hosts(tmp_path) as (fabric, path):
        env = clean_env({"PATH": path, "DISTTRAIN_TIMEOUT": "4",
                         "DISTTRAIN_LOG_LEVEL": "debug", "DT_WORKER_STEPS_AFTER_REFORM": "20"})
        out, err = tmp_path / "out.txt", tmp_path / "err.txt"
        with open(out, "w") as of, open(err, "w") as ef:
            job = subprocess.Popen(
                fabric.exec_prefix(0) + [str(disttrainrun), "-np", "4", "-H", "h0:2,h1:2",
                                         "--launcher", "ssh", "--elastic",
                                         "-x", "DT_WORKER_STEPS_AFTER_REFORM", "--timeout",
                                         "60", str(worker), "1000000", "-1"],
                env=env, stdout=of, stderr=ef, start_new_session=True)
            try:
                deadline = time.monotonic() + 30
                hierarchical = re.compile(r"allreduce 'step' .*4 ranks.*: shm_hierarchical")
                while not hierarchical.search(err.read_text(errors="replace")):
                    assert job.poll() is None, err.read_text(errors="replace")[-3000:]
                    assert time.monotonic() < deadline, "the job did not start in 30 s\n" + \
                        err.read_text(errors="replace")[-3000:]
                    time.sleep(0.1)
                time.sleep(0.5)
                fabric.cut(1)
                code = job.wait(timeout=50)
            finally:
                if job.poll() is None:
                    os.killpg(job.pid, 9)
                    job.wait()
    stdout, stderr = out.read_text(errors="replace"), err.read_text(errors="replace")
    report = stdout[-3000:] + stderr[-6000:]
    assert code == 0, report
    done = {m.group(1): m.group(2) for m in lines(stdout, "^done ")}
    assert sorted(done) == ["0", "1"], report
    for new_rank, old_rank in enumerate(["0", "1"]):
        assert done[old_rank].startswith(f"done rank={new_rank} size=2 "), report
    for lost in ("2", "3"):
        assert re.search(rf"rank {lost} \(host h1, ssh pid \d+\) exited with code \d+; (the job "
                         r"goes on with \d rank\(s\)|the others had ended well) \(--elastic\)",
                         stderr), report
