//! Chrome Trace Event Format (JSON, plain or gzip, object or bare-array form) to and from the
//! tracex IR. Same shape as every tracex format crate: the descriptor [`FORMAT`], [`sniff`],
//! [`import()`], [`Exporter`], the options in [`options`] and the diagnostics in [`diag`].
//!
//! Mapping both ways and what is lost: `docs/formats/chrome.md`.

pub mod diag;
pub mod export;
mod format;
pub mod import;
mod number;
pub mod options;
pub mod sniff;

pub use diag::DIAGNOSTICS;
pub use export::Exporter;
pub use format::{FORMAT, NAME};
pub use import::import;
pub use options::{ExportOptions, ImportOptions};
pub use sniff::sniff;
