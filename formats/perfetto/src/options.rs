//! Options of the Perfetto importer and exporter.

/// Import options.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct ImportOptions {}

/// Export options.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ExportOptions {
    /// Gzip the output (default: when the output name ends in `.gz`).
    pub gzip: Option<bool>,
    /// gzip level 0–9.
    pub gzip_level: u32,
}

impl Default for ExportOptions {
    fn default() -> Self {
        ExportOptions {
            gzip: None,
            gzip_level: 1,
        }
    }
}
