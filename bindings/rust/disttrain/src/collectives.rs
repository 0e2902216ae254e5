//! Blocking collectives on slices, on Context and on Named (the same, with an operation
//! name that shows in errors and the timeline).
//!
//! Lengths are checked here and a mismatch is an Err, never a read or write past a
//! slice. Every rank must call the same collectives in the same order with the same
//! lengths, op and root.
use std::ffi::CString;
use std::os::raw::c_char;

use disttrain_sys as sys;

use crate::context::Context;
use crate::element::{Element, ReduceOp};
use crate::error::{check, Error, Result};

pub(crate) fn same_len(what: &str, send: usize, recv: usize) -> Result<()> {
    if send != recv {
        return Err(Error::usage(format!(
            "{what}: send has {send} elements but recv has {recv}; they must be equal")));
    }
    Ok(())
}

pub(crate) fn blocks(what: &str, big: &str, big_len: usize, small: &str, small_len: usize,
                     size: usize) -> Result<()> {
    if small_len.checked_mul(size) != Some(big_len) {
        return Err(Error::usage(format!(
            "{what}: {big} has {big_len} elements but must hold {small}.len() * size = \
             {small_len} * {size}")));
    }
    Ok(())
}

pub(crate) fn divisible(what: &str, len: usize, size: usize) -> Result<()> {
    if len % size != 0 {
        return Err(Error::usage(format!(
            "{what}: {len} elements do not split into {size} equal blocks, one per rank")));
    }
    Ok(())
}

pub(crate) fn root_of(root: usize, size: usize) -> Result<i32> {
    if root >= size {
        return Err(Error::usage(format!(
            "broadcast: root {root} is not a rank of this context; use 0 <= root < {size}")));
    }
    Ok(root as i32)
}

pub(crate) fn c_name(name: &str) -> CString {
    // Names are for errors and the timeline; a NUL would cut them, so it is replaced.
    CString::new(name.replace('\0', "?")).expect("NUL bytes were replaced")
}

/// Blocking collective methods for a type with `ctx()` and `name_ptr()`.
macro_rules! blocking_collectives {
    () => {
        /// Reduces `send` across ranks with `op` into `recv` (same length).
        pub fn allreduce<T: Element>(&self, send: &[T], recv: &mut [T], op: ReduceOp)
            -> Result<()> {
            same_len("allreduce", send.len(), recv.len())?;
            check(unsafe {
                sys::dt_allreduce(self.ctx().as_raw(), self.name_ptr(), send.as_ptr().cast(),
                                  recv.as_mut_ptr().cast(), send.len(), T::DTYPE, op.raw())
            })
        }

        /// Reduces `buf` across ranks with `op`, in place.
        pub fn allreduce_in_place<T: Element>(&self, buf: &mut [T], op: ReduceOp)
            -> Result<()> {
            let p = buf.as_mut_ptr().cast();
            check(unsafe {
                sys::dt_allreduce(self.ctx().as_raw(), self.name_ptr(), p, p, buf.len(),
                                  T::DTYPE, op.raw())
            })
        }

        /// Copies `buf` of rank `root` into `buf` on every other rank.
        pub fn broadcast<T: Element>(&self, buf: &mut [T], root: usize) -> Result<()> {
            let root = root_of(root, self.ctx().size())?;
            check(unsafe {
                sys::dt_broadcast(self.ctx().as_raw(), self.name_ptr(),
                                  buf.as_mut_ptr().cast(), buf.len(), T::DTYPE, root)
            })
        }

        /// Gathers every rank's `send` into `recv` (size * send.len() elements, rank r's
        /// block at r * send.len()).
        pub fn allgather<T: Element>(&self, send: &[T], recv: &mut [T]) -> Result<()> {
            blocks("allgather", "recv", recv.len(), "send", send.len(), self.ctx().size())?;
            check(unsafe {
                sys::dt_allgather(self.ctx().as_raw(), self.name_ptr(), send.as_ptr().cast(),
                                  recv.as_mut_ptr().cast(), send.len(), T::DTYPE)
            })
        }

        /// Reduces `send` (size * recv.len() elements) across ranks; rank r receives
        /// block r of the result in `recv`.
        pub fn reduce_scatter<T: Element>(&self, send: &[T], recv: &mut [T], op: ReduceOp)
            -> Result<()> {
            blocks("reduce_scatter", "send", send.len(), "recv", recv.len(),
                   self.ctx().size())?;
            check(unsafe {
                sys::dt_reduce_scatter(self.ctx().as_raw(), self.name_ptr(),
                                       send.as_ptr().cast(), recv.as_mut_ptr().cast(),
                                       recv.len(), T::DTYPE, op.raw())
            })
        }

        /// Sends block j of `send` to rank j, which stores it as block i of `recv`, i
        /// being the sender. Both hold size equal blocks.
        pub fn alltoall<T: Element>(&self, send: &[T], recv: &mut [T]) -> Result<()> {
            same_len("alltoall", send.len(), recv.len())?;
            divisible("alltoall", send.len(), self.ctx().size())?;
            check(unsafe {
                sys::dt_alltoall(self.ctx().as_raw(), self.name_ptr(), send.as_ptr().cast(),
                                 recv.as_mut_ptr().cast(), send.len() / self.ctx().size(),
                                 T::DTYPE)
            })
        }

        /// Returns once every rank has entered the barrier.
        pub fn barrier(&self) -> Result<()> {
            check(unsafe { sys::dt_barrier(self.ctx().as_raw(), self.name_ptr()) })
        }
    };
}

impl Context {
    fn ctx(&self) -> &Context {
        self
    }

    fn name_ptr(&self) -> *const c_char {
        std::ptr::null()
    }

    /// The collectives of this context under an operation name.
    pub fn named(&self, name: &str) -> Named<'_> {
        Named { ctx: self, name: c_name(name) }
    }

    blocking_collectives!();
}

/// A context's collectives under an operation name: `ctx.named("grad.w").allreduce(..)`.
pub struct Named<'c> {
    ctx: &'c Context,
    name: CString,
}

impl<'c> Named<'c> {
    fn ctx(&self) -> &Context {
        self.ctx
    }

    fn name_ptr(&self) -> *const c_char {
        self.name.as_ptr()
    }

    blocking_collectives!();
}
