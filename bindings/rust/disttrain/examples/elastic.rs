// SPDX-License-Identifier: Apache-2.0
//! An elastic job on the Rust binding: `disttrainrun -np 3 --elastic -- .../elastic`.
//! Ranks run STEPS allreduces of 1 (each must sum to the job's size), asking at every
//! step boundary whether new ranks wait (`poll_joiners`). At step 3 the last rank of the
//! first membership exits without leaving the job cleanly, as a crash would; the others
//! see `ErrorKind::PeerLost`, `reform` without it and run the step again. Each survivor
//! prints "rank R/S: elastic example OK after N re-form(s)"; exits 1 on a wrong sum.
use disttrain::{Context, ErrorKind, ReduceOp};

const STEPS: usize = 8;

fn run() -> disttrain::Result<String> {
    let mut ctx = Context::new()?;
    let victim = ctx.size() - 1;
    let first_rank = ctx.rank();
    let mut reforms = 0;
    let mut step = 0;
    while step < STEPS {
        if ctx.poll_joiners()? > 0 {
            ctx.reform()?;
            reforms += 1;
            continue;
        }
        if step == 3 && first_rank == victim && victim > 0 {
            std::process::exit(3); // no Drop: the peers see this rank vanish
        }
        let mut one = [1i64];
        match ctx.named("step").allreduce_in_place(&mut one, ReduceOp::Sum) {
            Err(e) if e.kind == ErrorKind::PeerLost => {
                ctx.reform()?;
                reforms += 1;
                // Everyone takes rank 0's step (a survivor may have finished this one).
                let mut s = [step as i64];
                ctx.named("sync.step").broadcast(&mut s, 0)?;
                step = s[0] as usize;
                continue;
            }
            Err(e) => return Err(e),
            Ok(()) => {}
        }
        if one[0] != ctx.size() as i64 {
            eprintln!("step {step}: sum {} on a job of {} ranks", one[0], ctx.size());
            std::process::exit(1);
        }
        step += 1;
    }
    Ok(format!("rank {}/{}: elastic example OK after {reforms} re-form(s)", ctx.rank(),
               ctx.size()))
}

fn main() {
    match run() {
        Ok(line) => println!("{line}"),
        Err(e) => {
            eprintln!("elastic example failed: {e}");
            std::process::exit(1);
        }
    }
}
