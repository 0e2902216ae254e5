# SPDX-License-Identifier: Apache-2.0
"""disttrain-train end to end: data parallelism is exact, resume after a kill gives the
results of an uninterrupted run, damaged checkpoints and bad input are refused with a
message and exit status 2.

Small subsets of Fashion-MNIST and few steps keep the whole file within a minute or so on
2 cores; the accuracy runs of the closing note are in test_accuracy.py (marked slow).
"""
import gzip
import json
import os
import pathlib
import shutil
import struct
import tempfile
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import FASHION_MNIST, NEEDS_TRAINER, ONEDNN_PLUGIN_DIR as ONEDNN
from conftest import TCP_PLUGIN_DIR as TCP, build_path, run

pytestmark = NEEDS_TRAINER

ENV = {"DISTTRAIN_PLUGIN_PATH": f"{TCP}:{ONEDNN}", "DISTTRAIN_TIMEOUT": "60",
       "DISTTRAIN_LOG_LEVEL": "warn"}
# 4 steps of 100 images per epoch, 200 test images: seconds per run.
SMALL = ["--train-limit", "400", "--test-limit", "200", "--threads", "1", "--no-progress"]


@pytest.fixture(scope="module")
def train():
    return build_path("models", "programs", "disttrain-train")


def job(disttrainrun, train, ranks, args, env=None, timeout=120):
    cmd = [train, *args] if ranks == 1 else [disttrainrun, "-np", ranks, "--", train, *args]
    return run(cmd, env={**ENV, **(env or {})}, timeout=timeout)


def metrics(path):
    return [json.loads(line) for line in pathlib.Path(path).read_text().splitlines()]


def assert_same_trajectory(a, b, rel=1e-5):
    assert [r["epoch"] for r in a] == [r["epoch"] for r in b]
    for x, y in zip(a, b):
        for key in ("main/loss", "validation/main/loss", "main/accuracy",
                    "validation/main/accuracy"):
            assert x[key] == pytest.approx(y[key], rel=rel, abs=1e-7), (key, x, y)
        assert x["iteration"] == y["iteration"]


@pytest.mark.parametrize("model", ["mlp", "convnet"])
def test_two_ranks_of_batch_b_follow_one_rank_of_batch_2b(disttrainrun, train, tmp_path,
                                                         model):
    common = ["--model", model, "--epochs", "3", "--lr", "0.05", "--seed", "5", *SMALL]
    # oneDNN picks Winograd or a direct kernel for a 3x3 convolution by its batch too, and
    # the two round differently (about 1e-5): the same kernel on both sides keeps this a
    # test of the data-parallel arithmetic alone.
    direct = {"DISTTRAIN_ONEDNN_WINOGRAD": "0"}
    one = job(disttrainrun, train, 1, [*common, "--batch-size", "100",
                                       "--metrics-file", tmp_path / "one.jsonl"], env=direct)
    assert one.returncode == 0, one.stderr
    two = job(disttrainrun, train, 2, [*common, "--batch-size", "50",
                                       "--metrics-file", tmp_path / "two.jsonl"], env=direct)
    assert two.returncode == 0, two.stderr
    a, b = metrics(tmp_path / "one.jsonl"), metrics(tmp_path / "two.jsonl")
    assert len(a) == 3
    assert a[-1]["main/loss"] < a[0]["main/loss"]  # it learns
    assert_same_trajectory(a, b)


def test_table_on_stdout(disttrainrun, train):
    r = job(disttrainrun, train, 1, ["--epochs", "1", "--batch-size", "100", *SMALL])
    assert r.returncode == 0, r.stderr
    header = r.stdout.splitlines()[0].split()
    assert header == ["epoch", "main/loss", "validation/main/loss", "main/accuracy",
                      "validation/main/accuracy", "elapsed_time", "images/sec"]
    assert r.stdout.splitlines()[1].split()[0] == "1"


def reference_and_dirs(disttrainrun, train, tmp_path, common):
    ref = job(disttrainrun, train, 2, [*common, "--checkpoint-dir", tmp_path / "ref",
                                       "--metrics-file", tmp_path / "ref.jsonl"])
    assert ref.returncode == 0, ref.stderr
    return metrics(tmp_path / "ref.jsonl")


RESUME = ["--model", "mlp", "--epochs", "3", "--batch-size", "50", "--lr", "0.05",
          "--optimizer", "adam", "--checkpoint-every", "3", *SMALL]


@pytest.mark.parametrize("kill_at", ["step:7", "checkpoint:2", "checkpoint:3"])
def test_resume_after_a_kill_matches_an_uninterrupted_run(disttrainrun, train, tmp_path,
                                                          kill_at):
    # Checkpoints at steps 3, 4 (end of epoch 1), 6, 8, 9, ...; step:7 dies mid-epoch 2,
    # checkpoint:N dies halfway through writing the N-th one (mid-epoch, or an epoch's).
    expected = reference_and_dirs(disttrainrun, train, tmp_path, RESUME)
    ckpt = tmp_path / "ckpt"
    args = [*RESUME, "--checkpoint-dir", ckpt, "--metrics-file", tmp_path / "m.jsonl"]
    killed = job(disttrainrun, train, 2, args, env={"DISTTRAIN_TRAIN_KILL_AT": kill_at})
    assert killed.returncode != 0
    assert (ckpt / "checkpoint.dtck").exists()
    if kill_at.startswith("checkpoint"):
        assert (ckpt / "checkpoint.dtck.tmp").exists()  # the torn one, never renamed
    resumed = job(disttrainrun, train, 2, [*args, "--resume"])
    assert resumed.returncode == 0, resumed.stderr
    assert "resumed from" in resumed.stderr
    assert_same_trajectory(metrics(tmp_path / "m.jsonl"), expected, rel=1e-6)


def test_resume_without_a_checkpoint_starts_from_the_beginning(disttrainrun, train, tmp_path):
    r = job(disttrainrun, train, 1, ["--epochs", "1", "--batch-size", "100", *SMALL,
                                     "--checkpoint-dir", tmp_path, "--resume"])
    assert r.returncode == 0, r.stderr
    assert "no checkpoint" in r.stderr
    assert (tmp_path / "checkpoint.dtck").exists()


@pytest.mark.parametrize("damage,message", [("flip", "corrupt"), ("truncate", "truncated")])
def test_damaged_checkpoint_is_refused(disttrainrun, train, tmp_path, damage, message):
    args = ["--epochs", "2", "--batch-size", "50", *SMALL, "--checkpoint-dir", tmp_path]
    first = job(disttrainrun, train, 1, [*args[:1], "1", *args[2:]])
    assert first.returncode == 0, first.stderr
    path = tmp_path / "checkpoint.dtck"
    data = bytearray(path.read_bytes())
    if damage == "flip":
        data[len(data) // 2] ^= 0x01
    else:
        data = data[: len(data) - 100]
    path.write_bytes(bytes(data))
    for ranks in (1, 2):
        r = job(disttrainrun, train, ranks, [*args, "--resume"])
        assert r.returncode == 2, r.stderr
        assert message in r.stderr and str(path) in r.stderr, r.stderr


def unreadable_checkpoint(path, how):
    """Puts something that exists but cannot be read as a checkpoint at path."""
    path.unlink()
    if how == "folder":  # open() works, read() fails with EISDIR
        path.mkdir()
    elif how == "symlink loop":  # open() fails with ELOOP
        path.symlink_to(path.name)
    elif how == "dangling symlink":  # open() fails with ENOENT, though the name is there
        path.symlink_to(path.parent / "unmounted" / path.name)
    else:
        os.mkfifo(path)


@pytest.mark.parametrize("how,message", [
    ("folder", "is a folder"), ("symlink loop", "Too many levels of symbolic links"),
    ("dangling symlink", "does not exist"), ("fifo", "not a regular file")])
def test_unreadable_checkpoint_is_refused_not_overwritten(disttrainrun, train, tmp_path,
                                                          how, message):
    """Only a missing checkpoint means "start from the beginning": one that exists but
    cannot be read stops the run with status 2 before any step, and stays as it was."""
    args = ["--epochs", "2", "--batch-size", "50", *SMALL, "--checkpoint-dir", tmp_path]
    assert job(disttrainrun, train, 1, [*args[:1], "1", *args[2:]]).returncode == 0
    path = tmp_path / "checkpoint.dtck"
    unreadable_checkpoint(path, how)
    for ranks in (1, 2):
        r = job(disttrainrun, train, ranks, [*args, "--resume"])
        assert r.returncode == 2, r.stderr
        assert str(path) in r.stderr and message in r.stderr, r.stderr
        assert "starting from the beginning" not in r.stderr
        assert os.path.lexists(path) and not (tmp_path / "checkpoint.dtck.tmp").exists()


def test_checkpoint_its_user_cannot_read_is_refused(disttrainrun, train):
    """The reported case: a checkpoint of mode 600 owned by root, resumed by another user
    (setpriv), must not be taken for none and overwritten."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run the trainer as nobody")
    as_nobody = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    if run([*as_nobody, train, "--help"], env=ENV, timeout=60).returncode != 0:
        pytest.skip("nobody cannot run the trainer in this build tree")
    with tempfile.TemporaryDirectory(dir="/tmp") as top:  # tmp_path is root's alone
        ckpt = pathlib.Path(top) / "ck"
        args = ["--epochs", "1", "--batch-size", "50", *SMALL, "--checkpoint-dir", ckpt]
        assert job(disttrainrun, train, 1, args).returncode == 0
        path = ckpt / "checkpoint.dtck"
        before = path.read_bytes()
        path.chmod(0o600)
        for d in (top, ckpt):
            os.chmod(d, 0o777)  # nobody may look and write there, not read the file
        r = run([*as_nobody, train, *args[:1], "2", *args[2:], "--resume"], env=ENV,
                timeout=120)
        assert r.returncode == 2, r.stderr
        assert str(path) in r.stderr and "Permission denied" in r.stderr, r.stderr
        assert path.read_bytes() == before


def test_checkpoint_folder_its_user_cannot_write_is_refused_before_training(disttrainrun,
                                                                            train):
    """Checked when the run starts, not at its first checkpoint an epoch later (it trained
    that epoch and then ended with status 1)."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run the trainer as nobody")
    as_nobody = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    if run([*as_nobody, train, "--help"], env=ENV, timeout=60).returncode != 0:
        pytest.skip("nobody cannot run the trainer in this build tree")
    with tempfile.TemporaryDirectory(dir="/tmp") as top:  # root's, mode 755
        os.chmod(top, 0o755)
        for ckpt in (pathlib.Path(top), pathlib.Path(top) / "new"):
            args = ["--epochs", "1", "--batch-size", "50", *SMALL, "--checkpoint-dir", ckpt]
            for cmd in ([*as_nobody, train, *args],
                        [*as_nobody, disttrainrun, "-np", "2", "--", train, *args]):
                r = run(cmd, env=ENV, timeout=120)
                assert r.returncode == 2, (cmd, r.stdout, r.stderr)
                assert str(ckpt) in r.stderr and "Permission denied" in r.stderr, r.stderr
                assert "epoch" not in r.stdout, r.stdout  # not a step taken
            assert not (pathlib.Path(top) / "new").exists()


@pytest.mark.parametrize("extra,message", [
    (["--lr", "0.5"], "rank 1 has --lr = 0.5 where rank 0 has 0.05"),
    (["--optimizer", "adam"], "rank 1 has --optimizer = adam where rank 0 has momentum"),
    (["--weight-decay", "0.1"], "rank 1 has --weight-decay = 0.1 where rank 0 has 0"),
    (["--seed", "9"], "rank 1 has --seed = 9 where rank 0 has 5"),
    (["--train-limit", "450"], "rank 1 has training images (--train-limit, --data-dir) = 450 "
                               "where rank 0 has 400"),
])
def test_ranks_started_with_other_settings_are_refused(disttrainrun, train, tmp_path, extra,
                                                       message):
    """A rank with another --lr, --optimizer or --seed makes the same collective calls as
    the others, so no call check noticed: the job trained to exit status 0 with the ranks'
    models apart (or, with another --seed, each rank drawing from its own shuffle)."""
    wrapper = tmp_path / "rank1-differs.sh"
    wrapper.write_text(f'#!/bin/sh\nif [ "$DISTTRAIN_RANK" = 1 ]; then exec "{train}" "$@" '
                       f'{" ".join(extra)}; fi\nexec "{train}" "$@"\n')
    wrapper.chmod(0o755)
    r = job(disttrainrun, wrapper, 2, ["--epochs", "1", "--batch-size", "50", "--seed", "5",
                                       *SMALL, "--checkpoint-dir", tmp_path / "ckpt"])
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert message in r.stderr, r.stderr
    assert "the ranks were started with other settings than rank 0's: " in r.stderr
    assert "epoch" not in r.stdout, r.stdout
    assert not (tmp_path / "ckpt" / "checkpoint.dtck").exists()


def test_checkpoint_of_another_configuration_is_refused(disttrainrun, train, tmp_path):
    args = ["--epochs", "1", *SMALL, "--checkpoint-dir", tmp_path]
    assert job(disttrainrun, train, 1, [*args, "--batch-size", "50"]).returncode == 0
    r = job(disttrainrun, train, 1, [*args, "--batch-size", "100", "--resume"])
    assert r.returncode == 2
    assert "global_batch" in r.stderr and "--batch-size" in r.stderr


@pytest.mark.parametrize("extra,message", [
    ([], "the mean training loss is"),  # at the epoch's end
    (["--checkpoint-every", "2"], "the mean training loss of its first 2 steps is"),
    # A finite loss, then parameters that are not: the first step's update overflows.
    (["--checkpoint-every", "1", "--lr", "1e300"],
     "after step 1, 1796010 values of the parameters and buffers are not finite"),
])
def test_divergence_stops_every_rank_and_keeps_the_checkpoint(disttrainrun, train, tmp_path,
                                                              extra, message):
    # It ran to exit status 0 with nan in the table, over the last good checkpoint.
    args = ["--batch-size", "50", *SMALL, "--checkpoint-dir", tmp_path]
    assert job(disttrainrun, train, 2, ["--epochs", "1", *args]).returncode == 0
    good = (tmp_path / "checkpoint.dtck").read_bytes()
    r = job(disttrainrun, train, 2, ["--epochs", "3", *args, "--resume", "--lr", "1e30",
                                     *extra])
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "training diverged in epoch 2: " + message in r.stderr, r.stderr
    assert "Lower --lr" in r.stderr
    assert (tmp_path / "checkpoint.dtck").read_bytes() == good
    assert not (tmp_path / "checkpoint.dtck.tmp").exists()


@pytest.mark.parametrize("ranks,done,epochs,message", [
    (2, 2, 2, "has finished epoch 2 of 2;"),
    (1, 2, 1, "has finished epoch 2, past --epochs 1;"),
])
def test_resuming_a_finished_run_says_there_is_nothing_to_train(disttrainrun, train, tmp_path,
                                                               ranks, done, epochs, message):
    # It said "resumed from ... at epoch 3, step 0" and ended with nothing trained.
    args = ["--batch-size", str(100 // ranks), *SMALL, "--checkpoint-dir", tmp_path]
    assert job(disttrainrun, train, ranks, ["--epochs", str(done), *args]).returncode == 0
    before = (tmp_path / "checkpoint.dtck").read_bytes()
    r = job(disttrainrun, train, ranks, ["--epochs", str(epochs), *args, "--resume"])
    assert r.returncode == 0, r.stderr
    assert (f"the checkpoint in {tmp_path} {message} nothing to train: raise --epochs to go "
            "on") in r.stderr, r.stderr
    assert "resumed from" not in r.stderr and r.stdout == ""
    assert (tmp_path / "checkpoint.dtck").read_bytes() == before


def idx_dir(tmp_path, magic=b"\x00\x00\x08\x03"):
    (tmp_path / "train-images-idx3-ubyte").write_bytes(magic + b"\x00" * 12)
    return tmp_path


@pytest.mark.parametrize("args,message", [
    (["--model", "vgg"], "--model"),
    (["--batch-size", "0"], "--batch-size"),
    (["--optimizer", "rmsprop"], "--optimizer"),
    (["--epochs", "two"], "--epochs"),
    (["--resume"], "--resume needs --checkpoint-dir"),
    # It trained to the end and wrote no checkpoint.
    (["--checkpoint-every", "2"], "--checkpoint-every needs --checkpoint-dir"),
    (["--model", "resnet50"], "disttrain-bench"),
    (["--data-dir", "/nonexistent/fmnist"], "dataset-fashion-mnist"),
    # Ranges said as --help says them, not as CLI11's 0 to DBL_MAX.
    (["--batch-size", "0"], "--batch-size: must be at least 1, got 0"),
    (["--threads", "-1"], "--threads: must be at least 0, got -1"),
    (["--commit-every", "0"], "--commit-every: must be at least 1, got 0"),
    # Unsigned options that CLI11 wrapped to 2^64 - 1.
    (["--epochs", "-1"], "--epochs: must be at least 1, got -1"),
    (["--base-batch", "-1"], "--base-batch: must be at least 0, got -1"),
    (["--train-limit", "-1"], "--train-limit: must be at least 0, got -1"),
    (["--test-limit", "-1"], "--test-limit: must be at least 0, got -1"),
    (["--seed", "-1"], "--seed: must be at least 0, got -1"),
    (["--checkpoint-every", "-3"], "--checkpoint-every: must be at least 0, got -3"),
    (["--epochs", "99999999999999999999"], "--epochs: must be at most 18446744073709551615"),
    (["--threads", "3000000000"], "--threads: must be at most 2147483647"),
    # Real options that trained to nan or failed at the first step in the library.
    (["--lr", "nan"], "--lr: must be a finite number at least 0, got nan"),
    (["--lr", "inf"], "--lr: must be a finite number at least 0, got inf"),
    (["--lr", "-0.1"], "--lr: must be at least 0, got -0.1"),
    (["--weight-decay", "nan"], "--weight-decay: must be a finite number at least 0"),
    (["--optimizer", "adam", "--momentum", "1.5"],
     "--momentum: must be at least 0 and below 1, got 1.5"),
    (["--momentum", "-1"], "--momentum: must be at least 0 and below 1, got -1"),
    (["--optimizer", "nesterov", "--momentum", "0"],
     "--momentum: must be greater than 0 and below 1 with --optimizer nesterov, got 0"),
    (["--gamma", "-1"], "--gamma: must be greater than 0, got -1"),
    (["--warmup-epochs", "-1"], "--warmup-epochs: must be at least 0, got -1"),
    (["--milestones", "5,-1"], "--milestones: '5,-1' is not a list of epochs"),
    (["--checkpoint-dir", __file__], f"--checkpoint-dir: {__file__} is not a folder"),
    (["--checkpoint-dir", f"{__file__}/sub"], f"{__file__} is not a folder"),
])
def test_bad_input_is_refused_with_status_2(train, args, message):
    r = run([train, "--epochs", "1", *args], env=ENV, timeout=60)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert message in r.stderr, r.stderr


@pytest.mark.parametrize("args,message", [
    (["--batch-size", "0"], "--batch-size: must be at least 1, got 0"),
    (["--batch-size", "-1"], "--batch-size: must be at least 1, got -1"),
    (["--num-iters", "0"], "--num-iters: must be at least 1, got 0"),
    (["--num-warmup", "-1"], "--num-warmup: must be at least 0, got -1"),
    (["--threads", "-1"], "--threads: must be at least 0, got -1"),
    # More than any machine's memory for the input alone (and one that wraps around):
    # refused before any allocation, naming the option, not std::bad_alloc.
    (["--batch-size", "100000000000000"], "--batch-size 100000000000000 needs more memory"),
    (["--batch-size", "18446744073709551615"], "use a smaller --batch-size"),
])
def test_bench_bad_input_is_refused_with_status_2(args, message):
    r = run([build_path("models", "programs", "disttrain-bench"), "--model", "mlp", *args],
            env=ENV, timeout=60)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert message in r.stderr, r.stderr


def test_missing_data_names_the_path_and_package(train, tmp_path):
    r = run([train, "--data-dir", tmp_path], env=ENV, timeout=60)
    assert r.returncode == 2
    assert str(tmp_path / "train-images-idx3-ubyte.gz") in r.stderr
    assert "dataset-fashion-mnist" in r.stderr


def test_wrong_idx_magic_is_refused(train, tmp_path):
    idx_dir(tmp_path, magic=b"PK\x03\x04")  # a zip archive, say
    r = run([train, "--data-dir", tmp_path], env=ENV, timeout=60)
    assert r.returncode == 2
    assert "not an IDX file" in r.stderr, r.stderr


def idx_header(*dims):
    return bytes([0, 0, 8, len(dims)]) + b"".join(struct.pack(">I", d) for d in dims)


def fashion_mnist_prefix(stem, items, item_bytes):
    """The first `items` elements of an installed Fashion-MNIST file, without its header."""
    header = 16 if "images" in stem else 8
    with gzip.open(FASHION_MNIST / f"{stem}.gz") as f:
        return f.read(header + items * item_bytes)[header:]


def data_dir(path, test_images_header, test_images, test_labels=200):
    """400 training images of Fashion-MNIST and a test set of the given header and pixels,
    as uncompressed IDX files (which --data-dir reads too)."""
    path.mkdir()
    files = {
        "train-images-idx3-ubyte": idx_header(400, 28, 28) +
        fashion_mnist_prefix("train-images-idx3-ubyte", 400, 784),
        "train-labels-idx1-ubyte": idx_header(400) +
        fashion_mnist_prefix("train-labels-idx1-ubyte", 400, 1),
        "t10k-images-idx3-ubyte": test_images_header + test_images,
        "t10k-labels-idx1-ubyte": idx_header(test_labels) +
        fashion_mnist_prefix("t10k-labels-idx1-ubyte", test_labels, 1),
    }
    for name, data in files.items():
        (path / name).write_bytes(data)
    return path


def fmnist_test_images(n, side=28):
    pixels = fashion_mnist_prefix("t10k-images-idx3-ubyte", n, 784)
    step = 28 // side
    return bytes(pixels[i * 784 + r * step * 28 + c * step]
                 for i in range(n) for r in range(side) for c in range(side))


@pytest.mark.parametrize("case", ["14x14", "2 TB declared", "overflow", "empty"])
def test_malformed_test_set_is_refused_before_training(train, tmp_path, case):
    """A test set the trainer cannot evaluate is refused with status 2 before any step,
    naming its file: images of another shape than the training images (which were read
    past their end), a header declaring more data than the file holds (was
    std::bad_alloc), dimensions whose product overflows, no images at all (was a
    validation loss and accuracy of 0)."""
    test_file = tmp_path / "data" / "t10k-images-idx3-ubyte"
    if case == "14x14":
        data_dir(tmp_path / "data", idx_header(200, 14, 14), fmnist_test_images(200, 14))
        want = [str(test_file), "1x14x14", str(tmp_path / "data" / "train-images-idx3-ubyte"),
                "1x28x28"]
    elif case == "2 TB declared":
        data_dir(tmp_path / "data", idx_header(500, 65535, 65535), fmnist_test_images(200))
        want = [str(test_file), "truncated", "500 x 65535 x 65535"]
    elif case == "overflow":
        data_dir(tmp_path / "data", idx_header(4, 2**31, 2**31), fmnist_test_images(1), 4)
        want = [str(test_file), "4 x 2147483648 x 2147483648"]
    else:
        data_dir(tmp_path / "data", idx_header(0, 28, 28), b"", 0)
        want = [str(test_file), "holds no images"]
    r = run([train, "--epochs", "1", "--batch-size", "50", "--threads", "1", "--no-progress",
             "--data-dir", tmp_path / "data"], env=ENV, timeout=60)
    assert r.returncode == 2, r.stderr
    assert r.stdout == ""  # no epoch was trained, nor the job joined
    for w in want:
        assert w in r.stderr, (w, r.stderr)


def test_well_formed_data_dir_trains(train, tmp_path):
    """The control of the test above: its data, with a well-formed test set, trains."""
    data_dir(tmp_path / "data", idx_header(200, 28, 28), fmnist_test_images(200))
    r = run([train, "--epochs", "1", "--batch-size", "50", "--threads", "1", "--no-progress",
             "--data-dir", tmp_path / "data"], env=ENV, timeout=60)
    assert r.returncode == 0, r.stderr


def images_dir(path, height, width, n=100):
    """n training and n test images of height x width pixels (a pattern) with Fashion-MNIST's
    first labels, as uncompressed IDX files."""
    path.mkdir()
    pixels = bytes(i * 7 % 256 for i in range(n * height * width))
    for split in ("train", "t10k"):
        (path / f"{split}-images-idx3-ubyte").write_bytes(idx_header(n, height, width) + pixels)
        (path / f"{split}-labels-idx1-ubyte").write_bytes(
            idx_header(n) + fashion_mnist_prefix(f"{split}-labels-idx1-ubyte", n, 1))
    return path


@pytest.mark.parametrize("side", [1, 28])
def test_resnet50_is_refused_naming_the_shape_of_the_data(train, tmp_path, side):
    """resnet50 takes 3x224x224 images only: refused with status 2 before any step, naming
    the shape the data has (not Fashion-MNIST's, whatever the data is) and its file."""
    data = images_dir(tmp_path / "data", side, side)
    r = run([train, "--model", "resnet50", "--epochs", "1", "--batch-size", "50",
             "--threads", "1", "--no-progress", "--data-dir", data], env=ENV, timeout=60)
    assert r.returncode == 2, r.stderr
    assert r.stdout == ""
    want = (f"model resnet50 takes 3x224x224 images, not the 1x{side}x{side} ones of "
            f"{data / 'train-images-idx3-ubyte'}; use disttrain-bench --model resnet50")
    assert want in r.stderr, r.stderr


def train_on(train, data, model):
    return run([train, "--model", model, "--epochs", "1", "--batch-size", "50", "--threads",
                "1", "--no-progress", "--data-dir", data], env=ENV, timeout=60)


@pytest.mark.parametrize("height,width", [(1, 1), (2, 2), (3, 28), (28, 3)])
def test_images_smaller_than_the_model_takes_are_refused_before_training(train, tmp_path,
                                                                        height, width):
    """convnet's two 2x2 poolings need images of 4x4 at least: smaller ones are refused
    with status 2 before any step, saying the smallest size (they failed in the library at
    the first step, with status 1)."""
    data = images_dir(tmp_path / "data", height, width)
    r = train_on(train, data, "convnet")
    assert r.returncode == 2, r.stderr
    assert r.stdout == ""
    want = (f"model convnet takes images of at least 4x4 pixels, not the 1x{height}x{width} "
            f"ones of {data / 'train-images-idx3-ubyte'}; use larger images, or --model mlp "
            f"or resnet20")
    assert want in r.stderr, r.stderr


@pytest.mark.parametrize("model,side", [("convnet", 4), ("mlp", 1), ("resnet20", 1)])
def test_images_of_the_smallest_size_a_model_takes_train(train, tmp_path, model, side):
    """The control of the test above: each model trains on its smallest images."""
    r = train_on(train, images_dir(tmp_path / "data", side, side), model)
    assert r.returncode == 0, r.stderr


def test_bad_input_under_the_launcher_stops_every_rank(disttrainrun, train):
    r = job(disttrainrun, train, 2, ["--batch-size", "0"], timeout=60)
    assert r.returncode != 0
    assert "--batch-size" in r.stderr


def cpu_computes_bf16():
    """Whether this CPU has native bfloat16 (what --bf16 needs; elsewhere it warns and
    trains in float32)."""
    try:
        flags = pathlib.Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


@pytest.mark.skipif(not cpu_computes_bf16(), reason="the CPU has no native bfloat16")
@pytest.mark.parametrize("model", ["resnet20", "convnet"])
def test_bf16_activations_train_like_f32(disttrainrun, train, tmp_path, model):
    """--bf16 keeps the convolutional nets' activations in bfloat16: the loss falls, and
    after a short run loss and accuracy are close to the float32 run from the same seed."""
    # 16 steps of 50 images; the cosine decay lets the batch-norm running statistics
    # settle, so that the validation accuracy of so short a run is not noise.
    common = ["--model", model, "--epochs", "5", "--batch-size", "50", "--lr", "0.05",
              "--optimizer", "momentum", "--decay", "cosine", "--seed", "5",
              "--train-limit", "800", "--test-limit", "400", "--threads", "1",
              "--no-progress"]
    # The two runs of one thread each run side by side.
    with ThreadPoolExecutor(max_workers=2) as pool:
        started = {name: pool.submit(job, disttrainrun, train, 1,
                                     [*common, *extra, "--metrics-file",
                                      tmp_path / f"{name}.jsonl"])
                   for name, extra in (("f32", []), ("bf16", ["--bf16"]))}
    runs = {}
    for name, future in started.items():
        r = future.result()
        assert r.returncode == 0, r.stderr
        runs[name] = metrics(tmp_path / f"{name}.jsonl")
    f32, bf16 = runs["f32"], runs["bf16"]
    assert len(bf16) == 5
    assert bf16[-1]["main/loss"] < 0.8 * bf16[0]["main/loss"]  # it learns
    assert bf16[-1]["main/loss"] == pytest.approx(f32[-1]["main/loss"], rel=0.05)
    assert abs(bf16[-1]["main/accuracy"] - f32[-1]["main/accuracy"]) <= 0.04
    assert abs(bf16[-1]["validation/main/accuracy"]
               - f32[-1]["validation/main/accuracy"]) <= 0.04


def test_activations_setting(disttrainrun, train):
    """DISTTRAIN_ACTIVATIONS picks the convolutional nets' activation dtype under --bf16
    (the start line says which), float32 without bf16 compute whatever it says, and an
    unknown value is refused naming the variable."""
    common = ["--model", "convnet", "--epochs", "1", "--batch-size", "50", "--train-limit",
              "100", "--test-limit", "50", "--threads", "1", "--no-progress"]
    want = {"float32": "float32 activations",
            "bfloat16": "bfloat16 activations" if cpu_computes_bf16() else "float32 activations",
            "auto": "bfloat16 activations" if cpu_computes_bf16() else "float32 activations"}
    for value, said in want.items():
        r = job(disttrainrun, train, 1, [*common, "--bf16"], env={"DISTTRAIN_ACTIVATIONS": value})
        assert r.returncode == 0, r.stderr
        assert said in r.stderr, (value, r.stderr)
    r = job(disttrainrun, train, 1, common, env={"DISTTRAIN_ACTIVATIONS": "bfloat16"})
    assert r.returncode == 0 and "float32 activations" in r.stderr, r.stderr
    r = job(disttrainrun, train, 1, [*common, "--bf16"], env={"DISTTRAIN_ACTIVATIONS": "fp8"})
    assert r.returncode != 0
    assert "DISTTRAIN_ACTIVATIONS=fp8 is unknown; use auto, bfloat16 or float32" in r.stderr, \
        r.stderr
