//! OTF2 archives (Score-P, Vampir) to and from the tracex IR, through the system's libotf2.
//! Same shape as every tracex format crate: the descriptor [`FORMAT`], [`sniff`], [`import()`],
//! [`Exporter`], the options in [`options`] and the diagnostics in [`diag`]; [`ffi`] is the safe
//! layer over `otf2-sys`.
//!
//! Mapping both ways and what is lost: `docs/formats/otf2.md`.

pub mod diag;
pub mod export;
pub mod ffi;
mod format;
pub mod identity;
pub mod import;
pub mod memprofile;
pub mod options;
pub mod sniff;

pub use diag::DIAGNOSTICS;
pub use export::output::Layout;
pub use export::Exporter;
pub use format::{FORMAT, NAME};
pub use import::import;
pub use options::{ExportOptions, ImportOptions};
pub use sniff::sniff;

/// The libotf2 tracex was built with and how it is linked, for `tracex --version`.
pub fn library() -> String {
    format!(
        "libotf2 {}.{}.{} ({})",
        otf2_sys::OTF2_VERSION_MAJOR,
        otf2_sys::OTF2_VERSION_MINOR,
        otf2_sys::OTF2_VERSION_BUGFIX,
        match otf2_sys::LINK_KIND {
            "static" => "linked statically",
            _ => "shared library",
        }
    )
}
