// SPDX-License-Identifier: Apache-2.0
//! The safe API in a single process (size 1): results, length checks, requests, errors.
mod common;

use std::time::Duration;

use disttrain::{Bf16, Context, ErrorKind, Params, ReduceOp, F16};

#[test]
fn identity_of_a_single_process() {
    let ctx = common::single();
    assert_eq!((ctx.local_rank(), ctx.local_size()), (0, 1));
    // "auto" takes the fastest transport installed (beside the library, in the install
    // folder), so the name depends on the machine: one transport, the one asked for if
    // DISTTRAIN_TRANSPORT names one. explicit_params_for_a_single_process pins tcp.
    let name = ctx.transport();
    assert!(!name.is_empty() && !name.contains(','), "transport {name:?}");
    match std::env::var("DISTTRAIN_TRANSPORT") {
        Ok(asked) if !asked.contains(',') && asked != "auto" => assert_eq!(name, asked),
        _ => {}
    }
    assert!(!disttrain::version().is_empty());
}

#[test]
fn blocking_collectives_of_one_rank() {
    let ctx = common::single();
    let send = [1.5f32, -2.0, 3.0];
    let mut recv = [0f32; 3];
    ctx.allreduce(&send, &mut recv, ReduceOp::Sum).unwrap();
    assert_eq!(recv, send);

    let mut ints = [7i64, -9, 11];
    ctx.allreduce_in_place(&mut ints, ReduceOp::Max).unwrap();
    assert_eq!(ints, [7, -9, 11]);

    let mut b = [4u8, 5, 6];
    ctx.broadcast(&mut b, 0).unwrap();
    assert_eq!(b, [4, 5, 6]);

    let mut gathered = [0i32; 2];
    ctx.allgather(&[3, 4], &mut gathered).unwrap();
    assert_eq!(gathered, [3, 4]);

    let mut rs = [0f64; 2];
    ctx.reduce_scatter(&[0.5, 0.25], &mut rs, ReduceOp::Sum).unwrap();
    assert_eq!(rs, [0.5, 0.25]);

    let mut a2a = [0i8; 2];
    ctx.alltoall(&[-1, 1], &mut a2a).unwrap();
    assert_eq!(a2a, [-1, 1]);

    ctx.named("sync").barrier().unwrap();
}

#[test]
fn sixteen_bit_floats() {
    let ctx = common::single();
    let mut h: Vec<F16> = [1.0f32, 2.5, -3.0].iter().map(|&x| F16::from_f32(x)).collect();
    ctx.allreduce_in_place(&mut h, ReduceOp::Avg).unwrap();
    assert_eq!(h.iter().map(|x| x.to_f32()).collect::<Vec<_>>(), [1.0, 2.5, -3.0]);
    let mut b: Vec<Bf16> = [0.5f32, 8.0].iter().map(|&x| Bf16::from_f32(x)).collect();
    ctx.named("bf16").allreduce_in_place(&mut b, ReduceOp::Sum).unwrap();
    assert_eq!(b.iter().map(|x| x.to_f32()).collect::<Vec<_>>(), [0.5, 8.0]);
}

#[test]
fn wrong_lengths_are_errors_not_ub() {
    let ctx = common::single();
    let mut short = [0f32; 2];
    let e = ctx.allreduce(&[1.0f32; 3], &mut short, ReduceOp::Sum).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Usage);
    assert_eq!(e.status, disttrain::sys::DT_ERR_INVALID_ARGUMENT);
    assert!(e.message.contains("send has 3 elements but recv has 2"), "{e}");

    let e = ctx.allgather(&[1i32, 2], &mut [0i32; 3]).unwrap_err();
    assert!(e.message.contains("allgather"), "{e}");
    let e = ctx.reduce_scatter(&[1i32; 3], &mut [0i32; 2], ReduceOp::Sum).unwrap_err();
    assert!(e.message.contains("reduce_scatter"), "{e}");
    let e = ctx.broadcast(&mut [0u8; 4], 1).unwrap_err();
    assert!(e.message.contains("root 1 is not a rank"), "{e}");
    assert!(e.to_string().starts_with("DT_ERR_INVALID_ARGUMENT: "), "{e}");
}

#[test]
fn scoped_requests_complete_and_return_results() {
    let ctx = common::single();
    let mut a = vec![2.0f32; 1000];
    let mut b = vec![0i64; 10];
    let src: Vec<i64> = (0..10).collect();
    ctx.scope(|s| {
        let mut ra = s.allreduce_in_place_async(&mut a, ReduceOp::Prod).unwrap();
        let rb = s.named("copy").allreduce_async(&src, &mut b, ReduceOp::Sum).unwrap();
        let rc = s.barrier_async().unwrap();
        assert!(ra.wait_timeout(Duration::from_secs(30)).unwrap());
        assert!(ra.test().unwrap()); // done stays done
        rb.wait().unwrap();
        rc.wait().unwrap();
    });
    assert!(a.iter().all(|&x| x == 2.0));
    assert_eq!(b, src);
}

#[test]
fn dropped_and_forgotten_requests_are_finished_by_the_scope() {
    let ctx = common::single();
    let mut a = vec![1u8; 4096];
    let mut b = vec![3i32; 64];
    ctx.scope(|s| {
        drop(s.broadcast_async(&mut a, 0).unwrap()); // Drop waits
        std::mem::forget(s.allreduce_in_place_async(&mut b, ReduceOp::Min).unwrap());
    }); // the scope waits for the forgotten one
    assert!(a.iter().all(|&x| x == 1));
    assert!(b.iter().all(|&x| x == 3));
}

#[test]
fn async_length_checks() {
    let ctx = common::single();
    let send = [1f32; 4];
    let mut recv = [0f32; 5];
    ctx.scope(|s| {
        let e = s.allreduce_async(&send, &mut recv, ReduceOp::Sum).err().unwrap();
        assert_eq!(e.kind, ErrorKind::Usage);
    });
}

#[test]
fn bad_config_is_an_error_with_the_library_message() {
    common::setup_env();
    let params = Params { transport: Some("TCP!".into()), ..Params::default() };
    let e = Context::with_params(&params).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Usage);
    assert_eq!(e.name, "DT_ERR_INVALID_CONFIG");
    assert!(e.message.contains("TCP!"), "{e}");

    let params = Params { transport: Some("nosuch".into()), ..Params::default() };
    let e = Context::with_params(&params).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Plugin);
    assert!(e.message.contains("libdt-transport-nosuch.so"), "{e}");

    let params = Params { store_addr: Some("a\0b".into()), ..Params::default() };
    assert!(Context::with_params(&params).unwrap_err().message.contains("NUL"));
}

#[test]
fn a_name_or_setting_with_a_nul_is_an_error_naming_it_and_where() {
    // Ranks match operations by name: "grad\0weight" must not reach the library as "grad"
    // (nor be rewritten), where it would match "grad\0bias" of another rank.
    let ctx = common::single();
    let expect = "name \"grad\\0weight\" holds a NUL byte at position 4";
    let mut buf = [1f32; 2];
    let e = ctx.named("grad\0weight").allreduce_in_place(&mut buf, ReduceOp::Sum).unwrap_err();
    assert_eq!((e.kind, e.name.as_str()), (ErrorKind::Usage, "DT_ERR_INVALID_ARGUMENT"));
    assert!(e.message.contains(expect), "{e}");
    assert!(ctx.named("grad\0weight").barrier().unwrap_err().message.contains(expect));
    ctx.scope(|s| {
        let e = s.named("grad\0weight").allreduce_in_place_async(&mut buf, ReduceOp::Sum)
            .err().expect("a NUL in the name is refused");
        assert!(e.message.contains(expect), "{e}");
        assert!(s.named("grad\0weight").barrier_async().err().unwrap().message.contains(expect));
    });
    ctx.named("grad.weight").allreduce_in_place(&mut buf, ReduceOp::Sum).unwrap();

    common::setup_env();
    let params = Params { transport: Some("tcp\0ucx".into()), ..Params::default() };
    let e = Context::with_params(&params).err().expect("a NUL in a setting is refused");
    assert!(e.message.contains("Params::transport \"tcp\\0ucx\" holds a NUL byte at \
                                position 3"), "{e}");
}

#[test]
fn explicit_params_for_a_single_process() {
    common::setup_env();
    let params = Params { rank: Some(0), size: Some(1), transport: Some("tcp".into()),
                          timeout: Some(Duration::from_secs(30)), ..Params::default() };
    let ctx = Context::with_params(&params).unwrap();
    assert_eq!((ctx.rank(), ctx.size(), ctx.transport()), (0, 1, "tcp"));
    ctx.abort().unwrap();
    let e = ctx.barrier().unwrap_err();
    assert_eq!(e.kind, ErrorKind::PeerLost, "{e}");
}

#[test]
fn a_context_name_is_checked_and_unique_among_live_contexts() {
    common::setup_env();
    let named = |name: &str| Params { name: Some(name.into()), ..Params::default() };
    let ctx = Context::with_params(&named("rust.named")).unwrap();
    let e = Context::with_params(&named("rust.named")).err().expect("a second live name");
    assert_eq!(e.name, "DT_ERR_INVALID_CONFIG", "{e}");
    assert!(e.message.contains("a live context of this process already has this name"), "{e}");
    drop(ctx);
    Context::with_params(&named("rust.named")).unwrap(); // free again once destroyed
    let e = Context::with_params(&named("a b")).err().expect("a malformed name");
    assert!(e.message.contains("dt_context_params_t.name='a b' is not a context name"), "{e}");
}

#[test]
fn uneven_collectives_groups_and_join_of_one_rank() {
    let ctx = common::single();
    let mut out = [0i64; 3];
    ctx.named("gv").allgatherv(&[1i64, 2, 3], &mut out, &[3]).unwrap();
    assert_eq!(out, [1, 2, 3]);
    let mut out = [0u8; 2];
    ctx.alltoallv(&[7u8, 8], &[2], &mut out, &[2]).unwrap();
    assert_eq!(out, [7, 8]);
    // Counts that do not fit the slices are an Err before the library reads anything.
    let e = ctx.allgatherv(&[1i64], &mut [0i64; 2], &[1, 1]).unwrap_err();
    assert_eq!(e.name, "DT_ERR_INVALID_ARGUMENT");
    assert!(e.message.contains("2 counts") && e.message.contains("1 ranks"), "{e}");
    let e = ctx.alltoallv(&[1f32; 3], &[2], &mut [0f32; 3], &[3]).unwrap_err();
    assert!(e.message.contains("sendcounts [2] sums to 2"), "{e}");
    // The library's own check: this rank's count must be what it sends.
    let e = ctx.allgatherv(&[1i64], &mut [0i64; 2], &[2]).unwrap_err();
    assert!(e.message.contains("recvcounts[0] = 2"), "{e}");

    let group = ctx.group(&[0]).unwrap().expect("rank 0 is a member");
    assert_eq!((group.rank(), group.size()), (0, 1));
    let mut x = [3i32; 2];
    group.allreduce_in_place(&mut x, ReduceOp::Sum).unwrap();
    assert_eq!(x, [3, 3]);
    drop(group);
    assert_eq!(ctx.group(&[1]).unwrap_err().name, "DT_ERR_INVALID_ARGUMENT");
    assert_eq!(ctx.join().unwrap(), 0);
}
