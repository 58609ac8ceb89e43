//! Folded stacks (`frame;frame;leaf COUNT`, the input of flame-graph tools) to and from the
//! tracex IR. Same shape as every tracex format crate: the descriptor [`FORMAT`], [`sniff`],
//! [`import()`], [`Exporter`], the options in [`options`] and the diagnostics in [`diag`].
//!
//! Reads plain folded files and the *extended* folded lines of the eBPF uprobe profiler
//! (`timestamp_ns comm pid tid cpu frame;frame;...`). Writes folded stacks from samples, from
//! timelines (self time per slice nesting), or GPU work by the CPU stack that launched it: the
//! CUPTI + uprobe merge and the same join from nsys backtraces.
//!
//! Formats, options, matching and what is lost: `docs/formats/folded.md`.

pub mod diag;
mod differential;
pub mod export;
mod format;
pub mod import;
pub mod options;
pub mod sniff;

pub use diag::DIAGNOSTICS;
pub use differential::{DIFF_AFTER, DIFF_BEFORE};
pub use export::Exporter;
pub use format::{FORMAT, NAME};
pub use import::import;
pub use options::{ExportOptions, ImportOptions};
pub use sniff::sniff;
