// SPDX-License-Identifier: Apache-2.0
//! A 2+-rank check of the Rust binding: `disttrainrun -np 2 -- target/.../allreduce`.
//! Every rank contributes rank+1; the sum, average, max and a broadcast are checked, over
//! blocking and scoped asynchronous calls. Exits 1 with a message on any mismatch.
use disttrain::{Context, ReduceOp};

fn run() -> disttrain::Result<Vec<String>> {
    let ctx = Context::new()?;
    let (rank, size) = (ctx.rank(), ctx.size());
    let mut failures = Vec::new();
    let n = 1 << 16; // large enough to take the pipelined path
    let mine = (rank + 1) as f32;
    let total = (size * (size + 1) / 2) as f32;

    let mut sum = vec![0f32; n];
    ctx.named("sum").allreduce(&vec![mine; n], &mut sum, ReduceOp::Sum)?;
    if sum.iter().any(|&x| x != total) {
        failures.push(format!("sum: got {} want {total}", sum[0]));
    }

    let mut avg = vec![mine as f64; 1000];
    let mut max = vec![rank as i64; 7];
    let mut bcast = vec![if rank == 1 { 42u8 } else { 0 }; 333];
    let mut gathered = vec![0i32; 3 * size];
    let mine3 = [rank as i32; 3];
    ctx.scope(|s| -> disttrain::Result<()> {
        let r1 = s.allreduce_in_place_async(&mut avg, ReduceOp::Avg)?;
        let r2 = s.named("max").allreduce_in_place_async(&mut max, ReduceOp::Max)?;
        let r3 = s.broadcast_async(&mut bcast, 1 % size)?;
        let r4 = s.allgather_async(&mine3, &mut gathered)?;
        r1.wait()?;
        r2.wait()?;
        r3.wait()?;
        r4.wait()
    })?;
    let want_avg = total as f64 / size as f64;
    if avg.iter().any(|&x| (x - want_avg).abs() > 1e-12) {
        failures.push(format!("avg: got {} want {want_avg}", avg[0]));
    }
    if max.iter().any(|&x| x != size as i64 - 1) {
        failures.push(format!("max: got {:?}", max));
    }
    let want_b = if size > 1 { 42 } else { 0 };
    if bcast.iter().any(|&x| x != want_b) {
        failures.push(format!("broadcast: got {} want {want_b}", bcast[0]));
    }
    let want_g: Vec<i32> = (0..size as i32).flat_map(|r| [r; 3]).collect();
    if gathered != want_g {
        failures.push(format!("allgather: got {gathered:?}"));
    }
    ctx.barrier()?;
    if failures.is_empty() {
        println!("rank {rank}/{size}: allreduce example OK");
    }
    Ok(failures)
}

fn main() {
    match run() {
        Ok(f) if f.is_empty() => {}
        Ok(f) => {
            eprintln!("allreduce example FAILED: {}", f.join("; "));
            std::process::exit(1);
        }
        Err(e) => {
            eprintln!("allreduce example: {e}");
            std::process::exit(1);
        }
    }
}
