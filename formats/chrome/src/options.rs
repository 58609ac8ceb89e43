//! Options of the Chrome importer and exporter.

/// Import options.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct ImportOptions {}

/// How flows are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FlowStyle {
    /// `s`/`t`/`f` events with `bp:"e"` at each point (every viewer draws these).
    #[default]
    Events,
}

/// Export options.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ExportOptions {
    /// Gzip the output (default: when the output name ends in `.gz`).
    pub gzip: Option<bool>,
    /// gzip level 0–9.
    pub gzip_level: u32,
    pub flows: FlowStyle,
    /// Kineto's categories, args and flow names on GPU work and CUDA calls (`--kineto`).
    pub kineto: bool,
}

impl Default for ExportOptions {
    fn default() -> Self {
        ExportOptions {
            gzip: None,
            gzip_level: 1,
            flows: FlowStyle::Events,
            kineto: false,
        }
    }
}
