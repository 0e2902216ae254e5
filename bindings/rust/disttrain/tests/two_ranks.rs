// SPDX-License-Identifier: Apache-2.0
//! Runs examples/allreduce and examples/uneven under `disttrainrun -np 2` and checks both
//! ranks agree with the expected results. Needs the build tree's launcher (found by build.rs); without one the
//! test says so and does nothing (scripts/rust-tests.sh always has one).
mod common;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

fn example_named(name: &str) -> PathBuf {
    // target/<profile>/deps/two_ranks-<hash> -> target/<profile>/examples/<name>
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().join("examples").join(name)
}

#[test]
fn allreduce_example_on_two_ranks() {
    run_example_on_two_ranks("allreduce");
}

#[test]
fn uneven_example_on_two_ranks() {
    run_example_on_two_ranks("uneven");
}

fn run_example_on_two_ranks(name: &str) {
    let launcher = env!("DISTTRAIN_BUILD_LAUNCHER");
    if launcher.is_empty() {
        eprintln!("no disttrainrun in the build tree: 2-rank test not run");
        return;
    }
    let example = example_named(name);
    assert!(example.exists(), "{} missing: cargo test builds examples", example.display());
    common::setup_env();
    let mut cmd = Command::new(launcher);
    cmd.args(["-np", "2", "--timeout", "60", "--"]).arg(&example);
    for (k, _) in std::env::vars() {
        if k.starts_with("DISTTRAIN_") && k != "DISTTRAIN_PLUGIN_PATH" {
            cmd.env_remove(k);
        }
    }
    let start = Instant::now();
    let out = cmd.output().expect("run disttrainrun");
    assert!(start.elapsed() < Duration::from_secs(90));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "job failed:\n{stdout}\n{stderr}");
    for r in 0..2 {
        assert!(stdout.contains(&format!("rank {r}/2: {name} example OK")),
                "rank {r} did not report OK:\n{stdout}\n{stderr}");
    }
}
