# SPDX-License-Identifier: Apache-2.0
"""disttrain.elastic through the Python binding: 3 or 4 ranks under disttrainrun --elastic,
one or two killed with SIGKILL mid-run (rank 0 included); the survivors restore their last
commit, re-form and finish with the right result (jobs/elastic_job.py), replacements join,
and falling below --min-np ends the job. Every job has a hard timeout."""
import re

import pytest

import dtpy

dtpy.use_build_tree()


def elastic_job(kind, victims, ordered="0", launcher_args=(), args=(), np=3):
    victims = ",".join(map(str, victims if isinstance(victims, list) else [victims]))
    return dtpy.run_job("elastic_job.py", kind, victims, *args, np=np, timeout=120,
                        env={"DISTTRAIN_TIMEOUT": "30", "DISTTRAIN_ORDERED": ordered},
                        launcher_args=("--elastic", *launcher_args))


def survivors_ok(r, victims, np=3):
    victims = victims if isinstance(victims, list) else [victims]
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    lines = {int(m.group(1)): m.group(2) for m in re.finditer(r"^\[(\d)\] (OK .*)$",
                                                              r.stdout, re.M)}
    survivors = [rank for rank in range(np) if rank not in victims]
    assert sorted(lines) == survivors, out
    for new_rank, old_rank in enumerate(survivors):
        assert lines[old_rank].startswith(
            f"OK rank={new_rank} size={len(survivors)} steps=12"), out
    for victim in victims:
        assert f"rank {victim} (host localhost" in r.stderr, r.stderr
    return lines


def one_result(lines):
    """The parameters' digest, which must be the same on every rank."""
    values = {line.split("value=")[1] for line in lines.values()}
    assert len(values) == 1, lines
    return values.pop()


@pytest.mark.parametrize("ordered", ["0", "1"])
@pytest.mark.parametrize("victim", [0, 2])
def test_numpy_state_survives_a_killed_rank(victim, ordered):
    lines = survivors_ok(elastic_job("numpy", victim, ordered), victim)
    for line in lines.values():
        # 1 + 2 + ... + 12, and the re-formed job of 2 went back to the commit at step 6
        # (the victim died as step 7 began, so without the restore it would go on at 7).
        assert "value=78" in line and "resets=[(2, 6)]" in line, line


@pytest.mark.parametrize("victims,np", [(1, 3), (0, 3), ([1, 2], 4)],
                         ids=["rank1", "rank0", "two-ranks"])
def test_torch_state_survives_killed_ranks(victims, np):
    pytest.importorskip("torch", reason="PyTorch is not installed")
    one_result(survivors_ok(elastic_job("torch", victims, np=np), victims, np))


def test_torch_replacement_joins_and_the_job_ends_on_three_ranks():
    pytest.importorskip("torch", reason="PyTorch is not installed")
    r = elastic_job("torch", 1, launcher_args=("--max-restarts", "1"), args=("3",))
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "started a replacement" in r.stderr, r.stderr
    ok = re.findall(r"^\[(\d)\] OK rank=(\d) size=(\d) steps=12 value=(\S+)", r.stdout, re.M)
    assert sorted(o[:3] for o in ok) == [("0", "0", "3"), ("1", "2", "3"), ("2", "1", "3")], out
    assert len({o[3] for o in ok}) == 1, out  # the replacement got the same parameters


def test_falling_below_min_np_ends_the_python_job_with_the_reason():
    r = elastic_job("numpy", [1, 2], np=4, launcher_args=("--min-np", "3"))
    assert r.returncode != 0, r.stdout + r.stderr
    assert re.search(r"2 rank\(s\) left, fewer than --min-np 3; stopped the other ranks",
                     r.stderr), r.stderr
    assert "ranks 0, 3 were stopped by disttrainrun" in r.stderr, r.stderr
    assert " OK " not in r.stdout, r.stdout


def test_a_replacement_joins_at_a_commit_and_the_job_ends_on_three_ranks():
    r = elastic_job("numpy", 1, launcher_args=("--max-restarts", "1"), args=("1",))
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "started a replacement" in r.stderr, r.stderr
    ok = re.findall(r"^\[(\d)\] OK rank=(\d) size=(\d) steps=12 value=78", r.stdout, re.M)
    # Ranks 0 and 2 and the replacement (tagged [1], as the rank it replaces) end on 3.
    assert sorted(ok) == [("0", "0", "3"), ("1", "2", "3"), ("2", "1", "3")], out


def test_a_replacement_that_was_never_let_in_is_stopped_when_the_job_ends():
    # No pause: the survivors finish before the replacement has started Python.
    r = elastic_job("numpy", 1, launcher_args=("--max-restarts", "1"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "started a replacement" in r.stderr, r.stderr
    survivors_ok(r, 1)
