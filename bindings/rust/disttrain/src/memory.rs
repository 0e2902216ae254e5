// SPDX-License-Identifier: Apache-2.0
//! Where a collective's buffers live: the per-call parameters of the C API's `_ex`
//! collectives (`dt_op_params_t`), for `Context::with_op_params` and
//! `Named::with_op_params`.
//!
//! Slices are host memory, the default. `Memory::Auto` lets the library ask its loaded
//! memory providers (host while none is loaded); `Memory::Device` is refused by the
//! library with `DT_ERR_UNSUPPORTED` until a memory provider is loaded.
//!
//! The fields are private because two of them are promises no safe code can check: that
//! the slices of a call are device memory (the library then hands them to the device, not
//! the CPU), and that a stream pointer is a live stream (the library queues work on it).
//! A wrong promise is undefined behaviour, a crash in the CUDA runtime at best, so only
//! the `unsafe` constructors make them; host and auto parameters are safe.
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
///
/// ```
/// use disttrain::{Memory, OpParams};
/// let auto = OpParams::auto().with_device(1);
/// assert_eq!((auto.memory(), auto.device()), (Memory::Auto, Some(1)));
/// assert!(auto.stream().is_null());
/// ```
///
/// Device memory and streams take `unsafe`: the fields are not public, so safe code can
/// neither declare slices device memory nor pass a stream.
///
/// ```compile_fail,E0451
/// use disttrain::{Memory, OpParams};
/// let p = OpParams { memory: Memory::Device, ..Default::default() };
/// ```
///
/// ```compile_fail,E0451
/// use disttrain::OpParams;
/// let p = OpParams { stream: 0x1234 as *mut _, ..Default::default() };
/// ```
///
/// ```compile_fail,E0133
/// let p = disttrain::OpParams::on_device(0, std::ptr::null_mut());
/// ```
///
/// ```compile_fail,E0133
/// let p = disttrain::OpParams::auto().with_stream(0x1234 as *mut _);
/// ```
#[derive(Debug, Copy, Clone)]
pub struct OpParams {
    memory: Memory,
    device: Option<i32>,
    stream: *mut c_void,
}

impl Default for OpParams {
    fn default() -> Self {
        OpParams::host()
    }
}

impl OpParams {
    /// Host memory, what the plain methods pass: every slice of safe Rust is host memory.
    pub fn host() -> Self {
        OpParams { memory: Memory::Host, device: None, stream: std::ptr::null_mut() }
    }

    /// The library asks its loaded memory providers where the slices live (host while
    /// none is loaded). Safe: the provider looks the pointers up rather than trusting the
    /// caller, and a host slice stays host memory.
    pub fn auto() -> Self {
        OpParams { memory: Memory::Auto, ..OpParams::host() }
    }

    /// The same parameters with a device ordinal (CUDA's device index) for device
    /// buffers; ignored for host memory. The library refuses a negative one
    /// (`DT_ERR_INVALID_ARGUMENT`, naming the field). On device memory parameters it must
    /// be the slices' device, which the caller of their `unsafe` constructor promised.
    pub fn with_device(self, device: i32) -> Self {
        OpParams { device: Some(device), ..self }
    }

    /// Device memory on `device`, after the work queued on `stream` so far (null: the
    /// device's default stream).
    ///
    /// # Safety
    ///
    /// For every call made with these parameters, or with parameters made from them
    /// (the promise goes with them: `with_device` must name the slices' device too):
    /// - every slice passed is device memory of the device the parameters name, that the
    ///   loaded memory provider knows (e.g. from `cudaMalloc` or `cudaMallocManaged` on
    ///   that device), with at least the slice's length, and nothing else reads or writes
    ///   it during the call;
    /// - `stream` is null or a live stream of that device (a `cudaStream_t`) that
    ///   outlives the call.
    ///
    /// The library cannot check either: it copies device memory with the device and
    /// queues work on the stream, so a host slice or a stale or made-up stream is
    /// undefined behaviour (the CUDA runtime dereferences the stream).
    pub unsafe fn on_device(device: i32, stream: *mut c_void) -> Self {
        OpParams { memory: Memory::Device, device: Some(device), stream }
    }

    /// Device memory on the device the memory provider finds the slices on, after the
    /// work queued on its default stream.
    ///
    /// # Safety
    ///
    /// Every slice passed with these parameters, or with parameters made from them, is
    /// device memory that the loaded memory provider knows, as for
    /// [`OpParams::on_device`] (on the device that `with_device` names, if it is used).
    pub unsafe fn device_memory() -> Self {
        OpParams { memory: Memory::Device, ..OpParams::host() }
    }

    /// The same parameters with the producer's stream: the collective starts after the
    /// work queued on it so far. Ignored for host memory.
    ///
    /// # Safety
    ///
    /// `stream` is null or a live stream (a `cudaStream_t`) of the device of the slices
    /// passed with these parameters, and outlives every such call: the library queues
    /// work on any call's stream whose slices are device memory, `Memory::Auto` included.
    pub unsafe fn with_stream(self, stream: *mut c_void) -> Self {
        OpParams { stream, ..self }
    }

    /// Where the buffers live.
    pub fn memory(&self) -> Memory {
        self.memory
    }

    /// The device ordinal; `None`: the memory provider's choice.
    pub fn device(&self) -> Option<i32> {
        self.device
    }

    /// The producer's stream (a `cudaStream_t`), opaque to the library; null: default.
    pub fn stream(&self) -> *mut c_void {
        self.stream
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
    fn auto_with_a_device_sets_no_stream() {
        let p = OpParams::auto().with_device(2).to_sys();
        let bits = sys::DT_OP_PARAM_FIELD_MEMORY_TYPE | sys::DT_OP_PARAM_FIELD_DEVICE;
        assert_eq!(p.field_mask, bits);
        assert_eq!((p.memory_type, p.device), (sys::DT_MEMORY_AUTO, 2));
    }

    #[test]
    fn on_device_sets_every_field() {
        let mut stand_in = 0u8;
        let stream = (&mut stand_in as *mut u8).cast();
        // Only converted to the C struct here, never passed to a call.
        let p = unsafe { OpParams::on_device(3, stream) }.to_sys();
        assert_eq!(p.field_mask, 0b111);
        assert_eq!((p.memory_type, p.device, p.stream), (sys::DT_MEMORY_DEVICE, 3, stream));
        let p = unsafe { OpParams::device_memory().with_stream(stream) };
        assert_eq!((p.memory(), p.device(), p.stream()), (Memory::Device, None, stream));
    }
}
