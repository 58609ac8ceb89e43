//! Perfetto's native protobuf trace format (a stream of `TracePacket`s carrying TrackEvents,
//! `.pftrace`) to and from the tracex IR. Same shape as every tracex format crate: the
//! descriptor [`FORMAT`], [`sniff`], [`import()`], [`Exporter`], the options in [`options`] and
//! the diagnostics in [`diag`]. The wire format goes through `prost`, with the types generated
//! from a subset of Perfetto's own `.proto` files ([`pb`]).
//!
//! Mapping both ways and what is lost: `docs/formats/perfetto.md`.

pub mod diag;
pub mod export;
mod format;
pub mod import;
pub mod options;
pub mod pb;
pub mod sniff;
mod wire;

pub use diag::DIAGNOSTICS;
pub use export::Exporter;
pub use format::{FORMAT, NAME};
pub use import::import;
pub use options::{ExportOptions, ImportOptions};
pub use sniff::sniff;
