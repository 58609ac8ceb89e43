//! Perfetto's native protobuf trace format (a stream of `TracePacket`s carrying TrackEvents,
//! `.pftrace`) to and from the tracex IR. Same shape as every tracex format crate: [`sniff`],
//! [`import`], [`export`], and the options in [`options`]. The wire format goes through `prost`,
//! with the types generated from a subset of Perfetto's own `.proto` files ([`pb`]).
//!
//! Mapping both ways and what is lost: `docs/formats/perfetto.md`.

pub mod diag;
pub mod export;
pub mod import;
pub mod options;
pub mod pb;
pub mod sniff;
mod wire;

pub use diag::DIAGNOSTICS;
pub use export::Exporter;
pub use import::import;
pub use options::{ExportOptions, ImportOptions};
pub use sniff::sniff;

/// Format name in the registry.
pub const NAME: &str = "perfetto";
/// File name endings that suggest this format (hints only; content decides).
pub const EXTENSIONS: &[&str] = &[
    ".pftrace",
    ".pftrace.gz",
    ".perfetto-trace",
    ".perfetto-trace.gz",
    ".pb",
    ".pb.gz",
];
