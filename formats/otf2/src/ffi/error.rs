//! Every libotf2 return code becomes a Rust error, with the message libotf2 wrote for it.
//!
//! libotf2 reports problems through a process-wide error callback (by default it prints them).
//! [`init`] installs one that keeps the last message of the calling thread instead, so that
//! [`check`] can attach it to the error it returns and nothing is printed behind tracex's back.

use std::cell::RefCell;
use std::ffi::CStr;
use std::fmt;
use std::os::raw::c_char;
use std::sync::Once;

use otf2_sys as sys;

/// A failed libotf2 call: which call, the error code, and libotf2's own messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Otf2Error {
    pub what: String,
    pub code: i32,
    /// The code of the first error libotf2 reported during the call, when it differs (a write
    /// that failed with ENOSPC under a "buffer deletion failed").
    pub cause: Option<i32>,
    pub message: Option<String>,
}

impl Otf2Error {
    /// An error raised on the Rust side of the binding (a callback failed, a bad argument).
    pub fn other(what: impl Into<String>) -> Otf2Error {
        Otf2Error {
            what: what.into(),
            code: sys::OTF2_ErrorCode::OTF2_ERROR_INVALID.0,
            cause: None,
            message: None,
        }
    }

    /// Whether the call failed because the file system is full (or over quota).
    pub fn disk_full(&self) -> bool {
        let full = [
            sys::OTF2_ErrorCode::OTF2_ERROR_ENOSPC.0,
            sys::OTF2_ErrorCode::OTF2_ERROR_EDQUOT.0,
            sys::OTF2_ErrorCode::OTF2_ERROR_EFBIG.0,
        ];
        full.contains(&self.code) || self.cause.is_some_and(|c| full.contains(&c))
    }
}

impl fmt::Display for Otf2Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let code = sys::OTF2_ErrorCode(self.code);
        // SAFETY: libotf2 returns static NUL-terminated strings for any code value.
        let (name, descr) = unsafe {
            (
                CStr::from_ptr(sys::OTF2_Error_GetName(code)).to_string_lossy(),
                CStr::from_ptr(sys::OTF2_Error_GetDescription(code)).to_string_lossy(),
            )
        };
        if self.disk_full() {
            write!(f, "no space left on device (the disk is full): ")?;
        }
        write!(f, "libotf2: {} failed: {name} ({descr})", self.what)?;
        if let Some(m) = &self.message {
            write!(f, ": {m}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Otf2Error {}

impl From<Otf2Error> for tracex_ir::Error {
    fn from(e: Otf2Error) -> Self {
        tracex_ir::Error::Library(e.to_string())
    }
}

pub type Result<T, E = Otf2Error> = std::result::Result<T, E>;

/// Messages libotf2 may report for one failed call before it returns: a disk-full write error
/// is followed by the errors of the buffer and file operations it broke, and the first one is
/// the cause.
const KEPT_MESSAGES: usize = 4;

thread_local! {
    /// The (code, message) pairs libotf2 reported on this thread since they were last taken.
    static PENDING: RefCell<Vec<(i32, String)>> = const { RefCell::new(Vec::new()) };
}

/// Keeps libotf2's message for [`check`]; prints nothing. Called by the C shim (`otf2-sys`'s
/// shim.c), which formats the message from libotf2's `va_list`.
extern "C" fn on_error(code: sys::OTF2_ErrorCode, function: *const c_char, message: *const c_char) {
    // Never unwind into C: the body cannot panic short of allocation failure, and that aborts.
    let text = |p: *const c_char| {
        if p.is_null() {
            String::new()
        } else {
            // SAFETY: the shim passes NUL-terminated strings valid for the call.
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        }
    };
    let (function, message) = (text(function), text(message));
    let msg = match (function.is_empty(), message.is_empty()) {
        (_, true) => function,
        (true, false) => message,
        (false, false) => format!("{message} (in {function})"),
    };
    let _ = PENDING.try_with(|p| {
        let mut p = p.borrow_mut();
        if p.len() >= KEPT_MESSAGES {
            // keep the first (the cause) and the latest
            p.remove(1);
        }
        p.push((code.0, msg));
    });
}

/// Installs the error callback (once per process).
pub fn init() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: registers a function with the signature the shim declares; it never unwinds.
        unsafe { sys::tracex_otf2_set_error_sink(Some(on_error)) };
    });
}

/// The messages libotf2 reported on this thread since the last call, cause first.
fn take_messages() -> Vec<(i32, String)> {
    PENDING
        .try_with(|p| std::mem::take(&mut *p.borrow_mut()))
        .unwrap_or_default()
}

/// The error for a failed call: its code (the first reported one's when the call only says
/// that something failed) and every message libotf2 gave for it.
fn error_for(what: &str, code: Option<i32>) -> Otf2Error {
    let msgs = take_messages();
    let cause = msgs.first().map(|(c, _)| *c);
    let code = code
        .or(cause)
        .unwrap_or(sys::OTF2_ErrorCode::OTF2_ERROR_INVALID.0);
    let mut text: Vec<String> = Vec::new();
    for (_, m) in msgs {
        if !m.is_empty() && !text.contains(&m) {
            text.push(m);
        }
    }
    Otf2Error {
        what: what.to_string(),
        code,
        cause: cause.filter(|&c| c != code),
        message: (!text.is_empty()).then(|| text.join("; ")),
    }
}

/// `Ok` for `OTF2_SUCCESS`, otherwise an error naming the call.
#[inline]
pub fn check(rc: sys::OTF2_ErrorCode, what: &str) -> Result<()> {
    if rc == sys::OTF2_ErrorCode::OTF2_SUCCESS {
        Ok(())
    } else {
        Err(error_for(what, Some(rc.0)))
    }
}

/// `check` for writes: libotf2 reports a buffer flush that could not write (a full disk)
/// through the error callback only, and the event or close call that flushed returns success.
/// A message pending after a write is that failure.
#[inline]
pub fn check_write(rc: sys::OTF2_ErrorCode, what: &str) -> Result<()> {
    check(rc, what)?;
    let pending = PENDING
        .try_with(|p| !p.borrow().is_empty())
        .unwrap_or(false);
    if pending {
        Err(error_for(what, None))
    } else {
        Ok(())
    }
}

/// An error for a libotf2 call that returned a NULL handle.
pub fn null_handle(what: &str) -> Otf2Error {
    error_for(what, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_become_errors_with_their_name() {
        init();
        assert!(check(sys::OTF2_ErrorCode::OTF2_SUCCESS, "x").is_ok());
        let e = check(sys::OTF2_ErrorCode::OTF2_ERROR_INVALID_ARGUMENT, "OTF2_Foo").unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("OTF2_Foo") && text.contains("INVALID_ARGUMENT"),
            "{text}"
        );
    }
}
