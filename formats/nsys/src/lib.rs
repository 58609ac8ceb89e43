//! Nsight Systems SQLite exports (`nsys export --type sqlite`, nsys 2021 to 2026) to the tracex
//! IR. Same shape as every tracex format crate: [`sniff`], [`import`], the options in
//! [`options`], the diagnostics in [`DIAGNOSTICS`].
//!
//! The file is opened read-only and never changed; events are pushed in the IR's total order
//! (`EventOrder::Sorted`), with memory bounded by definitions and in-flight launches, not by rows.
//! Mapping per table and version, and what is not imported: `docs/formats/nsys.md`.

mod counters;
mod cpu;
mod db;
pub mod diag;
mod enums;
mod flows;
mod gpu;
mod identity;
mod import;
mod importer;
mod instants;
mod merge;
mod meta;
mod nvtx;
pub mod options;
mod plan;
mod projection;
mod samples;
pub mod sniff;
mod spool;
mod stacks;
mod strings;
mod tables;

pub use diag::DIAGNOSTICS;
pub use import::import;
pub use options::{Activities, Activity, ColorScheme, ImportOptions};
pub use sniff::sniff;

/// Format name in the registry.
pub const NAME: &str = "nsys";
/// File name endings that suggest this format (hints only; content decides).
pub const EXTENSIONS: &[&str] = &[".sqlite", ".sqlite3", ".db"];
