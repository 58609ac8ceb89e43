//! Folded stacks (`frame;frame;leaf COUNT`, the input of flame-graph tools) to and from the
//! tracex IR. Same shape as every tracex format crate: [`sniff`], [`import`], [`export`], and the
//! options in [`options`].
//!
//! Reads plain folded files and the *extended* folded lines of the eBPF uprobe profiler
//! (`timestamp_ns comm pid tid cpu frame;frame;...`). Writes folded stacks from samples, from
//! timelines (self time per slice nesting), or GPU work by the CPU stack that launched it: the
//! CUPTI + uprobe merge and the same join from nsys backtraces.
//!
//! Formats, options, matching and what is lost: `docs/formats/folded.md`.

pub mod diag;
pub mod export;
pub mod import;
pub mod options;
pub mod sniff;

pub use diag::DIAGNOSTICS;
pub use export::Exporter;
pub use import::import;
pub use options::{ExportOptions, ImportOptions};
pub use sniff::sniff;

/// Format name in the registry.
pub const NAME: &str = "folded";
/// File name endings that suggest this format (hints only; content decides).
pub const EXTENSIONS: &[&str] = &[".folded", ".collapsed"];

/// `Sample::name` of the first count column of a differential (two-count) folded file.
pub const DIFF_BEFORE: &str = "folded:before";
/// `Sample::name` of the second count column of a differential folded file.
pub const DIFF_AFTER: &str = "folded:after";
