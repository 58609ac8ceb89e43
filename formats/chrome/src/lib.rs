//! Chrome Trace Event Format (JSON, plain or gzip, object or bare-array form) to and from the
//! tracex IR. Same shape as every tracex format crate: [`sniff`], [`import`], [`export`], and
//! the options in [`options`].
//!
//! Mapping both ways and what is lost: `docs/formats/chrome.md`.

pub mod diag;
pub mod export;
pub mod import;
mod number;
pub mod options;
pub mod sniff;

pub use diag::DIAGNOSTICS;
pub use export::Exporter;
pub use import::import;
pub use options::{ExportOptions, ImportOptions};
pub use sniff::sniff;

/// Format name in the registry.
pub const NAME: &str = "chrome";
/// File name endings that suggest this format (hints only; content decides).
pub const EXTENSIONS: &[&str] = &[".json", ".json.gz", ".trace", ".pt.trace.json", ".log"];
