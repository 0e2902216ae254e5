# SPDX-License-Identifier: Apache-2.0
"""Jobs started by a real Slurm with no DISTTRAIN_RANK, _STORE_ADDR or _JOB_TOKEN: the
ranks meet through Slurm's PMI2 (core/bootstrap/slurm_pmi2.h).

A one-node cluster (slurm_cluster.py) runs: srun --mpi=pmi2 of disttrain-perf; an sbatch
--wait script whose plain srun (the cluster's MpiDefault is pmi2) runs a short
disttrain-train; disttrainrun inside an srun task (its DISTTRAIN_* win over Slurm); srun
--mpi=pmix with DISTTRAIN_TRANSPORT=mpi (MPI wires itself, no store); srun --mpi=none,
which must fail at once with the message saying how to start the job; and a job token set
alone, which must be told that its store address is missing. The
jobs' only DISTTRAIN_* variables are the plugin folders of the build tree, a short
DISTTRAIN_TIMEOUT and, where a test is about them, the transport or the log level that
shows where rank, store and token came from. Skipped, with the daemon's own words, where
Slurm cannot run.
"""
import json
import pathlib
import time

import pytest

from conftest import BUILD, build_path
from slurm_cluster import Cluster, Unavailable, missing_programs

TCP = BUILD / "plugins" / "transport" / "tcp"
ONEDNN = BUILD / "plugins" / "compute" / "onednn"
DATA = pathlib.Path("/usr/share/datasets/fashion-mnist")


@pytest.fixture(scope="module")
def cluster():
    missing = missing_programs()
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed (apt-get install slurm-wlm "
                    "slurm-client munge libpmi2-0)")
    try:
        c = Cluster()
    except Unavailable as e:
        pytest.skip(f"Slurm cannot run here: {e}")
    try:
        yield c
    finally:
        c.close()


def job_env(**extra):
    return {"DISTTRAIN_PLUGIN_PATH": str(TCP), "DISTTRAIN_TIMEOUT": "30", **extra}


def test_srun_pmi2_runs_disttrain_perf_on_two_ranks(cluster):
    perf = build_path("models", "tools", "disttrain-perf")
    r = cluster.run(["srun", "-n", "2", "--mpi=pmi2", "--time=1", perf, "-b", "8", "-e", "64K",
                     "-f", "8", "-n", "3", "-w", "1", "--json"],
                    extra_env=job_env(DISTTRAIN_LOG_LEVEL="info"))
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads(r.stdout)  # only rank 0 prints
    assert report["ranks"] == 2
    assert report["wrong"] == 0
    assert [row["size"] for row in report["rows"]] == [8, 64, 512, 4096, 32768]
    assert all(row["wrong"] == 0 for row in report["rows"])
    # Both ranks say where rank, store and token came from; rank 0 serves the store.
    assert r.stderr.count("rank, store and token from Slurm PMI2") == 2, r.stderr
    assert "rank 0 serves the rendezvous store at 127.0.0.1:" in r.stderr, r.stderr


@pytest.mark.skipif(not (DATA / "train-images-idx3-ubyte.gz").exists(),
                    reason="Fashion-MNIST is not installed (apt-get install "
                           "dataset-fashion-mnist)")
def test_sbatch_script_with_plain_srun_trains(cluster, tmp_path):
    train = build_path("models", "programs", "disttrain-train")
    if not (ONEDNN / "libdt-compute-onednn.so").exists():
        pytest.skip("the oneDNN compute plugin was not built")
    out = tmp_path / "job.out"
    metrics = tmp_path / "metrics.jsonl"
    script = tmp_path / "train.sbatch"
    script.write_text(f"""#!/bin/sh
#SBATCH --ntasks=2
#SBATCH --time=1
#SBATCH --output={out}
srun -n 2 {train} --epochs 1 --batch-size 50 --train-limit 400 --test-limit 200 \\
  --threads 1 --no-progress --metrics-file {metrics}
""")
    r = cluster.run(["sbatch", "--wait", script], timeout=90,
                    extra_env=job_env(DISTTRAIN_PLUGIN_PATH=f"{TCP}:{ONEDNN}"))
    log = out.read_text() if out.exists() else "(no job output)"
    assert r.returncode == 0, f"{r.stdout}{r.stderr}\n{log}"
    # The job's output holds the trainer's summary (2 ranks), its table and no error.
    assert "2 rank(s) over tcp" in log, log
    lines = log.splitlines()
    header = next(i for i, l in enumerate(lines) if l.split()[:1] == ["epoch"])
    assert lines[header].split()[:2] == ["epoch", "main/loss"], log
    assert lines[header + 1].split()[0] == "1", log
    assert "error" not in log.lower(), log
    rows = [json.loads(l) for l in metrics.read_text().splitlines()]
    assert len(rows) == 1 and rows[0]["epoch"] == 1
    # 400 images in batches of 50 on each of 2 ranks: 4 steps.
    assert rows[0]["iteration"] == 4, rows


def test_disttrainrun_inside_an_srun_task_wins_over_slurm(cluster, disttrainrun):
    perf = build_path("models", "tools", "disttrain-perf")
    r = cluster.run(["srun", "-n", "1", "--mpi=pmi2", "--time=1", disttrainrun, "-np", "2",
                     "--", perf, "-b", "8", "-e", "64", "-n", "2", "-w", "1", "--json"],
                    extra_env=job_env(DISTTRAIN_LOG_LEVEL="info"))
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads("\n".join(l.removeprefix("[0] ") for l in r.stdout.splitlines()))
    assert (report["ranks"], report["wrong"]) == (2, 0), report
    assert r.stderr.count("(from DISTTRAIN_*)") == 2, r.stderr
    assert "Slurm PMI2" not in r.stderr, r.stderr


def test_srun_pmix_with_the_mpi_transport_needs_no_store(cluster):
    mpi = BUILD / "plugins" / "transport" / "mpi"
    if not (mpi / "libdt-transport-mpi.so").exists():
        pytest.skip("the MPI transport plugin was not built")
    perf = build_path("models", "tools", "disttrain-perf")
    r = cluster.run(["srun", "-n", "2", "--mpi=pmix", "--time=1", perf, "-b", "8", "-e", "4K",
                     "-f", "8", "-n", "2", "-w", "1", "--json"],
                    extra_env=job_env(DISTTRAIN_PLUGIN_PATH=str(mpi), DISTTRAIN_TRANSPORT="mpi"))
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads(r.stdout)
    assert (report["ranks"], report["transport"], report["wrong"]) == (2, "mpi", 0), report


def test_srun_without_pmi_fails_promptly_with_what_to_do(cluster):
    perf = build_path("models", "tools", "disttrain-perf")
    start = time.monotonic()
    r = cluster.run(["srun", "-n", "2", "--mpi=none", "--time=1", perf, "-b", "8", "-e", "8"],
                    extra_env=job_env(DISTTRAIN_TIMEOUT="5"), timeout=60)
    elapsed = time.monotonic() - start
    assert r.returncode != 0, r.stdout + r.stderr
    for words in ("PMI_FD is not set", "srun --mpi=pmi2", "DISTTRAIN_STORE_ADDR",
                  "DISTTRAIN_JOB_TOKEN", "disttrainrun"):
        assert words in r.stderr, r.stderr
    assert "rank 0 of 2" in r.stderr and "rank 1 of 2" in r.stderr, r.stderr
    assert elapsed < 30, f"took {elapsed:.1f} s"


def test_srun_with_a_token_alone_names_the_store_address(cluster):
    # srun --mpi=pmi2 sets PMI_RANK as mpirun's Hydra does: the job must still be taken for
    # an srun job that lacks its store address, not for a bare mpirun one (no store, mpi).
    worker = build_path("tests", "integration", "dt_worker")
    r = cluster.run(["srun", "-n", "2", "--mpi=pmi2", "--time=1", worker, "info"],
                    extra_env=job_env(DISTTRAIN_JOB_TOKEN="t" * 32, DISTTRAIN_TIMEOUT="5"),
                    timeout=60)
    assert r.returncode != 0, r.stdout + r.stderr
    for rank in range(2):
        assert (f"DISTTRAIN_JOB_TOKEN is set but DISTTRAIN_STORE_ADDR is not (rank {rank} "
                "of 2 from srun)") in r.stderr, r.stderr
