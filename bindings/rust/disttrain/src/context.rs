// SPDX-License-Identifier: Apache-2.0
//! Context: one member of a job (dt_context_h). Dropping it destroys the context.
use std::ffi::{CStr, CString};
use std::marker::PhantomData;
use std::os::raw::{c_char, c_int};
use std::ptr::NonNull;
use std::time::Duration;

use disttrain_sys as sys;

use crate::error::{check, Error, Result};

/// What to set explicitly when creating a context; every None field comes from the
/// environment (DISTTRAIN_RANK, DISTTRAIN_SIZE, ... as set by disttrainrun, then Open
/// MPI and Slurm) or its default. `Params::default()` is "all from the environment".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Params {
    pub rank: Option<usize>,
    pub size: Option<usize>,
    pub local_rank: Option<usize>,
    pub local_size: Option<usize>,
    /// "host:port" of the rendezvous store.
    pub store_addr: Option<String>,
    /// Secret shared by all ranks of the job.
    pub job_token: Option<String>,
    /// Ordered list of transports, e.g. "ucx,tcp" or "auto".
    pub transport: Option<String>,
    /// Deadline of every blocking step; Duration::ZERO means no limit.
    pub timeout: Option<Duration>,
    /// Pairs the context with the one of this name on every rank, in any order and from
    /// any thread (unnamed contexts pair up by creation order, one thread at a time): the
    /// same on every rank, another for each live context, 1 to 128 letters, digits, '.',
    /// '_' or '-'.
    pub name: Option<String>,
}

/// `value` as the C string the library reads; an embedded NUL would end it early (so
/// that "grad\0w" and "grad\0b" both arrive as "grad"): an Err naming `what` and where.
pub(crate) fn c_string(what: &str, value: &str) -> Result<CString> {
    CString::new(value).map_err(|e| {
        let at = e.nul_position();
        Error::usage(format!(
            "{what} {value:?} holds a NUL byte at position {at}; the library reads it as a \
             C string, which would end there ({:?}): remove the NUL", &value[..at]))
    })
}

fn c_int_of(field: &str, value: usize) -> Result<c_int> {
    c_int::try_from(value)
        .map_err(|_| Error::usage(format!("Params::{field}={value} does not fit a C int")))
}

/// A member of a job: its rank, the transport to its peers and the background engine.
/// Thread safe: collectives may be called from several threads (they run in the order
/// the calls enter the library).
pub struct Context {
    raw: NonNull<sys::dt_context>,
    rank: usize,
    size: usize,
    local_rank: usize,
    local_size: usize,
    transport: String,
}

// The C API documents every context function as thread safe.
unsafe impl Send for Context {}
unsafe impl Sync for Context {}

impl Context {
    /// Creates a context from the environment (collective: every rank calls it). With no
    /// variable at all it is a single process of rank 0.
    pub fn new() -> Result<Context> {
        Context::with_params(&Params::default())
    }

    /// Creates a context with the fields of `params` that are Some.
    pub fn with_params(params: &Params) -> Result<Context> {
        let mut p = sys::dt_context_params_t::default();
        let ints = [
            ("rank", params.rank, sys::DT_CONTEXT_PARAM_FIELD_RANK),
            ("size", params.size, sys::DT_CONTEXT_PARAM_FIELD_SIZE),
            ("local_rank", params.local_rank, sys::DT_CONTEXT_PARAM_FIELD_LOCAL_RANK),
            ("local_size", params.local_size, sys::DT_CONTEXT_PARAM_FIELD_LOCAL_SIZE),
        ];
        for (field, value, bit) in ints {
            if let Some(v) = value {
                let v = c_int_of(field, v)?;
                match field {
                    "rank" => p.rank = v,
                    "size" => p.size = v,
                    "local_rank" => p.local_rank = v,
                    _ => p.local_size = v,
                }
                p.field_mask |= bit;
            }
        }
        // Kept alive until dt_context_create returns (the library copies them).
        let field = |what: &str, value: &Option<String>| {
            value.as_deref().map(|s| c_string(&format!("Params::{what}"), s)).transpose()
        };
        let store = field("store_addr", &params.store_addr)?;
        let token = field("job_token", &params.job_token)?;
        let transport = field("transport", &params.transport)?;
        let name = field("name", &params.name)?;
        if let Some(s) = &store {
            p.store_addr = s.as_ptr();
            p.field_mask |= sys::DT_CONTEXT_PARAM_FIELD_STORE_ADDR;
        }
        if let Some(s) = &token {
            p.job_token = s.as_ptr();
            p.field_mask |= sys::DT_CONTEXT_PARAM_FIELD_JOB_TOKEN;
        }
        if let Some(s) = &transport {
            p.transport = s.as_ptr();
            p.field_mask |= sys::DT_CONTEXT_PARAM_FIELD_TRANSPORT;
        }
        if let Some(s) = &name {
            p.name = s.as_ptr();
            p.field_mask |= sys::DT_CONTEXT_PARAM_FIELD_NAME;
        }
        if let Some(t) = params.timeout {
            p.timeout_ms = c_int::try_from(t.as_millis()).unwrap_or(c_int::MAX);
            p.field_mask |= sys::DT_CONTEXT_PARAM_FIELD_TIMEOUT_MS;
        }
        let mut raw: sys::dt_context_h = std::ptr::null_mut();
        check(unsafe { sys::dt_context_create(&p, &mut raw) })?;
        let raw = NonNull::new(raw).ok_or_else(|| {
            Error::with_message(sys::DT_ERR_INTERNAL, "dt_context_create gave NULL".into())
        })?;
        Context::adopt(raw)
    }

    /// Owns a handle the C API made (dt_context_create, dt_group_create).
    fn adopt(raw: NonNull<sys::dt_context>) -> Result<Context> {
        // From here on, Drop destroys the context whatever fails below.
        let mut ctx = Context { raw, rank: 0, size: 0, local_rank: 0, local_size: 0,
                                transport: String::new() };
        ctx.refresh()?;
        Ok(ctx)
    }

    /// Reads the rank, size, local rank and transport again (after a re-form).
    fn refresh(&mut self) -> Result<()> {
        let ctx = self;
        ctx.rank = ctx.query(sys::dt_context_rank)?;
        ctx.size = ctx.query(sys::dt_context_size)?;
        ctx.local_rank = ctx.query(sys::dt_context_local_rank)?;
        ctx.local_size = ctx.query(sys::dt_context_local_size)?;
        let mut name: *const c_char = std::ptr::null();
        check(unsafe { sys::dt_context_transport(ctx.as_raw(), &mut name) })?;
        if !name.is_null() {
            ctx.transport = unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned();
        }
        Ok(())
    }

    fn query(&self, f: unsafe extern "C" fn(sys::dt_context_h, *mut c_int) -> sys::dt_status_t)
        -> Result<usize> {
        let mut v: c_int = 0;
        check(unsafe { f(self.as_raw(), &mut v) })?;
        Ok(v.max(0) as usize)
    }

    /// The raw handle, for calls this crate does not wrap. Valid while self lives.
    pub fn as_raw(&self) -> sys::dt_context_h {
        self.raw.as_ptr()
    }

    /// This process's rank, 0 <= rank < size.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// Number of ranks in the job.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Rank among the processes on this host.
    pub fn local_rank(&self) -> usize {
        self.local_rank
    }

    /// Number of ranks on this host.
    pub fn local_size(&self) -> usize {
        self.local_size
    }

    /// Name of the transport in use ("tcp").
    pub fn transport(&self) -> &str {
        &self.transport
    }

    /// Fails every pending and later operation with DT_ERR_ABORTED; peers see this rank
    /// leave. The context is still destroyed on drop.
    pub fn abort(&self) -> Result<()> {
        check(unsafe { sys::dt_context_abort(self.as_raw()) })
    }
}

impl Context {
    /// A process set: a context over some ranks of this one (dt_group_create), sharing
    /// its connections. Collective over this context: every rank calls it with the same
    /// `ranks`, in the same order relative to other groups. Members get `Some(group)`,
    /// whose rank is the position in `ranks`; other ranks get `None`. The group borrows
    /// this context, which must outlive it.
    pub fn group(&self, ranks: &[usize]) -> Result<Option<Group<'_>>> {
        let c_ranks = ranks
            .iter()
            .map(|&r| c_int_of("ranks", r))
            .collect::<Result<Vec<c_int>>>()?;
        let n = c_int_of("ranks.len()", c_ranks.len())?;
        let mut raw: sys::dt_context_h = std::ptr::null_mut();
        check(unsafe { sys::dt_group_create(self.as_raw(), c_ranks.as_ptr(), n, &mut raw) })?;
        match NonNull::new(raw) {
            None => Ok(None),
            Some(raw) => Ok(Some(Group { ctx: Context::adopt(raw)?, _parent: PhantomData })),
        }
    }

    /// For uneven inputs (dt_join): this rank has no more data. Blocks until every rank
    /// has joined; meanwhile the others' allreduces go on with this rank contributing
    /// the identity. Returns the rank that joined last. Whole-job contexts only.
    pub fn join(&self) -> Result<usize> {
        let mut last: c_int = -1;
        check(unsafe { sys::dt_join(self.as_raw(), &mut last) })?;
        Ok(last.max(0) as usize)
    }
    /// Elastic jobs (DISTTRAIN_ELASTIC=1, as `disttrainrun --elastic` sets;
    /// dt_context_reform): after an operation failed with a lost peer
    /// (`ErrorKind::PeerLost`), or when `poll_joiners` says new ranks wait, every
    /// surviving rank calls this; the job re-forms among the ranks still alive and the new
    /// ones, and `rank()`, `size()`, `local_rank()` and `local_size()` give the new
    /// membership. Groups made before are gone: `&mut self` means none is still borrowed.
    /// Errors: DT_ERR_INVALID_STATE when the job is not elastic; DT_ERR_TIMEOUT when fewer
    /// than DISTTRAIN_MIN_SIZE ranks arrived in time (the context then refuses every call:
    /// drop it).
    pub fn reform(&mut self) -> Result<()> {
        check(unsafe { sys::dt_context_reform(self.as_raw()) })?;
        self.refresh()
    }

    /// Elastic jobs (dt_context_poll_joiners): how many new processes wait to join (a
    /// launcher's replacements or new ranks). Collective: every rank calls it at the same
    /// step boundary and gets rank 0's count; above 0, every rank then calls `reform`.
    /// 0 in a job that is not elastic.
    pub fn poll_joiners(&self) -> Result<usize> {
        let mut waiting: c_int = 0;
        check(unsafe { sys::dt_context_poll_joiners(self.as_raw(), &mut waiting) })?;
        Ok(waiting.max(0) as usize)
    }
}

/// A process set made by `Context::group`: a Context (through Deref) that cannot
/// outlive the context it was made from.
pub struct Group<'p> {
    ctx: Context,
    _parent: PhantomData<&'p Context>,
}

impl std::ops::Deref for Group<'_> {
    type Target = Context;
    fn deref(&self) -> &Context {
        &self.ctx
    }
}

impl std::fmt::Debug for Group<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Group({:?})", self.ctx)
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // Requests borrow the context (see Scope), so none is left in flight here.
        unsafe { sys::dt_context_destroy(self.as_raw()) };
    }
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Context {{ rank: {}, size: {}, transport: {:?} }}", self.rank, self.size,
               self.transport)
    }
}
