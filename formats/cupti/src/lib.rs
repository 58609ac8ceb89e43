//! CUPTI activity records to the tracex IR: the raw text the CUPTI injection library writes
//! (`RUNTIME [ start, end ] ...`, exact ns) and the Chrome JSON `cupti_trace_parser.py` makes of
//! it (`cat` `CUDA_Runtime`, `GPU_Kernel`, ...; read with `tracex-chrome`). Same shape as every
//! tracex format crate: the descriptor [`FORMAT`], [`sniff`], [`import()`], the options in
//! [`options`] and the diagnostics in [`diag`]; there is no exporter (write Chrome JSON or
//! folded stacks instead).
//!
//! Mapping and losses: `docs/formats/cupti.md`.

pub mod diag;
mod format;
pub mod import;
pub mod options;
pub mod sniff;

pub use diag::DIAGNOSTICS;
pub use format::{FORMAT, NAME};
pub use import::import;
pub use options::ImportOptions;
pub use sniff::sniff;
