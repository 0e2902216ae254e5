# SPDX-License-Identifier: Apache-2.0
"""disttrain-train --elastic under disttrainrun --elastic: a rank killed with SIGKILL
mid-epoch does not end the job. The survivors go back to their last commit, re-form, take
the new rank 0's state and their share of the same global batch, and finish every epoch
with the accuracy of an undisturbed run; a replacement (--max-restarts) joins and gets the
state; rank 0's death and two deaths at once are survived; too few ranks end the job with
an error on every survivor. The mlp on 2000 Fashion-MNIST images, 4 ranks of batch 25
(20 steps per epoch): seconds per job. Each job has a hard timeout."""
import re

import pytest

from conftest import NEEDS_TRAINER, ONEDNN_PLUGIN_DIR as ONEDNN
from conftest import TCP_PLUGIN_DIR as TCP, BUILD, build_path, run

pytestmark = NEEDS_TRAINER

ENV = {"DISTTRAIN_PLUGIN_PATH": f"{TCP}:{ONEDNN}", "DISTTRAIN_TIMEOUT": "30",
       "DISTTRAIN_LOG_LEVEL": "warn"}
EPOCHS = 3
ARGS = ["--model", "mlp", "--epochs", str(EPOCHS), "--batch-size", "25", "--lr", "0.05",
        "--seed", "3", "--train-limit", "2000", "--test-limit", "500", "--threads", "1",
        "--no-progress", "--quiet", "--print-checksum", "--elastic"]
STEPS_PER_EPOCH = 2000 // 100
KILL_STEP = 27  # mid-way through the second epoch


@pytest.fixture(scope="module")
def train():
    return build_path("models", "programs", "disttrain-train")


def elastic_train(disttrainrun, train, tmp_path, name, victims=(), launcher_args=(),
                  env=None, wrap=None, timeout=90, epochs=EPOCHS):
    """Runs 4 ranks; `victims` (ranks at the start) kill themselves before step
    KILL_STEP. Returns the finished process and the metrics file's path."""
    metrics = tmp_path / f"{name}.jsonl"
    job_env = {**ENV, **(env or {})}
    if victims:
        job_env["DISTTRAIN_TRAIN_KILL_AT"] = f"step:{KILL_STEP}"
        job_env["DISTTRAIN_TRAIN_KILL_RANKS"] = ",".join(str(v) for v in victims)
    command = [train, *ARGS, "--epochs", str(epochs), "--metrics-file", metrics]
    if wrap:
        command = ["sh", "-c", f'{wrap} exec "$0" "$@"', *command]
    r = run([disttrainrun, "-np", "4", "--elastic", *launcher_args, "--", *command],
            env=job_env, timeout=timeout)
    return r, metrics


def epochs(metrics):
    import json
    return [json.loads(line) for line in metrics.read_text().splitlines()]


def checksums(stdout):
    """{final rank: model checksum} from --print-checksum."""
    return {int(m.group(1)): m.group(2)
            for m in re.finditer(r"rank (\d+) model checksum ([0-9a-f]+)", stdout)}


def reform_lines(stderr):
    return re.findall(r"elastic: re-formed epoch \d+: size (\d+) -> (\d+) in [\d.]+ ms, "
                      r"first step after [\d.]+ ms", stderr)


@pytest.fixture(scope="module")
def undisturbed(disttrainrun, train, tmp_path_factory):
    r, metrics = elastic_train(disttrainrun, train, tmp_path_factory.mktemp("undisturbed"),
                               "undisturbed")
    assert r.returncode == 0, r.stdout + r.stderr
    assert not reform_lines(r.stderr), r.stderr
    return epochs(metrics)


def assert_finished_like(undisturbed, metrics, final_size, stdout):
    got = epochs(metrics)
    # Every epoch, every step: the global batch stayed the same, so did the step count.
    assert [e["epoch"] for e in got] == list(range(1, EPOCHS + 1)), got
    assert [e["iteration"] for e in got] == [STEPS_PER_EPOCH * k
                                             for k in range(1, EPOCHS + 1)], got
    a, b = undisturbed[-1]["validation/main/accuracy"], got[-1]["validation/main/accuracy"]
    print(f"final validation accuracy: undisturbed {a:.4f}, disturbed {b:.4f}")
    assert abs(a - b) <= 0.01, (undisturbed, got)
    assert got[-1]["main/loss"] < got[0]["main/loss"]  # it went on learning
    sums = checksums(stdout)
    assert sorted(sums) == list(range(final_size)), stdout
    assert len(set(sums.values())) == 1, stdout  # every rank ends with the same model


@pytest.mark.parametrize("victims,ordered", [([1], "1"), ([0], "1"), ([1, 2], "1"),
                                             ([0, 3], "0")],
                         ids=["rank1", "rank0", "two", "two-negotiated"])
def test_survivors_finish_every_epoch(disttrainrun, train, tmp_path, undisturbed, victims,
                                      ordered):
    r, metrics = elastic_train(disttrainrun, train, tmp_path, "disturbed", victims,
                               env={"DISTTRAIN_ORDERED": ordered})
    assert r.returncode == 0, r.stdout + r.stderr
    size = 4 - len(victims)
    for v in victims:
        assert f"rank {v} (host localhost" in r.stderr and "(--elastic)" in r.stderr
    lines = reform_lines(r.stderr)
    assert lines and lines[0][0] == "4" and lines[-1][1] == str(size), r.stderr
    assert_finished_like(undisturbed, metrics, size, r.stdout)


def test_a_replacement_joins_and_the_job_ends_on_four_ranks(disttrainrun, train, tmp_path,
                                                           undisturbed):
    r, metrics = elastic_train(disttrainrun, train, tmp_path, "replaced", [1],
                               launcher_args=("--max-restarts", "1"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "started a replacement (pid" in r.stderr, r.stderr
    # The replacement comes in with the re-form after the loss when it has registered by
    # then (4 -> 4), else at a later commit (4 -> 3, then 3 -> 4).
    lines = reform_lines(r.stderr)
    assert lines and lines[-1][1] == "4", r.stderr
    assert_finished_like(undisturbed, metrics, 4, r.stdout)


def test_a_late_replacement_is_let_in_at_a_commit(disttrainrun, train, tmp_path):
    # The replacement starts 0.5 s late, after the survivors re-formed as 3 (tens of ms
    # after the loss): they let it in at a later commit (poll_joiners), and it takes the
    # state from their sync.
    r, metrics = elastic_train(disttrainrun, train, tmp_path, "late", [1],
                               launcher_args=("--max-restarts", "1"), epochs=5,
                               wrap='[ -n "$DISTTRAIN_ELASTIC_JOIN" ] && sleep 0.5;')
    assert r.returncode == 0, r.stdout + r.stderr
    assert reform_lines(r.stderr) == [("4", "3"), ("3", "4")], r.stderr
    assert "(replacements joined;" in r.stderr, r.stderr
    got = epochs(metrics)
    assert [e["iteration"] for e in got] == [STEPS_PER_EPOCH * k for k in range(1, 6)], got
    sums = checksums(r.stdout)
    assert sorted(sums) == [0, 1, 2, 3] and len(set(sums.values())) == 1, r.stdout


def test_below_min_np_every_survivor_says_the_job_ended(disttrainrun, train, tmp_path):
    r, metrics = elastic_train(disttrainrun, train, tmp_path, "below", [1],
                               launcher_args=("--min-np", "4"))
    assert r.returncode != 0, r.stdout + r.stderr
    assert "rank 1 (host localhost" in r.stderr and "killed by signal 9" in r.stderr
    ended = re.findall(r"elastic: rank \d of 4 ended by SIGTERM: disttrainrun ends the "
                         r"job when fewer than --min-np ranks are left", r.stderr)
    assert len(ended) == 3, r.stderr
    assert not checksums(r.stdout), r.stdout


def test_a_reform_short_of_the_minimum_fails_every_survivor(disttrainrun, train, tmp_path):
    # DISTTRAIN_MIN_SIZE above what is left, set by each rank itself (disttrainrun's own
    # --min-np rule would end the job first): every survivor's re-form times out and the
    # trainer exits with the library's reason.
    r, metrics = elastic_train(disttrainrun, train, tmp_path, "short", [2],
                               env={"DISTTRAIN_TIMEOUT": "5"},
                               wrap="DISTTRAIN_MIN_SIZE=4")
    assert r.returncode == 1, r.stdout + r.stderr
    errors = re.findall(r"disttrain-train: error: elastic: dt_context_reform: "
                        r"DT_ERR_TIMEOUT.*needs at least 4 \(DISTTRAIN_MIN_SIZE\)", r.stderr)
    assert len(errors) == 3, r.stderr
    assert not checksums(r.stdout), r.stdout


def test_elastic_outside_an_elastic_job_is_refused(train):
    r = run([train, *ARGS], env=ENV, timeout=60)
    assert r.returncode == 2
    assert "--elastic needs an elastic job: start it with disttrainrun --elastic" in r.stderr


FAKE = BUILD / "tests" / "plugins" / "fakedevice"


@pytest.mark.skipif(not (FAKE / "libdt-compute-fakedevice.so").exists(),
                    reason="the fake device plugins were not built")
def test_elastic_with_device_tensors_is_refused(disttrainrun, train):
    # The commits are host copies of the tensors: a compute plugin that keeps them on a
    # device is refused before the job forms, with what to do instead.
    env = {**ENV, "DISTTRAIN_PLUGIN_PATH": f"{TCP}:{FAKE}:{ONEDNN}",
           "DISTTRAIN_FAKE_DEVICE_COMPUTE": str(ONEDNN / "libdt-compute-onednn.so"),
           "DISTTRAIN_COMPUTE": "fakedevice", "DISTTRAIN_MEMORY": "fakedevice"}
    r = run([disttrainrun, "-np", "2", "--elastic", "--", train, *ARGS], env=env, timeout=60)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "--elastic commits the state in host memory and needs host tensors" in r.stderr
