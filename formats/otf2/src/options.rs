//! Options of the OTF2 importer and exporter.

use std::path::PathBuf;

/// Import options.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct ImportOptions {}

/// Export options.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ExportOptions {
    /// A TensorFlow memory profile (`*.memory_profile.json[.gz]`) whose allocators are written
    /// beside the trace, as the reference converter does.
    pub memory_profile: Option<PathBuf>,
    /// Size of libotf2's event buffer per location (256 KiB to 16 MiB); a full buffer is
    /// flushed to disk. libotf2 touches all of it, so memory is locations × this.
    pub chunk_size: u64,
}

impl Default for ExportOptions {
    fn default() -> Self {
        ExportOptions {
            memory_profile: None,
            chunk_size: 256 << 10,
        }
    }
}
