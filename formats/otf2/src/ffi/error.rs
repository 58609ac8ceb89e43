//! Every libotf2 return code becomes a Rust error, with the message libotf2 wrote for it.
//!
//! libotf2 reports problems through a process-wide error callback (by default it prints them).
//! [`init`] installs one that keeps the last message of the calling thread instead, so that
//! [`check`] can attach it to the error it returns and nothing is printed behind tracex's back.

use std::cell::Cell;
use std::ffi::CStr;
use std::fmt;
use std::os::raw::{c_char, c_ulong, c_void};
use std::sync::Once;

use otf2_sys as sys;

/// A failed libotf2 call: which call, the error code, and libotf2's own message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Otf2Error {
    pub what: String,
    pub code: i32,
    pub message: Option<String>,
}

impl Otf2Error {
    /// An error raised on the Rust side of the binding (a callback failed, a bad argument).
    pub fn other(what: impl Into<String>) -> Otf2Error {
        Otf2Error {
            what: what.into(),
            code: sys::OTF2_ErrorCode::OTF2_ERROR_INVALID.0,
            message: None,
        }
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

thread_local! {
    /// The last (code, message) libotf2 reported on this thread.
    static LAST: Cell<Option<(i32, String)>> = const { Cell::new(None) };
}

/// Formats libotf2's printf-style message and keeps it for [`check`]; prints nothing.
unsafe extern "C" fn on_error(
    _user: *mut c_void,
    _file: *const c_char,
    _line: u64,
    _function: *const c_char,
    code: sys::OTF2_ErrorCode,
    fmt: *const c_char,
    va: *mut sys::__va_list_tag,
) -> sys::OTF2_ErrorCode {
    let mut buf = [0 as c_char; 512];
    if !fmt.is_null() {
        // SAFETY: `fmt` and `va` are the format and argument list libotf2 passes for this
        // message; vsnprintf writes at most `buf.len()` bytes including the terminating NUL.
        unsafe { sys::vsnprintf(buf.as_mut_ptr(), buf.len() as c_ulong, fmt, va) };
    }
    // SAFETY: `buf` is NUL-terminated (zeroed, and vsnprintf always terminates).
    let msg = unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    let _ = LAST.try_with(|l| l.set(Some((code.0, msg))));
    code
}

/// Installs the error callback (once per process).
pub fn init() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: registers a function with the signature libotf2 expects; it never unwinds.
        unsafe {
            sys::OTF2_Error_RegisterCallback(Some(on_error), std::ptr::null_mut());
        }
    });
}

/// The message libotf2 reported for `code` on this thread, if it was the last one.
fn take_message(code: i32) -> Option<String> {
    LAST.try_with(|l| l.take())
        .ok()
        .flatten()
        .and_then(|(c, m)| (c == code && !m.is_empty()).then_some(m))
}

/// `Ok` for `OTF2_SUCCESS`, otherwise an error naming the call.
#[inline]
pub fn check(rc: sys::OTF2_ErrorCode, what: &str) -> Result<()> {
    if rc == sys::OTF2_ErrorCode::OTF2_SUCCESS {
        Ok(())
    } else {
        Err(Otf2Error {
            what: what.to_string(),
            code: rc.0,
            message: take_message(rc.0),
        })
    }
}

/// An error for a libotf2 call that returned a NULL handle.
pub fn null_handle(what: &str) -> Otf2Error {
    let msg = LAST.try_with(|l| l.take()).ok().flatten();
    Otf2Error {
        what: what.to_string(),
        code: msg
            .as_ref()
            .map_or(sys::OTF2_ErrorCode::OTF2_ERROR_INVALID.0, |(c, _)| *c),
        message: msg.map(|(_, m)| m),
    }
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
