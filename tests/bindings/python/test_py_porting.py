# SPDX-License-Identifier: Apache-2.0
"""The porting guides of bindings/python/README.md: the ported scripts
(bindings/python/examples/port_horovod.py under disttrainrun, port_ddp.py started as
torchrun starts it) train on 2 ranks, end with identical parameters and a lower loss;
port_ddp.py ends with the very parameters of its torch DDP original (examples/before/,
run on torch.distributed's gloo); and the README shows the diff of each port."""
import difflib
import re
import subprocess
import time

import pytest

torch = pytest.importorskip(
    "torch", reason="PyTorch is not installed (Debian: apt-get install python3-torch)")

import dtpy  # noqa: E402
from conftest import build_path, clean_env, run  # noqa: E402

EXAMPLES = dtpy.PACKAGE_DIR / "examples"
README = dtpy.PACKAGE_DIR / "README.md"
SUMMARY = re.compile(r"rank (\d+): loss ([\d.]+) -> ([\d.]+), parameters ([0-9a-f]{16})")
PAIRS = [("before/horovod_train.py", "port_horovod.py"), ("before/ddp_train.py", "port_ddp.py")]


def summaries(outputs, np=2):
    """{rank: (first loss, last loss, parameter digest)} from the scripts' last lines."""
    found = {}
    for text in outputs:
        for m in SUMMARY.finditer(text):
            found[int(m.group(1))] = (float(m.group(2)), float(m.group(3)), m.group(4))
    assert sorted(found) == list(range(np)), "\n".join(outputs)
    return found


def assert_trained_in_step(found):
    digests = {d for _, _, d in found.values()}
    assert len(digests) == 1, f"ranks ended with different parameters: {found}"
    for rank, (first, last, _) in found.items():
        assert last < 0.5 * first, f"rank {rank}: the loss did not go down: {found}"


def test_ported_horovod_script_on_two_ranks_with_disttrainrun():
    launcher = build_path("core", "launch", "disttrainrun")
    r = run([launcher, "-np", 2, "--timeout", 80, "--", dtpy.PYTHON,
             EXAMPLES / "port_horovod.py"], env=dtpy.job_env(), timeout=90)
    assert r.returncode == 0, r.stdout + r.stderr
    assert_trained_in_step(summaries([r.stdout]))


def run_as_torchrun(script, extra_env, np=2, timeout=90):
    """Starts `script` as torchrun would on np ranks (RANK, WORLD_SIZE, LOCAL_RANK,
    LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT) plus extra_env; returns the stdouts. A
    failing rank fails the test; a hang kills every rank and fails it."""
    port = dtpy.free_ports(2)  # torch's store at MASTER_PORT, disttrain's above it
    procs = []
    for rank in range(np):
        env = dtpy.job_env({"RANK": str(rank), "WORLD_SIZE": str(np),
                            "LOCAL_RANK": str(rank), "LOCAL_WORLD_SIZE": str(np),
                            "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
                            **extra_env})
        procs.append(subprocess.Popen([dtpy.PYTHON, str(script)], env=clean_env(env),
                                      text=True, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE))
    outputs, deadline = [], time.monotonic() + timeout
    try:
        for p in procs:
            out, err = p.communicate(timeout=max(0.1, deadline - time.monotonic()))
            assert p.returncode == 0, f"{script.name}:\n{out}{err}"
            outputs.append(out)
    except subprocess.TimeoutExpired:
        pytest.fail(f"a rank of {script.name} did not finish within {timeout} s (hang)")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()
    return outputs


DISTTRAIN_TORCHRUN_ENV = {"DISTTRAIN_JOB_TOKEN": "porting-guide-test-token",
                          "DISTTRAIN_TRANSPORT": "tcp", "DISTTRAIN_TIMEOUT": "60"}


def test_ported_ddp_script_on_two_ranks_started_as_torchrun_does():
    found = summaries(run_as_torchrun(EXAMPLES / "port_ddp.py", DISTTRAIN_TORCHRUN_ENV))
    assert_trained_in_step(found)


def test_ported_ddp_script_computes_what_the_torch_ddp_original_computes():
    # The original on torch.distributed (gloo) and the port on disttrain: the same
    # averaged gradients (a sum of two values, halved, is exact in any order), the same
    # buffers from rank 0, so the same parameters to the last bit and the same losses.
    dist = pytest.importorskip("torch.distributed")
    if not dist.is_available() or not dist.is_gloo_available():
        pytest.skip("this torch has no torch.distributed gloo backend")
    original = summaries(run_as_torchrun(EXAMPLES / "before" / "ddp_train.py", {}))
    ported = summaries(run_as_torchrun(EXAMPLES / "port_ddp.py", DISTTRAIN_TORCHRUN_ENV))
    assert original == ported, f"torch DDP: {original}\ndisttrain: {ported}"


def readme_diff(before, after):
    a = (EXAMPLES / before).read_text().splitlines(keepends=True)
    b = (EXAMPLES / after).read_text().splitlines(keepends=True)
    return "".join(difflib.unified_diff(a, b, f"examples/{before}", f"examples/{after}",
                                        n=1))


@pytest.mark.parametrize("before,after", PAIRS)
def test_readme_shows_the_diff_of_each_port(before, after):
    diff = readme_diff(before, after)
    assert diff, f"{before} and {after} are the same"
    assert f"```diff\n{diff}```" in README.read_text(), (
        f"bindings/python/README.md does not show the current diff of {after}; "
        f"paste this in:\n```diff\n{diff}```")
