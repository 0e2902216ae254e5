// SPDX-License-Identifier: Apache-2.0
//! Per-call parameters in a single process: host and auto run on slices, device memory
//! is refused with the library's DT_ERR_UNSUPPORTED, and a negative device is named.
mod common;

use disttrain::{ErrorKind, Memory, OpParams, ReduceOp};

#[test]
fn host_and_auto_run_on_slices() {
    let ctx = common::single();
    let cases = [(OpParams::default(), Memory::Host), (OpParams::auto(), Memory::Auto)];
    for (params, memory) in cases {
        assert_eq!(params.memory(), memory);
        let mut recv = [0f32; 3];
        ctx.with_op_params(&params)
            .allreduce(&[1.0, 2.0, 3.0], &mut recv, ReduceOp::Sum)
            .unwrap();
        assert_eq!(recv, [1.0, 2.0, 3.0]);
        let mut b = [4u8, 5];
        ctx.named("b").with_op_params(&params).broadcast(&mut b, 0).unwrap();
        ctx.with_op_params(&params).barrier().unwrap();
    }
}

#[test]
fn device_memory_is_unsupported_without_a_memory_provider() {
    let ctx = common::single();
    // SAFETY: the call is refused before it touches the buffers (no memory provider).
    let params = unsafe { OpParams::on_device(0, std::ptr::null_mut()) };
    let mut buf = [1i32, 2];
    let err = ctx.named("grad.w").with_op_params(&params)
        .allreduce_in_place(&mut buf, ReduceOp::Sum).unwrap_err();
    assert_eq!(err.status, disttrain::sys::DT_ERR_UNSUPPORTED);
    assert_eq!(err.kind, ErrorKind::Usage);
    assert!(err.message.contains("'grad.w'"), "{}", err.message);
    assert!(err.message.contains("needs a memory provider"), "{}", err.message);
    let mut out = [0i32; 2];
    assert!(ctx.with_op_params(&params).allgather(&buf, &mut out).is_err());
}

#[test]
fn a_negative_device_is_named() {
    let ctx = common::single();
    let params = OpParams::host().with_device(-3);
    let err = ctx.with_op_params(&params).barrier().unwrap_err();
    assert_eq!(err.status, disttrain::sys::DT_ERR_INVALID_ARGUMENT);
    assert!(err.message.contains("params->device -3"), "{}", err.message);
}
