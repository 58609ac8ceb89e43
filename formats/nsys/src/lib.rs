//! Nsight Systems SQLite exports (`nsys export --type sqlite`, nsys 2021 to 2026) to the tracex
//! IR. Same shape as every tracex format crate: the descriptor [`FORMAT`], [`sniff`],
//! [`import()`], the options in [`options`] and the diagnostics in [`diag`].
//!
//! The file is opened read-only and never changed; events are pushed in the IR's total order
//! (`EventOrder::Sorted`). Rows stream: memory holds definitions, in-flight launches, the launch
//! join's index (72 bytes per GPU row) and, for a table not stored in time order, 4 bytes a row.
//! Mapping per table and version, and what is not imported: `docs/formats/nsys.md`.

mod batch;
mod catalogue;
mod counters;
mod cpu;
mod db;
mod decoded;
pub mod diag;
mod dispatch;
mod emit;
mod enums;
mod flows;
mod format;
mod gpu;
mod held;
mod identity;
mod idmap;
mod import;
mod importer;
mod instants;
mod join;
mod merge;
mod meta;
mod nvtx;
pub mod options;
mod order;
mod pages;
mod plan;
mod projection;
mod samples;
mod scan;
mod shuffle;
pub mod sniff;
mod spool;
mod stacks;
mod strings;
mod tables;

pub use diag::DIAGNOSTICS;
pub use format::{FORMAT, NAME};
pub use import::import;
pub use options::{Activities, Activity, ColorScheme, ImportOptions};
pub use sniff::sniff;
