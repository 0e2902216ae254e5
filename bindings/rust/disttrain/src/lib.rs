// SPDX-License-Identifier: Apache-2.0
//! Safe Rust API of libdisttrain (standard library only).
//!
//! ```no_run
//! use disttrain::{Context, ReduceOp};
//! # fn main() -> disttrain::Result<()> {
//! let ctx = Context::new()?; // rank and size from disttrainrun's variables
//! let mut grad = vec![ctx.rank() as f32; 1024];
//! ctx.allreduce_in_place(&mut grad, ReduceOp::Avg)?;
//! # Ok(()) }
//! ```
//!
//! - [`Context`]: one member of a job; dropping it destroys the context.
//! - Blocking collectives on slices, generic over [`Element`] (f32, f64, i8, u8, i32,
//!   i64, [`Bf16`], [`F16`]); wrong lengths are an [`Error`], never out-of-bounds access.
//! - Asynchronous collectives in a [`Scope`], returning [`Request`]s that borrow their
//!   buffers and cannot outlive them.
//! - [`Error`]: status code, [`ErrorKind`] and the library's message.
//! - [`OpParams`] with [`Context::with_op_params`]: where a call's buffers live
//!   ([`Memory`]); slices are host memory, the default, and `OpParams::auto()` asks the
//!   memory providers. Device memory and the producer's stream are promises only the
//!   caller can keep, so they come from `unsafe` constructors ([`OpParams::on_device`]).
//!   Asynchronous collectives in a [`Scope`] run on host memory.
//!
//! Run a job with `disttrainrun -np 2 -- ./my_program`; a single process needs nothing.
//! Process groups will come as further types offering the same collective methods.
mod collectives;
mod context;
mod element;
mod error;
mod memory;
mod request;

pub use disttrain_sys as sys;

pub use collectives::Named;
pub use context::{Context, Group, Params};
pub use element::{Bf16, Element, ReduceOp, F16};
pub use error::{Error, ErrorKind, Result};
pub use memory::{Memory, OpParams};
pub use request::{NamedScope, Request, Scope};

/// Version string of the loaded library ("1.2.0").
pub fn version() -> String {
    let mut v = sys::dt_version_t { api_major: 0, api_minor: 0, patch: 0,
                                    string: std::ptr::null() };
    if unsafe { sys::dt_get_version(&mut v) } != sys::DT_OK || v.string.is_null() {
        return String::new();
    }
    unsafe { std::ffi::CStr::from_ptr(v.string) }.to_string_lossy().into_owned()
}
