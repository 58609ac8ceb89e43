//! CUPTI activity records to the tracex IR: the raw text the CUPTI injection library writes
//! (`RUNTIME [ start, end ] ...`, exact ns) and the Chrome JSON `cupti_trace_parser.py` makes of
//! it (`cat` `CUDA_Runtime`, `GPU_Kernel`, ...; read with `tracex-chrome`). Same shape as every
//! tracex format crate: [`sniff`], [`import`], the diagnostics in [`diag`]; there is no
//! exporter (write Chrome JSON or folded stacks instead).
//!
//! Mapping and losses: `docs/formats/cupti.md`.

pub mod diag;
pub mod import;
pub mod sniff;

pub use diag::DIAGNOSTICS;
pub use import::import;
pub use sniff::sniff;

/// Format name in the registry.
pub const NAME: &str = "cupti";
/// File name endings that suggest this format (hints only; content decides: the text is
/// usually `gpu_results.txt`, the JSON `gpu_results.json`).
pub const EXTENSIONS: &[&str] = &[".cupti", ".cupti.txt", ".cupti.json"];
/// The format whose files this one refines: CUPTI JSON is Chrome JSON with more meaning.
pub const REFINES: &str = "chrome";
