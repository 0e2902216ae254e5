// SPDX-License-Identifier: Apache-2.0
//! A 2+-rank check of uneven blocks, process sets and join in the Rust binding:
//! `disttrainrun -np 2 -- target/.../uneven`. Rank r contributes r+1 elements to an
//! allgatherv and sends j+1 elements to rank j in an alltoallv; ranks that disagree on a
//! count must get DT_ERR_MISMATCH and keep a working context; a group of rank 0 alone
//! runs an allreduce; rank 0 joins first. Exits 1 with a message on any mismatch.
use disttrain::{sys, Context, ReduceOp};

fn run() -> disttrain::Result<Vec<String>> {
    let ctx = Context::new()?;
    let (rank, size) = (ctx.rank(), ctx.size());
    let mut failures = Vec::new();

    // allgatherv: rank r sends r+1 copies of r.
    let counts: Vec<usize> = (1..=size).collect();
    let mut gathered = vec![-1i64; counts.iter().sum()];
    ctx.named("gv").allgatherv(&vec![rank as i64; rank + 1], &mut gathered, &counts)?;
    let want: Vec<i64> = (0..size).flat_map(|r| vec![r as i64; r + 1]).collect();
    if gathered != want {
        failures.push(format!("allgatherv: got {gathered:?} want {want:?}"));
    }

    // The same with the sizes negotiated: each rank passes only its own elements.
    let (negotiated, got_counts) = ctx.allgather_uneven(&vec![rank as i64; rank + 1])?;
    if negotiated != want || got_counts != counts {
        failures.push(format!("allgather_uneven: got {negotiated:?} ({got_counts:?})"));
    }

    // alltoallv: rank i sends j+1 elements of value 10*i+j to rank j.
    let sendcounts: Vec<usize> = (0..size).map(|j| j + 1).collect();
    let recvcounts = vec![rank + 1; size];
    let send: Vec<f32> = (0..size).flat_map(|j| vec![(10 * rank + j) as f32; j + 1]).collect();
    let mut recv = vec![0f32; (rank + 1) * size];
    ctx.alltoallv(&send, &sendcounts, &mut recv, &recvcounts)?;
    let want: Vec<f32> = (0..size).flat_map(|i| vec![(10 * i + rank) as f32; rank + 1]).collect();
    if recv != want {
        failures.push(format!("alltoallv: got {recv:?} want {want:?}"));
    }

    // Rank 1 expects one element more from rank 0 than rank 0 sends: an error on every
    // rank, and the context goes on.
    if size > 1 {
        let mut expect = vec![1usize; size];
        if rank == 1 {
            expect[0] = 2;
        }
        let mut recv = vec![0u8; expect.iter().sum()];
        match ctx.named("bad").alltoallv(&vec![7u8; size], &vec![1; size], &mut recv, &expect) {
            Err(e) if e.status == sys::DT_ERR_MISMATCH && e.message.contains("rank 1 expects") => {}
            other => failures.push(format!("disagreeing alltoallv: got {other:?}")),
        }
    }

    // A process set of rank 0 alone.
    match ctx.group(&[0])? {
        Some(g) => {
            let mut x = [5i32; 4];
            g.allreduce_in_place(&mut x, ReduceOp::Sum)?;
            if (g.rank(), g.size(), x) != (0, 1, [5; 4]) {
                failures.push(format!("group: rank {} size {} sum {x:?}", g.rank(), g.size()));
            }
        }
        None if rank == 0 => failures.push("group: rank 0 is no member".into()),
        None => {}
    }

    // Join: rank 0 has no more data; the others allreduce once more without it.
    if rank != 0 {
        let mut x = [1f64; 3];
        ctx.named("after_join").allreduce_in_place(&mut x, ReduceOp::Sum)?;
        if x != [(size - 1) as f64; 3] {
            failures.push(format!("allreduce while rank 0 joined: got {x:?}"));
        }
    }
    let last = ctx.join()?;
    if size > 1 && last == 0 {
        failures.push("join: rank 0 joined first but is reported last".into());
    }
    if failures.is_empty() {
        println!("rank {rank}/{size}: uneven example OK");
    }
    Ok(failures)
}

fn main() {
    match run() {
        Ok(f) if f.is_empty() => {}
        Ok(f) => {
            eprintln!("uneven example FAILED: {}", f.join("; "));
            std::process::exit(1);
        }
        Err(e) => {
            eprintln!("uneven example: {e}");
            std::process::exit(1);
        }
    }
}
