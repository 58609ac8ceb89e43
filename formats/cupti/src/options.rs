//! Options of the CUPTI importer.

/// Import options: none yet (both forms are read in full); the type keeps `import` the same
/// shape as every format's.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct ImportOptions {}
