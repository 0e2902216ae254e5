// SPDX-License-Identifier: Apache-2.0
//! Raw declarations of libdisttrain's public C API, `api/disttrain/disttrain.h`, one to
//! one. Everything here is `unsafe` to call; the `disttrain` crate is the safe layer.
//! C enums are `c_int` aliases with constants, because a C enum is an `int` in the ABI
//! and the library may return values this crate does not know yet.
#![allow(non_camel_case_types, non_snake_case)]

use std::os::raw::{c_char, c_int};

pub const DT_API_MAJOR: c_int = 1;
pub const DT_API_MINOR: c_int = 4;

// ---- status codes ---------------------------------------------------------------------
pub type dt_status_t = c_int;
pub const DT_OK: dt_status_t = 0;
pub const DT_INPROGRESS: dt_status_t = 1;
pub const DT_ERR_INVALID_ARGUMENT: dt_status_t = -1;
pub const DT_ERR_INVALID_CONFIG: dt_status_t = -2;
pub const DT_ERR_VERSION: dt_status_t = -3;
pub const DT_ERR_UNSUPPORTED: dt_status_t = -4;
pub const DT_ERR_INVALID_STATE: dt_status_t = -5;
pub const DT_ERR_MISMATCH: dt_status_t = -6;
pub const DT_ERR_NO_MEMORY: dt_status_t = -7;
pub const DT_ERR_PLUGIN_NOT_FOUND: dt_status_t = -100;
pub const DT_ERR_PLUGIN_LOAD: dt_status_t = -101;
pub const DT_ERR_PLUGIN_ABI: dt_status_t = -102;
pub const DT_ERR_TRANSPORT: dt_status_t = -200;
pub const DT_ERR_CONNECT: dt_status_t = -201;
pub const DT_ERR_PROTOCOL: dt_status_t = -202;
pub const DT_ERR_AUTH: dt_status_t = -203;
pub const DT_ERR_STORE: dt_status_t = -204;
pub const DT_ERR_PEER_LOST: dt_status_t = -300;
pub const DT_ERR_ABORTED: dt_status_t = -301;
pub const DT_ERR_TIMEOUT: dt_status_t = -400;
pub const DT_ERR_INTERNAL: dt_status_t = -900;

// The DT_IS_*_ERROR macros.
pub const fn DT_IS_USAGE_ERROR(s: dt_status_t) -> bool {
    s <= -1 && s >= -99
}
pub const fn DT_IS_PLUGIN_ERROR(s: dt_status_t) -> bool {
    s <= -100 && s >= -199
}
pub const fn DT_IS_TRANSPORT_ERROR(s: dt_status_t) -> bool {
    s <= -200 && s >= -299
}
pub const fn DT_IS_PEER_ERROR(s: dt_status_t) -> bool {
    s <= -300 && s >= -399
}
pub const fn DT_IS_TIMEOUT_ERROR(s: dt_status_t) -> bool {
    s <= -400 && s >= -499
}
pub const fn DT_IS_INTERNAL_ERROR(s: dt_status_t) -> bool {
    s <= -900 && s >= -999
}

// ---- versions -------------------------------------------------------------------------
#[repr(C)]
#[derive(Debug, Copy, Clone)]
pub struct dt_version_t {
    pub api_major: c_int,
    pub api_minor: c_int,
    pub patch: c_int,
    pub string: *const c_char,
}

// ---- data types and operators ---------------------------------------------------------
pub type dt_dtype_t = c_int;
pub const DT_FLOAT32: dt_dtype_t = 0;
pub const DT_FLOAT64: dt_dtype_t = 1;
pub const DT_FLOAT16: dt_dtype_t = 2;
pub const DT_BFLOAT16: dt_dtype_t = 3;
pub const DT_INT8: dt_dtype_t = 4;
pub const DT_UINT8: dt_dtype_t = 5;
pub const DT_INT32: dt_dtype_t = 6;
pub const DT_INT64: dt_dtype_t = 7;
pub const DT_DTYPE_COUNT_: dt_dtype_t = 8;

pub type dt_reduce_op_t = c_int;
pub const DT_SUM: dt_reduce_op_t = 0;
pub const DT_AVG: dt_reduce_op_t = 1;
pub const DT_MIN: dt_reduce_op_t = 2;
pub const DT_MAX: dt_reduce_op_t = 3;
pub const DT_PROD: dt_reduce_op_t = 4;
pub const DT_REDUCE_OP_COUNT_: dt_reduce_op_t = 5;

// ---- per-call parameters (API 1.1) ---------------------------------------------------
pub type dt_memory_type_t = c_int;
pub const DT_MEMORY_HOST: dt_memory_type_t = 0;
pub const DT_MEMORY_DEVICE: dt_memory_type_t = 1;
pub const DT_MEMORY_AUTO: dt_memory_type_t = 2;
pub const DT_MEMORY_TYPE_COUNT_: dt_memory_type_t = 3;

pub const DT_OP_PARAM_FIELD_MEMORY_TYPE: u64 = 1 << 0;
pub const DT_OP_PARAM_FIELD_DEVICE: u64 = 1 << 1;
pub const DT_OP_PARAM_FIELD_STREAM: u64 = 1 << 2;

/// Zero it (`dt_op_params_t::default()`) and set field_mask bits for what you fill.
#[repr(C)]
#[derive(Debug, Copy, Clone)]
pub struct dt_op_params_t {
    pub field_mask: u64,
    pub memory_type: dt_memory_type_t,
    pub device: c_int,
    pub stream: *mut std::ffi::c_void,
}

impl Default for dt_op_params_t {
    fn default() -> Self {
        dt_op_params_t { field_mask: 0, memory_type: DT_MEMORY_HOST, device: 0,
                         stream: std::ptr::null_mut() }
    }
}

// ---- context --------------------------------------------------------------------------
#[repr(C)]
pub struct dt_context {
    _private: [u8; 0],
}
pub type dt_context_h = *mut dt_context;

pub const DT_CONTEXT_PARAM_FIELD_RANK: u64 = 1 << 0;
pub const DT_CONTEXT_PARAM_FIELD_SIZE: u64 = 1 << 1;
pub const DT_CONTEXT_PARAM_FIELD_LOCAL_RANK: u64 = 1 << 2;
pub const DT_CONTEXT_PARAM_FIELD_LOCAL_SIZE: u64 = 1 << 3;
pub const DT_CONTEXT_PARAM_FIELD_STORE_ADDR: u64 = 1 << 4;
pub const DT_CONTEXT_PARAM_FIELD_JOB_TOKEN: u64 = 1 << 5;
pub const DT_CONTEXT_PARAM_FIELD_TRANSPORT: u64 = 1 << 6;
pub const DT_CONTEXT_PARAM_FIELD_TIMEOUT_MS: u64 = 1 << 7;
pub const DT_CONTEXT_PARAM_FIELD_ORDERED: u64 = 1 << 8;
pub const DT_CONTEXT_PARAM_FIELD_MEMORY: u64 = 1 << 9;
pub const DT_CONTEXT_PARAM_FIELD_NAME: u64 = 1 << 10;

/// Zero it (`dt_context_params_t::default()`) and set field_mask bits for what you fill.
#[repr(C)]
#[derive(Debug, Copy, Clone)]
pub struct dt_context_params_t {
    pub field_mask: u64,
    pub rank: c_int,
    pub size: c_int,
    pub local_rank: c_int,
    pub local_size: c_int,
    pub store_addr: *const c_char,
    pub job_token: *const c_char,
    pub transport: *const c_char,
    pub timeout_ms: c_int,
    pub ordered: c_int,
    /// Since 1.1.
    pub memory: *const c_char,
    /// Since 1.4.
    pub name: *const c_char,
}

impl Default for dt_context_params_t {
    fn default() -> Self {
        dt_context_params_t {
            field_mask: 0,
            rank: 0,
            size: 0,
            local_rank: 0,
            local_size: 0,
            store_addr: std::ptr::null(),
            job_token: std::ptr::null(),
            transport: std::ptr::null(),
            timeout_ms: 0,
            ordered: 0,
            memory: std::ptr::null(),
            name: std::ptr::null(),
        }
    }
}

// ---- requests -------------------------------------------------------------------------
#[repr(C)]
pub struct dt_request {
    _private: [u8; 0],
}
pub type dt_request_h = *mut dt_request;

extern "C" {
    pub fn dt_status_string(status: dt_status_t) -> *const c_char;
    pub fn dt_last_error() -> *const c_char;
    pub fn dt_get_version(out: *mut dt_version_t) -> dt_status_t;
    pub fn dt_dtype_size(dtype: dt_dtype_t) -> usize;
    pub fn dt_dtype_name(dtype: dt_dtype_t) -> *const c_char;
    pub fn dt_reduce_op_name(op: dt_reduce_op_t) -> *const c_char;
    pub fn dt_memory_type_name(memory_type: dt_memory_type_t) -> *const c_char;

    pub fn dt_context_create_versioned(
        api_major: c_int,
        api_minor: c_int,
        params: *const dt_context_params_t,
        out: *mut dt_context_h,
    ) -> dt_status_t;
    pub fn dt_context_destroy(ctx: dt_context_h) -> dt_status_t;
    pub fn dt_context_abort(ctx: dt_context_h) -> dt_status_t;
    pub fn dt_context_rank(ctx: dt_context_h, rank: *mut c_int) -> dt_status_t;
    pub fn dt_context_size(ctx: dt_context_h, size: *mut c_int) -> dt_status_t;
    pub fn dt_context_local_rank(ctx: dt_context_h, local_rank: *mut c_int) -> dt_status_t;
    pub fn dt_context_local_size(ctx: dt_context_h, local_size: *mut c_int) -> dt_status_t;
    pub fn dt_context_transport(ctx: dt_context_h, name: *mut *const c_char) -> dt_status_t;

    pub fn dt_group_create(
        parent: dt_context_h,
        ranks: *const c_int,
        nranks: c_int,
        out: *mut dt_context_h,
    ) -> dt_status_t;
    pub fn dt_join(ctx: dt_context_h, last_joined_rank: *mut c_int) -> dt_status_t;
    pub fn dt_context_reform(ctx: dt_context_h) -> dt_status_t;
    pub fn dt_context_poll_joiners(ctx: dt_context_h, waiting: *mut c_int) -> dt_status_t;

    pub fn dt_request_test(req: dt_request_h, done: *mut c_int) -> dt_status_t;
    pub fn dt_request_wait(req: dt_request_h, timeout_ms: c_int) -> dt_status_t;
    pub fn dt_request_free(req: dt_request_h) -> dt_status_t;

    pub fn dt_allreduce(
        ctx: dt_context_h,
        name: *const c_char,
        sendbuf: *const std::ffi::c_void,
        recvbuf: *mut std::ffi::c_void,
        count: usize,
        dtype: dt_dtype_t,
        op: dt_reduce_op_t,
    ) -> dt_status_t;
    pub fn dt_allreduce_async(
        ctx: dt_context_h,
        name: *const c_char,
        sendbuf: *const std::ffi::c_void,
        recvbuf: *mut std::ffi::c_void,
        count: usize,
        dtype: dt_dtype_t,
        op: dt_reduce_op_t,
        req: *mut dt_request_h,
    ) -> dt_status_t;

    pub fn dt_broadcast(
        ctx: dt_context_h,
        name: *const c_char,
        buf: *mut std::ffi::c_void,
        count: usize,
        dtype: dt_dtype_t,
        root: c_int,
    ) -> dt_status_t;
    pub fn dt_broadcast_async(
        ctx: dt_context_h,
        name: *const c_char,
        buf: *mut std::ffi::c_void,
        count: usize,
        dtype: dt_dtype_t,
        root: c_int,
        req: *mut dt_request_h,
    ) -> dt_status_t;

    pub fn dt_allgather(
        ctx: dt_context_h,
        name: *const c_char,
        sendbuf: *const std::ffi::c_void,
        recvbuf: *mut std::ffi::c_void,
        sendcount: usize,
        dtype: dt_dtype_t,
    ) -> dt_status_t;
    pub fn dt_allgather_async(
        ctx: dt_context_h,
        name: *const c_char,
        sendbuf: *const std::ffi::c_void,
        recvbuf: *mut std::ffi::c_void,
        sendcount: usize,
        dtype: dt_dtype_t,
        req: *mut dt_request_h,
    ) -> dt_status_t;

    pub fn dt_reduce_scatter(
        ctx: dt_context_h,
        name: *const c_char,
        sendbuf: *const std::ffi::c_void,
        recvbuf: *mut std::ffi::c_void,
        recvcount: usize,
        dtype: dt_dtype_t,
        op: dt_reduce_op_t,
    ) -> dt_status_t;
    pub fn dt_reduce_scatter_async(
        ctx: dt_context_h,
        name: *const c_char,
        sendbuf: *const std::ffi::c_void,
        recvbuf: *mut std::ffi::c_void,
        recvcount: usize,
        dtype: dt_dtype_t,
        op: dt_reduce_op_t,
        req: *mut dt_request_h,
    ) -> dt_status_t;

    pub fn dt_alltoall(
        ctx: dt_context_h,
        name: *const c_char,
        sendbuf: *const std::ffi::c_void,
        recvbuf: *mut std::ffi::c_void,
        count: usize,
        dtype: dt_dtype_t,
    ) -> dt_status_t;
    pub fn dt_alltoall_async(
        ctx: dt_context_h,
        name: *const c_char,
        sendbuf: *const std::ffi::c_void,
        recvbuf: *mut std::ffi::c_void,
        count: usize,
        dtype: dt_dtype_t,
        req: *mut dt_request_h,
    ) -> dt_status_t;

    pub fn dt_barrier(ctx: dt_context_h, name: *const c_char) -> dt_status_t;
    pub fn dt_barrier_async(
        ctx: dt_context_h,
        name: *const c_char,
        req: *mut dt_request_h,
    ) -> dt_status_t;

    // The _ex forms of API 1.1: one more argument, the call's params (NULL: host memory).
    pub fn dt_allreduce_ex(
        ctx: dt_context_h,
        name: *const c_char,
        sendbuf: *const std::ffi::c_void,
        recvbuf: *mut std::ffi::c_void,
        count: usize,
        dtype: dt_dtype_t,
        op: dt_reduce_op_t,
        params: *const dt_op_params_t,
    ) -> dt_status_t;
    pub fn dt_allreduce_async_ex(
        ctx: dt_context_h,
        name: *const c_char,
        sendbuf: *const std::ffi::c_void,
        recvbuf: *mut std::ffi::c_void,
        count: usize,
        dtype: dt_dtype_t,
        op: dt_reduce_op_t,
        params: *const dt_op_params_t,
        req: *mut dt_request_h,
    ) -> dt_status_t;
    pub fn dt_broadcast_ex(
        ctx: dt_context_h,
        name: *const c_char,
        buf: *mut std::ffi::c_void,
        count: usize,
        dtype: dt_dtype_t,
        root: c_int,
        params: *const dt_op_params_t,
    ) -> dt_status_t;
    pub fn dt_broadcast_async_ex(
        ctx: dt_context_h,
        name: *const c_char,
        buf: *mut std::ffi::c_void,
        count: usize,
        dtype: dt_dtype_t,
        root: c_int,
        params: *const dt_op_params_t,
        req: *mut dt_request_h,
    ) -> dt_status_t;
    pub fn dt_allgather_ex(
        ctx: dt_context_h,
        name: *const c_char,
        sendbuf: *const std::ffi::c_void,
        recvbuf: *mut std::ffi::c_void,
        sendcount: usize,
        dtype: dt_dtype_t,
        params: *const dt_op_params_t,
    ) -> dt_status_t;
    pub fn dt_allgather_async_ex(
        ctx: dt_context_h,
        name: *const c_char,
        sendbuf: *const std::ffi::c_void,
        recvbuf: *mut std::ffi::c_void,
        sendcount: usize,
        dtype: dt_dtype_t,
        params: *const dt_op_params_t,
        req: *mut dt_request_h,
    ) -> dt_status_t;
    pub fn dt_reduce_scatter_ex(
        ctx: dt_context_h,
        name: *const c_char,
        sendbuf: *const std::ffi::c_void,
        recvbuf: *mut std::ffi::c_void,
        recvcount: usize,
        dtype: dt_dtype_t,
        op: dt_reduce_op_t,
        params: *const dt_op_params_t,
    ) -> dt_status_t;
    pub fn dt_reduce_scatter_async_ex(
        ctx: dt_context_h,
        name: *const c_char,
        sendbuf: *const std::ffi::c_void,
        recvbuf: *mut std::ffi::c_void,
        recvcount: usize,
        dtype: dt_dtype_t,
        op: dt_reduce_op_t,
        params: *const dt_op_params_t,
        req: *mut dt_request_h,
    ) -> dt_status_t;
    pub fn dt_alltoall_ex(
        ctx: dt_context_h,
        name: *const c_char,
        sendbuf: *const std::ffi::c_void,
        recvbuf: *mut std::ffi::c_void,
        count: usize,
        dtype: dt_dtype_t,
        params: *const dt_op_params_t,
    ) -> dt_status_t;
    pub fn dt_alltoall_async_ex(
        ctx: dt_context_h,
        name: *const c_char,
        sendbuf: *const std::ffi::c_void,
        recvbuf: *mut std::ffi::c_void,
        count: usize,
        dtype: dt_dtype_t,
        params: *const dt_op_params_t,
        req: *mut dt_request_h,
    ) -> dt_status_t;
    // API 1.2: uneven blocks, one count per rank.
    pub fn dt_allgatherv(
        ctx: dt_context_h,
        name: *const c_char,
        sendbuf: *const std::ffi::c_void,
        recvbuf: *mut std::ffi::c_void,
        sendcount: usize,
        recvcounts: *const usize,
        dtype: dt_dtype_t,
    ) -> dt_status_t;
    pub fn dt_allgatherv_async(
        ctx: dt_context_h,
        name: *const c_char,
        sendbuf: *const std::ffi::c_void,
        recvbuf: *mut std::ffi::c_void,
        sendcount: usize,
        recvcounts: *const usize,
        dtype: dt_dtype_t,
        req: *mut dt_request_h,
    ) -> dt_status_t;
    pub fn dt_allgatherv_ex(
        ctx: dt_context_h,
        name: *const c_char,
        sendbuf: *const std::ffi::c_void,
        recvbuf: *mut std::ffi::c_void,
        sendcount: usize,
        recvcounts: *const usize,
        dtype: dt_dtype_t,
        params: *const dt_op_params_t,
    ) -> dt_status_t;
    pub fn dt_allgatherv_async_ex(
        ctx: dt_context_h,
        name: *const c_char,
        sendbuf: *const std::ffi::c_void,
        recvbuf: *mut std::ffi::c_void,
        sendcount: usize,
        recvcounts: *const usize,
        dtype: dt_dtype_t,
        params: *const dt_op_params_t,
        req: *mut dt_request_h,
    ) -> dt_status_t;
    pub fn dt_alltoallv(
        ctx: dt_context_h,
        name: *const c_char,
        sendbuf: *const std::ffi::c_void,
        recvbuf: *mut std::ffi::c_void,
        sendcounts: *const usize,
        recvcounts: *const usize,
        dtype: dt_dtype_t,
    ) -> dt_status_t;
    pub fn dt_alltoallv_async(
        ctx: dt_context_h,
        name: *const c_char,
        sendbuf: *const std::ffi::c_void,
        recvbuf: *mut std::ffi::c_void,
        sendcounts: *const usize,
        recvcounts: *const usize,
        dtype: dt_dtype_t,
        req: *mut dt_request_h,
    ) -> dt_status_t;
    pub fn dt_alltoallv_ex(
        ctx: dt_context_h,
        name: *const c_char,
        sendbuf: *const std::ffi::c_void,
        recvbuf: *mut std::ffi::c_void,
        sendcounts: *const usize,
        recvcounts: *const usize,
        dtype: dt_dtype_t,
        params: *const dt_op_params_t,
    ) -> dt_status_t;
    pub fn dt_alltoallv_async_ex(
        ctx: dt_context_h,
        name: *const c_char,
        sendbuf: *const std::ffi::c_void,
        recvbuf: *mut std::ffi::c_void,
        sendcounts: *const usize,
        recvcounts: *const usize,
        dtype: dt_dtype_t,
        params: *const dt_op_params_t,
        req: *mut dt_request_h,
    ) -> dt_status_t;
    pub fn dt_barrier_ex(
        ctx: dt_context_h,
        name: *const c_char,
        params: *const dt_op_params_t,
    ) -> dt_status_t;
    pub fn dt_barrier_async_ex(
        ctx: dt_context_h,
        name: *const c_char,
        params: *const dt_op_params_t,
        req: *mut dt_request_h,
    ) -> dt_status_t;
}

/// The header's `static inline dt_context_create`: passes this crate's API version.
///
/// # Safety
/// `params` is NULL or points to a valid `dt_context_params_t` whose strings are
/// NUL-terminated; `out` points to writable memory.
pub unsafe fn dt_context_create(
    params: *const dt_context_params_t,
    out: *mut dt_context_h,
) -> dt_status_t {
    dt_context_create_versioned(DT_API_MAJOR, DT_API_MINOR, params, out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    #[test]
    fn params_layout_matches_the_header() {
        // uint64 + 4 ints + 3 pointers + 2 ints + 2 pointers on LP64.
        assert_eq!(std::mem::size_of::<dt_context_params_t>(), 72);
        assert_eq!(std::mem::size_of::<dt_version_t>(), 24);
        // uint64 + memory type + int + pointer.
        assert_eq!(std::mem::size_of::<dt_op_params_t>(), 24);
    }

    #[test]
    fn memory_type_names_come_from_the_library() {
        let s = unsafe { CStr::from_ptr(dt_memory_type_name(DT_MEMORY_DEVICE)) };
        assert_eq!(s.to_str().unwrap(), "device");
        let s = unsafe { CStr::from_ptr(dt_memory_type_name(DT_MEMORY_TYPE_COUNT_)) };
        assert_eq!(s.to_str().unwrap(), "unknown");
    }

    #[test]
    fn dtype_sizes_agree_with_the_library() {
        let expect = [4usize, 8, 2, 2, 1, 1, 4, 8];
        for (dtype, size) in expect.iter().enumerate() {
            assert_eq!(unsafe { dt_dtype_size(dtype as dt_dtype_t) }, *size);
        }
        assert_eq!(unsafe { dt_dtype_size(DT_DTYPE_COUNT_) }, 0);
    }

    #[test]
    fn version_is_compatible() {
        let mut v = dt_version_t { api_major: 0, api_minor: 0, patch: 0, string: std::ptr::null() };
        assert_eq!(unsafe { dt_get_version(&mut v) }, DT_OK);
        assert_eq!(v.api_major, DT_API_MAJOR);
        assert!(v.api_minor >= DT_API_MINOR);
        assert!(!v.string.is_null());
    }

    #[test]
    fn status_strings_name_the_code() {
        let s = unsafe { CStr::from_ptr(dt_status_string(DT_ERR_TIMEOUT)) };
        assert!(s.to_str().unwrap().starts_with("DT_ERR_TIMEOUT"));
        assert!(DT_IS_TIMEOUT_ERROR(DT_ERR_TIMEOUT) && !DT_IS_USAGE_ERROR(DT_ERR_TIMEOUT));
        assert!(DT_IS_PEER_ERROR(DT_ERR_ABORTED) && DT_IS_PLUGIN_ERROR(DT_ERR_PLUGIN_ABI));
    }

    #[test]
    fn null_out_is_an_invalid_argument() {
        assert_eq!(unsafe { dt_get_version(std::ptr::null_mut()) }, DT_ERR_INVALID_ARGUMENT);
        let msg = unsafe { CStr::from_ptr(dt_last_error()) };
        assert!(!msg.to_bytes().is_empty());
    }
}
