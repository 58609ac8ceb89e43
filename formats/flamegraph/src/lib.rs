//! SVG flame graphs from the tracex IR, in one step: the folded exporter's views and weights
//! (samples, timelines, GPU work by the CPU stack that launched it; `--fold`, `--weight`),
//! rendered by the inferno library. Same shape as every tracex format crate: the descriptor
//! [`FORMAT`], [`sniff`] (SVG is written, never read), [`Exporter`], the options in
//! [`options`] and the diagnostics in [`diag`].
//!
//! What is drawn and what is lost: `docs/formats/flamegraph.md`.

pub mod diag;
pub mod export;
mod format;
pub mod options;
pub mod sniff;

pub use diag::DIAGNOSTICS;
pub use export::Exporter;
pub use format::{FORMAT, NAME};
pub use options::ExportOptions;
pub use sniff::sniff;
