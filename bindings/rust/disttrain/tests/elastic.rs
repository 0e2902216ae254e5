// SPDX-License-Identifier: Apache-2.0
//! `Context::reform` and `Context::poll_joiners`: refused or idle outside an elastic job,
//! and a 3-rank elastic job under disttrainrun (examples/elastic) that loses a rank and
//! re-forms. The job needs the build tree's launcher (found by build.rs); without one the
//! test says so and does nothing (scripts/rust-tests.sh always has one).
mod common;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use disttrain::ErrorKind;

#[test]
fn reform_outside_an_elastic_job_is_refused() {
    let mut ctx = common::single();
    let err = ctx.reform().expect_err("reform of a job that is not elastic");
    assert_eq!(err.name, "DT_ERR_INVALID_STATE", "{err}");
    assert_eq!(err.kind, ErrorKind::Usage);
    assert!(err.message.contains("DISTTRAIN_ELASTIC=1"), "{err}");
    // The context still works after the refusal.
    assert_eq!((ctx.rank(), ctx.size()), (0, 1));
    let mut x = [5i32];
    ctx.allreduce_in_place(&mut x, disttrain::ReduceOp::Sum).unwrap();
    assert_eq!(x, [5]);
}

#[test]
fn no_joiners_wait_outside_an_elastic_job() {
    let ctx = common::single();
    assert_eq!(ctx.poll_joiners().unwrap(), 0);
}

fn example_named(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().join("examples").join(name)
}

#[test]
fn survivors_reform_without_a_lost_rank() {
    let launcher = env!("DISTTRAIN_BUILD_LAUNCHER");
    if launcher.is_empty() {
        eprintln!("no disttrainrun in the build tree: elastic job not run");
        return;
    }
    let example = example_named("elastic");
    assert!(example.exists(), "{} missing: cargo test builds examples", example.display());
    common::setup_env();
    let mut cmd = Command::new(launcher);
    cmd.args(["-np", "3", "--elastic", "--timeout", "60", "--"]).arg(&example);
    for (k, _) in std::env::vars() {
        if k.starts_with("DISTTRAIN_") && k != "DISTTRAIN_PLUGIN_PATH" {
            cmd.env_remove(k);
        }
    }
    cmd.env("DISTTRAIN_TIMEOUT", "30");
    let start = Instant::now();
    let out = cmd.output().expect("run disttrainrun");
    assert!(start.elapsed() < Duration::from_secs(90));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "job failed:\n{stdout}\n{stderr}");
    for r in 0..2 {
        assert!(stdout.contains(&format!("rank {r}/2: elastic example OK after 1 re-form(s)")),
                "rank {r} did not re-form:\n{stdout}\n{stderr}");
    }
    assert!(stderr.contains("exited with code 3") && stderr.contains("(--elastic)"),
            "{stderr}");
}
