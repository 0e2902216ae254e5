// SPDX-License-Identifier: Apache-2.0
//! Asynchronous collectives: Scope and Request.
//!
//! The library writes a request's buffers until it completes, so a Request<'scope>
//! borrows them (mutably where written) for 'scope and its Drop waits. Drop alone would
//! not be sound: safe code may `mem::forget` a Request and then free its buffers. So,
//! like `std::thread::scope`, requests live in a Scope: `ctx.scope(|s| ..)` waits for
//! every request still in flight before it returns (also when the closure panics), and
//! the buffers, borrowed for 'scope, cannot be touched before.
//!
//! ```no_run
//! # fn main() -> disttrain::Result<()> {
//! let ctx = disttrain::Context::new()?;
//! let (mut a, mut b) = (vec![1.0f32; 1024], vec![2i64; 16]);
//! ctx.scope(|s| -> disttrain::Result<()> {
//!     let ra = s.allreduce_in_place_async(&mut a, disttrain::ReduceOp::Sum)?;
//!     let rb = s.named("b").broadcast_async(&mut b, 0)?;
//!     ra.wait()?;
//!     rb.wait()
//! })?;
//! # Ok(()) }
//! ```
//!
//! A request cannot leave its scope, and its buffers cannot be used while it lives:
//!
//! ```compile_fail
//! let ctx = disttrain::Context::new().unwrap();
//! let mut buf = vec![0f32; 4];
//! let req = ctx.scope(|s| s.allreduce_in_place_async(&mut buf, disttrain::ReduceOp::Sum));
//! ```
//!
//! ```compile_fail
//! let ctx = disttrain::Context::new().unwrap();
//! let mut buf = vec![0f32; 4];
//! ctx.scope(|s| {
//!     let r = s.allreduce_in_place_async(&mut buf, disttrain::ReduceOp::Sum).unwrap();
//!     buf[0] = 1.0; // still borrowed by r
//!     r.wait()
//! });
//! ```
use std::ffi::CString;
use std::marker::PhantomData;
use std::os::raw::c_char;
use std::sync::Mutex;
use std::time::Duration;

use disttrain_sys as sys;

use crate::collectives::{blocks, c_name, divisible, root_of, same_len};
use crate::context::Context;
use crate::element::{Element, ReduceOp};
use crate::error::{check, Result};

/// A dt_request_h; the C API documents requests as thread safe.
#[derive(Clone, Copy, PartialEq, Eq)]
struct RawReq(sys::dt_request_h);
unsafe impl Send for RawReq {}

/// Waits for and frees a request whose result no one will read.
fn wait_free(r: RawReq) {
    unsafe {
        sys::dt_request_wait(r.0, -1);
        sys::dt_request_free(r.0);
    }
}

/// Asynchronous collective methods for a type with `scope()` and `name_ptr()`; $recv is
/// the receiver type (`&'scope Self` for Scope itself).
macro_rules! async_collectives {
    ($recv:ty) => {
        /// Starts reducing `send` into `recv` (same length) with `op`.
        pub fn allreduce_async<T: Element>(self: $recv, send: &'scope [T],
                                           recv: &'scope mut [T], op: ReduceOp)
            -> Result<Request<'scope>> {
            same_len("allreduce", send.len(), recv.len())?;
            let ctx = self.scope().ctx.as_raw();
            let name = self.name_ptr()?;
            self.scope().submit(|req| unsafe {
                sys::dt_allreduce_async(ctx, name, send.as_ptr().cast(),
                                        recv.as_mut_ptr().cast(), send.len(), T::DTYPE,
                                        op.raw(), req)
            })
        }

        /// Starts reducing `buf` in place with `op`.
        pub fn allreduce_in_place_async<T: Element>(self: $recv, buf: &'scope mut [T],
                                                    op: ReduceOp) -> Result<Request<'scope>> {
            let ctx = self.scope().ctx.as_raw();
            let name = self.name_ptr()?;
            let p = buf.as_mut_ptr().cast();
            self.scope().submit(|req| unsafe {
                sys::dt_allreduce_async(ctx, name, p, p, buf.len(), T::DTYPE,
                                        op.raw(), req)
            })
        }

        /// Starts copying rank `root`'s `buf` into `buf` on every other rank.
        pub fn broadcast_async<T: Element>(self: $recv, buf: &'scope mut [T], root: usize)
            -> Result<Request<'scope>> {
            let root = root_of(root, self.scope().ctx.size())?;
            let ctx = self.scope().ctx.as_raw();
            let name = self.name_ptr()?;
            self.scope().submit(|req| unsafe {
                sys::dt_broadcast_async(ctx, name, buf.as_mut_ptr().cast(),
                                        buf.len(), T::DTYPE, root, req)
            })
        }

        /// Starts gathering every rank's `send` into `recv` (size * send.len()).
        pub fn allgather_async<T: Element>(self: $recv, send: &'scope [T],
                                           recv: &'scope mut [T]) -> Result<Request<'scope>> {
            blocks("allgather", "recv", recv.len(), "send", send.len(),
                   self.scope().ctx.size())?;
            let ctx = self.scope().ctx.as_raw();
            let name = self.name_ptr()?;
            self.scope().submit(|req| unsafe {
                sys::dt_allgather_async(ctx, name, send.as_ptr().cast(),
                                        recv.as_mut_ptr().cast(), send.len(), T::DTYPE, req)
            })
        }

        /// Starts a reduce-scatter: `send` holds size * recv.len() elements.
        pub fn reduce_scatter_async<T: Element>(self: $recv, send: &'scope [T],
                                                recv: &'scope mut [T], op: ReduceOp)
            -> Result<Request<'scope>> {
            blocks("reduce_scatter", "send", send.len(), "recv", recv.len(),
                   self.scope().ctx.size())?;
            let ctx = self.scope().ctx.as_raw();
            let name = self.name_ptr()?;
            self.scope().submit(|req| unsafe {
                sys::dt_reduce_scatter_async(ctx, name, send.as_ptr().cast(),
                                             recv.as_mut_ptr().cast(), recv.len(),
                                             T::DTYPE, op.raw(), req)
            })
        }

        /// Starts an alltoall of size equal blocks.
        pub fn alltoall_async<T: Element>(self: $recv, send: &'scope [T],
                                          recv: &'scope mut [T]) -> Result<Request<'scope>> {
            let size = self.scope().ctx.size();
            same_len("alltoall", send.len(), recv.len())?;
            divisible("alltoall", send.len(), size)?;
            let ctx = self.scope().ctx.as_raw();
            let name = self.name_ptr()?;
            self.scope().submit(|req| unsafe {
                sys::dt_alltoall_async(ctx, name, send.as_ptr().cast(),
                                       recv.as_mut_ptr().cast(), send.len() / size,
                                       T::DTYPE, req)
            })
        }

        /// Starts a barrier.
        pub fn barrier_async(self: $recv) -> Result<Request<'scope>> {
            let ctx = self.scope().ctx.as_raw();
            let name = self.name_ptr()?;
            self.scope().submit(|req| unsafe {
                sys::dt_barrier_async(ctx, name, req)
            })
        }
    };
}

/// Where a context's asynchronous collectives are started; see the module docs.
pub struct Scope<'scope, 'env: 'scope> {
    ctx: &'env Context,
    pending: Mutex<Vec<RawReq>>,
    // Invariant in both, as in std::thread::Scope, so 'scope cannot be stretched.
    _scope: PhantomData<&'scope mut &'scope ()>,
    _env: PhantomData<&'env mut &'env ()>,
}

impl Context {
    /// Runs `f` with a Scope for asynchronous collectives and waits for every request
    /// still in flight before returning (also on panic).
    pub fn scope<'env, F, R>(&'env self, f: F) -> R
    where
        F: for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> R,
    {
        let scope = Scope { ctx: self, pending: Mutex::new(Vec::new()), _scope: PhantomData,
                            _env: PhantomData };
        struct Finish<'a>(&'a Mutex<Vec<RawReq>>);
        impl Drop for Finish<'_> {
            fn drop(&mut self) {
                let left = std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()));
                for r in left {
                    wait_free(r); // a forgotten request: its error has no one to go to
                }
            }
        }
        let _finish = Finish(&scope.pending);
        f(&scope)
    }
}

impl<'scope, 'env> Scope<'scope, 'env> {
    /// The context the scope belongs to.
    pub fn context(&self) -> &'env Context {
        self.ctx
    }

    /// This scope's collectives under an operation name (one holding a NUL makes each
    /// of them return a usage `Error`, as `Context::named` does).
    pub fn named(&'scope self, name: &str) -> NamedScope<'scope, 'env> {
        NamedScope { scope: self, name: c_name(name) }
    }

    fn scope(&'scope self) -> &'scope Scope<'scope, 'env> {
        self
    }

    fn name_ptr(&self) -> Result<*const c_char> {
        Ok(std::ptr::null())
    }

    fn submit(&'scope self, start: impl FnOnce(*mut sys::dt_request_h) -> sys::dt_status_t)
        -> Result<Request<'scope>> {
        let mut raw: sys::dt_request_h = std::ptr::null_mut();
        // Held across the call, so the scope's end cannot miss a request being created.
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        check(start(&mut raw))?;
        pending.push(RawReq(raw));
        Ok(Request { raw: Some(RawReq(raw)), pending: &self.pending, _buffers: PhantomData })
    }

    async_collectives!(&'scope Self);
}

/// A scope's collectives under an operation name: `s.named("grad.w").allreduce_async(..)`.
pub struct NamedScope<'scope, 'env: 'scope> {
    scope: &'scope Scope<'scope, 'env>,
    name: Result<CString>, // Err: the name cannot be passed to the library
}

impl<'scope, 'env> NamedScope<'scope, 'env> {
    fn scope(&self) -> &'scope Scope<'scope, 'env> {
        self.scope
    }

    fn name_ptr(&self) -> Result<*const c_char> {
        self.name.as_ref().map(|n| n.as_ptr()).map_err(Clone::clone)
    }

    async_collectives!(&Self);
}

/// An asynchronous collective in flight; its buffers stay borrowed until it is done.
/// Dropping it waits for the operation (ignoring its error: call wait() to see it).
#[must_use = "a request is waited for when dropped; call wait() to see its result"]
pub struct Request<'scope> {
    raw: Option<RawReq>,
    pending: &'scope Mutex<Vec<RawReq>>,
    _buffers: PhantomData<&'scope mut [u8]>,
}

impl<'scope> Request<'scope> {
    fn release(&mut self, r: RawReq) {
        self.raw = None;
        self.pending.lock().unwrap_or_else(|e| e.into_inner()).retain(|p| *p != r);
    }

    /// Waits for the operation and returns its result.
    pub fn wait(mut self) -> Result<()> {
        match self.raw {
            None => Ok(()),
            Some(r) => {
                let status = unsafe { sys::dt_request_wait(r.0, -1) };
                let result = check(status); // reads the message before the free
                unsafe { sys::dt_request_free(r.0) };
                self.release(r);
                result
            }
        }
    }

    /// Waits up to `timeout`: Ok(true) once done, Ok(false) if still in flight (the
    /// request stays valid), Err if the operation failed.
    pub fn wait_timeout(&mut self, timeout: Duration) -> Result<bool> {
        let r = match self.raw {
            Some(r) => r,
            None => return Ok(true),
        };
        let ms = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
        let status = unsafe { sys::dt_request_wait(r.0, ms) };
        if status == sys::DT_ERR_TIMEOUT && !self.is_done(r) {
            return Ok(false);
        }
        let result = check(status);
        unsafe { sys::dt_request_free(r.0) };
        self.release(r);
        result.map(|_| true)
    }

    /// Ok(true) once the operation has completed (without blocking), Err if it failed.
    pub fn test(&mut self) -> Result<bool> {
        let r = match self.raw {
            Some(r) => r,
            None => return Ok(true),
        };
        let mut done = 0;
        let status = unsafe { sys::dt_request_test(r.0, &mut done) };
        if done == 0 {
            check(status)?;
            return Ok(false);
        }
        let result = check(status);
        unsafe { sys::dt_request_free(r.0) };
        self.release(r);
        result.map(|_| true)
    }

    fn is_done(&self, r: RawReq) -> bool {
        let mut done = 0;
        unsafe { sys::dt_request_test(r.0, &mut done) };
        done != 0
    }
}

impl Drop for Request<'_> {
    fn drop(&mut self) {
        if let Some(r) = self.raw {
            wait_free(r);
            self.release(r);
        }
    }
}
