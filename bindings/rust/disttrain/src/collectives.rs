// SPDX-License-Identifier: Apache-2.0
//! Blocking collectives on slices, on Context and on Named (the same, with an operation
//! name that shows in errors and the timeline, and/or per-call parameters: where the
//! buffers live, memory.rs). Every method calls the C API's `_ex` form; the Context's
//! pass NULL params, which is host memory.
//!
//! Lengths are checked here and a mismatch is an Err, never a read or write past a
//! slice. Every rank must call the same collectives in the same order with the same
//! lengths, op and root.
use std::ffi::CString;
use std::os::raw::c_char;

use disttrain_sys as sys;

use crate::context::{c_string, Context};
use crate::element::{Element, ReduceOp};
use crate::memory::OpParams;
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

/// One count per rank, summing to what the slice holds: checked here, so the C API never
/// reads or writes past a slice.
pub(crate) fn counts_fit(what: &str, counts_name: &str, counts: &[usize], buf: &str,
                         buf_len: usize, size: usize) -> Result<()> {
    if counts.len() != size {
        return Err(Error::usage(format!(
            "{what}: {counts_name} has {} counts but the context has {size} ranks; pass one \
             count per rank", counts.len())));
    }
    let sum = counts.iter().try_fold(0usize, |a, &c| a.checked_add(c));
    if sum != Some(buf_len) {
        return Err(Error::usage(format!(
            "{what}: {buf} has {buf_len} elements but {counts_name} {counts:?} sums to {}",
            sum.map_or("more than usize holds".to_string(), |s| s.to_string()))));
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

/// An operation name as the library takes it. Ranks match operations by name, so a name
/// is never altered: one with a NUL is an Err, returned by the collective called on it.
pub(crate) fn c_name(name: &str) -> Result<CString> {
    c_string("name", name)
}

/// Blocking collective methods for a type with `ctx()`, `name_ptr()` and `params_ptr()`.
macro_rules! blocking_collectives {
    () => {
        /// Reduces `send` across ranks with `op` into `recv` (same length).
        pub fn allreduce<T: Element>(&self, send: &[T], recv: &mut [T], op: ReduceOp)
            -> Result<()> {
            same_len("allreduce", send.len(), recv.len())?;
            check(unsafe {
                sys::dt_allreduce_ex(self.ctx().as_raw(), self.name_ptr()?, send.as_ptr().cast(),
                                     recv.as_mut_ptr().cast(), send.len(), T::DTYPE, op.raw(),
                                     self.params_ptr())
            })
        }

        /// Reduces `buf` across ranks with `op`, in place.
        pub fn allreduce_in_place<T: Element>(&self, buf: &mut [T], op: ReduceOp)
            -> Result<()> {
            let p = buf.as_mut_ptr().cast();
            check(unsafe {
                sys::dt_allreduce_ex(self.ctx().as_raw(), self.name_ptr()?, p, p, buf.len(),
                                     T::DTYPE, op.raw(), self.params_ptr())
            })
        }

        /// Copies `buf` of rank `root` into `buf` on every other rank.
        pub fn broadcast<T: Element>(&self, buf: &mut [T], root: usize) -> Result<()> {
            let root = root_of(root, self.ctx().size())?;
            check(unsafe {
                sys::dt_broadcast_ex(self.ctx().as_raw(), self.name_ptr()?,
                                     buf.as_mut_ptr().cast(), buf.len(), T::DTYPE, root,
                                     self.params_ptr())
            })
        }

        /// Gathers every rank's `send` into `recv` (size * send.len() elements, rank r's
        /// block at r * send.len()).
        pub fn allgather<T: Element>(&self, send: &[T], recv: &mut [T]) -> Result<()> {
            blocks("allgather", "recv", recv.len(), "send", send.len(), self.ctx().size())?;
            check(unsafe {
                sys::dt_allgather_ex(self.ctx().as_raw(), self.name_ptr()?, send.as_ptr().cast(),
                                     recv.as_mut_ptr().cast(), send.len(), T::DTYPE,
                                     self.params_ptr())
            })
        }

        /// Reduces `send` (size * recv.len() elements) across ranks; rank r receives
        /// block r of the result in `recv`.
        pub fn reduce_scatter<T: Element>(&self, send: &[T], recv: &mut [T], op: ReduceOp)
            -> Result<()> {
            blocks("reduce_scatter", "send", send.len(), "recv", recv.len(),
                   self.ctx().size())?;
            check(unsafe {
                sys::dt_reduce_scatter_ex(self.ctx().as_raw(), self.name_ptr()?,
                                       send.as_ptr().cast(), recv.as_mut_ptr().cast(),
                                          recv.len(), T::DTYPE, op.raw(), self.params_ptr())
            })
        }

        /// Sends block j of `send` to rank j, which stores it as block i of `recv`, i
        /// being the sender. Both hold size equal blocks.
        pub fn alltoall<T: Element>(&self, send: &[T], recv: &mut [T]) -> Result<()> {
            same_len("alltoall", send.len(), recv.len())?;
            divisible("alltoall", send.len(), self.ctx().size())?;
            check(unsafe {
                sys::dt_alltoall_ex(self.ctx().as_raw(), self.name_ptr()?, send.as_ptr().cast(),
                                    recv.as_mut_ptr().cast(), send.len() / self.ctx().size(),
                                    T::DTYPE, self.params_ptr())
            })
        }

        /// Gathers every rank's `send` into `recv`, rank r's `recvcounts[r]` elements
        /// after those of ranks 0..r. `recvcounts` (one per rank) is the same on every
        /// rank, `recvcounts[rank]` being `send.len()`; ranks that disagree get an
        /// `Err` (DT_ERR_MISMATCH) on every rank. API 1.2.
        pub fn allgatherv<T: Element>(&self, send: &[T], recv: &mut [T], recvcounts: &[usize])
            -> Result<()> {
            counts_fit("allgatherv", "recvcounts", recvcounts, "recv", recv.len(),
                       self.ctx().size())?;
            check(unsafe {
                sys::dt_allgatherv_ex(self.ctx().as_raw(), self.name_ptr()?,
                                      send.as_ptr().cast(), recv.as_mut_ptr().cast(),
                                      send.len(), recvcounts.as_ptr(), T::DTYPE,
                                      self.params_ptr())
            })
        }

        /// Uneven allgather with the sizes negotiated, as Python's allgather and
        /// Horovod's: every rank passes only its own elements; an allgather of the counts
        /// comes first, then allgatherv. Returns every rank's elements in rank order and
        /// the count of each rank. Host memory. API 1.2.
        pub fn allgather_uneven<T: Element + Default>(&self, send: &[T])
            -> Result<(Vec<T>, Vec<usize>)> {
            let mine = [send.len() as i64];
            let mut sizes = vec![0i64; self.ctx().size()];
            self.allgather(&mine, &mut sizes)?;
            let counts: Vec<usize> = sizes.iter().map(|&c| c as usize).collect();
            let mut out = vec![T::default(); counts.iter().sum()];
            self.allgatherv(send, &mut out, &counts)?;
            Ok((out, counts))
        }

        /// Sends `sendcounts[j]` elements of `send` to rank j and stores the
        /// `recvcounts[i]` elements from rank i as block i of `recv`, blocks packed in
        /// rank order. Rank i's `sendcounts[j]` must equal rank j's `recvcounts[i]`, or
        /// every rank gets an `Err` (DT_ERR_MISMATCH). API 1.2.
        pub fn alltoallv<T: Element>(&self, send: &[T], sendcounts: &[usize], recv: &mut [T],
                                     recvcounts: &[usize]) -> Result<()> {
            let size = self.ctx().size();
            counts_fit("alltoallv", "sendcounts", sendcounts, "send", send.len(), size)?;
            counts_fit("alltoallv", "recvcounts", recvcounts, "recv", recv.len(), size)?;
            check(unsafe {
                sys::dt_alltoallv_ex(self.ctx().as_raw(), self.name_ptr()?,
                                     send.as_ptr().cast(), recv.as_mut_ptr().cast(),
                                     sendcounts.as_ptr(), recvcounts.as_ptr(), T::DTYPE,
                                     self.params_ptr())
            })
        }

        /// Returns once every rank has entered the barrier.
        pub fn barrier(&self) -> Result<()> {
            check(unsafe {
                sys::dt_barrier_ex(self.ctx().as_raw(), self.name_ptr()?, self.params_ptr())
            })
        }
    };
}

impl Context {
    fn ctx(&self) -> &Context {
        self
    }

    fn name_ptr(&self) -> Result<*const c_char> {
        Ok(std::ptr::null())
    }

    fn params_ptr(&self) -> *const sys::dt_op_params_t {
        std::ptr::null() // host memory
    }

    /// The collectives of this context under an operation name. A name holding a NUL
    /// makes each of them return a usage `Error` saying where (ranks match by name, and
    /// the library's C string would end at the NUL).
    pub fn named(&self, name: &str) -> Named<'_> {
        Named { ctx: self, name: c_name(name).map(Some), params: None }
    }

    /// The collectives of this context with per-call parameters (where the buffers
    /// live): `ctx.with_op_params(&OpParams::auto())`. Safe: parameters that declare
    /// slices device memory or pass a stream come only from `OpParams`'s `unsafe`
    /// constructors, whose callers vouch for them.
    pub fn with_op_params(&self, params: &OpParams) -> Named<'_> {
        Named { ctx: self, name: Ok(None), params: Some(params.to_sys()) }
    }

    blocking_collectives!();
}

/// A context's collectives under an operation name, per-call parameters, or both:
/// `ctx.named("grad.w").with_op_params(&params).allreduce(..)`.
pub struct Named<'c> {
    ctx: &'c Context,
    name: Result<Option<CString>>, // Err: the name cannot be passed to the library
    params: Option<sys::dt_op_params_t>,
}

impl<'c> Named<'c> {
    /// The same collectives with per-call parameters (where the buffers live).
    pub fn with_op_params(mut self, params: &OpParams) -> Self {
        self.params = Some(params.to_sys());
        self
    }

    fn ctx(&self) -> &Context {
        self.ctx
    }

    fn name_ptr(&self) -> Result<*const c_char> {
        match &self.name {
            Ok(name) => Ok(name.as_ref().map_or(std::ptr::null(), |n| n.as_ptr())),
            Err(e) => Err(e.clone()),
        }
    }

    fn params_ptr(&self) -> *const sys::dt_op_params_t {
        self.params.as_ref().map_or(std::ptr::null(), |p| p as *const _)
    }

    blocking_collectives!();
}
