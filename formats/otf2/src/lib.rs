//! OTF2 archives (Score-P, Vampir) to and from the tracex IR, through the system's libotf2.
//! Same shape as every tracex format crate: [`sniff`], [`import`], [`export`], and the options
//! in [`options`]; [`ffi`] is the safe layer over `otf2-sys`.
//!
//! Mapping both ways and what is lost: `docs/formats/otf2.md`.

pub mod diag;
pub mod export;
pub mod ffi;
pub mod identity;
pub mod import;
pub mod memprofile;
pub mod options;
pub mod sniff;

pub use diag::DIAGNOSTICS;
pub use export::output::Layout;
pub use export::Exporter;
pub use import::import;
pub use options::{ExportOptions, ImportOptions};
pub use sniff::sniff;

/// Format name in the registry.
pub const NAME: &str = "otf2";
/// File name endings that suggest this format (the anchor file).
pub const EXTENSIONS: &[&str] = &[".otf2"];
