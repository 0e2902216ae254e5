// SPDX-License-Identifier: Apache-2.0
//! Where a collective's buffers live: the per-call parameters of the C API's `_ex`
//! collectives (`dt_op_params_t`), for `Context::with_op_params` and
//! `Named::with_op_params`.
//!
//! Slices are host memory, the default. `Memory::Auto` lets the library ask its loaded
//! memory providers (host while none is loaded); `Memory::Device` is refused by the
//! library with `DT_ERR_UNSUPPORTED` until a memory provider is loaded.
use std::ffi::c_void;

use disttrain_sys as sys;

/// `dt_memory_type_t`.
#[derive(Debug, Copy, Clone, PartialEq, Eq)]
pub enum Memory {
    Host,
    Device,
    Auto,
}

impl Memory {
    pub(crate) fn raw(self) -> sys::dt_memory_type_t {
        match self {
            Memory::Host => sys::DT_MEMORY_HOST,
            Memory::Device => sys::DT_MEMORY_DEVICE,
            Memory::Auto => sys::DT_MEMORY_AUTO,
        }
    }
}

/// A call's parameters; `OpParams::default()` is host memory, what the plain methods do.
#[derive(Debug, Copy, Clone)]
pub struct OpParams {
    pub memory: Memory,
    /// Device ordinal; `None`: the memory provider's choice. The library refuses a
    /// negative one (`DT_ERR_INVALID_ARGUMENT`, naming the field).
    pub device: Option<i32>,
    /// The producer's stream (a `cudaStream_t`), opaque to the library; null: default.
    pub stream: *mut c_void,
}

impl Default for OpParams {
    fn default() -> Self {
        OpParams { memory: Memory::Host, device: None, stream: std::ptr::null_mut() }
    }
}

impl OpParams {
    /// Device memory on `device`, after the work queued on `stream` so far.
    pub fn on_device(device: i32, stream: *mut c_void) -> Self {
        OpParams { memory: Memory::Device, device: Some(device), stream }
    }

    /// The C struct, with field_mask bits for what is set.
    pub fn to_sys(&self) -> sys::dt_op_params_t {
        let mut p = sys::dt_op_params_t {
            field_mask: sys::DT_OP_PARAM_FIELD_MEMORY_TYPE,
            memory_type: self.memory.raw(),
            ..Default::default()
        };
        if let Some(device) = self.device {
            p.field_mask |= sys::DT_OP_PARAM_FIELD_DEVICE;
            p.device = device;
        }
        if !self.stream.is_null() {
            p.field_mask |= sys::DT_OP_PARAM_FIELD_STREAM;
            p.stream = self.stream;
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_params_say_host_and_nothing_else() {
        let p = OpParams::default().to_sys();
        assert_eq!(p.field_mask, sys::DT_OP_PARAM_FIELD_MEMORY_TYPE);
        assert_eq!(p.memory_type, sys::DT_MEMORY_HOST);
    }

    #[test]
    fn on_device_sets_every_field() {
        let mut stand_in = 0u8;
        let stream = (&mut stand_in as *mut u8).cast();
        let p = OpParams::on_device(3, stream).to_sys();
        assert_eq!(p.field_mask, 0b111);
        assert_eq!((p.memory_type, p.device, p.stream), (sys::DT_MEMORY_DEVICE, 3, stream));
    }
}
