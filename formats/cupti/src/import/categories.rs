//! Categories the CUPTI importer gives that the IR's `kind::cat` has no name for.

/// Category of CUPTI overhead slices.
pub const CAT_OVERHEAD: &str = "cupti_overhead";
/// Category of CUPTI memory (allocation) instants.
pub const CAT_MEMORY: &str = "cupti_memory";
