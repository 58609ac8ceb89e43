//! Differential folded files (`stack before after`, two count columns): the importer makes two
//! samples of each line, named apart, and the exporter writes both columns back.

/// `Sample::name` of the first count column of a differential (two-count) folded file.
pub const DIFF_BEFORE: &str = "folded:before";
/// `Sample::name` of the second count column of a differential folded file.
pub const DIFF_AFTER: &str = "folded:after";
