// SPDX-License-Identifier: Apache-2.0
//! Error: a failed libdisttrain call, with its status code, kind and the library's message.
use std::ffi::CStr;
use std::fmt;

use disttrain_sys as sys;

/// The status range an error falls in (disttrain.h's DT_IS_*_ERROR).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The caller passed something wrong (a bad length, root, variable...).
    Usage,
    /// A plugin could not be found, loaded or negotiated.
    Plugin,
    /// A socket, transport or rendezvous-store failure.
    Transport,
    /// Another rank is gone or the job was aborted.
    PeerLost,
    /// A blocking step ran past its deadline.
    Timeout,
    /// A bug in libdisttrain or a plugin.
    Internal,
    /// A status this crate does not know.
    Unknown,
}

impl ErrorKind {
    pub fn of(status: i32) -> ErrorKind {
        match status {
            s if sys::DT_IS_USAGE_ERROR(s) => ErrorKind::Usage,
            s if sys::DT_IS_PLUGIN_ERROR(s) => ErrorKind::Plugin,
            s if sys::DT_IS_TRANSPORT_ERROR(s) => ErrorKind::Transport,
            s if sys::DT_IS_PEER_ERROR(s) => ErrorKind::PeerLost,
            s if sys::DT_IS_TIMEOUT_ERROR(s) => ErrorKind::Timeout,
            s if sys::DT_IS_INTERNAL_ERROR(s) => ErrorKind::Internal,
            _ => ErrorKind::Unknown,
        }
    }
}

/// A failed call: `status` is the dt_status_t, `name` its constant name
/// ("DT_ERR_TIMEOUT"), `message` what dt_last_error() said (what was wrong, what to do).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub status: i32,
    pub kind: ErrorKind,
    pub name: String,
    pub message: String,
}

pub type Result<T> = std::result::Result<T, Error>;

fn c_str(p: *const std::os::raw::c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// "DT_ERR_TIMEOUT" from dt_status_string's "DT_ERR_TIMEOUT: operation timed out".
pub(crate) fn status_name(status: i32) -> String {
    let text = c_str(unsafe { sys::dt_status_string(status) });
    text.split(':').next().unwrap_or("").to_string()
}

impl Error {
    /// The error of `status` with this thread's dt_last_error() message.
    pub(crate) fn from_status(status: i32) -> Error {
        Error::with_message(status, c_str(unsafe { sys::dt_last_error() }))
    }

    pub(crate) fn with_message(status: i32, message: String) -> Error {
        Error { status, kind: ErrorKind::of(status), name: status_name(status), message }
    }

    /// An argument error found by the binding before calling the library.
    pub(crate) fn usage(message: String) -> Error {
        Error::with_message(sys::DT_ERR_INVALID_ARGUMENT, message)
    }
}

/// Ok for DT_OK and DT_INPROGRESS, the error with its message otherwise.
pub(crate) fn check(status: i32) -> Result<()> {
    if status < 0 {
        Err(Error::from_status(status))
    } else {
        Ok(())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.message.is_empty() {
            write!(f, "{}", self.name)
        } else {
            write!(f, "{}: {}", self.name, self.message)
        }
    }
}

impl std::error::Error for Error {}
