//! Options of the SVG flame graph. The view and its weight are the folded exporter's options
//! (`tracex_folded::ExportOptions`: `--fold`, `--weight`, `--prefix`); these say how to draw.

/// Export options.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct ExportOptions {
    /// The title; default: what the view measures ("GPU time by CPU call stack").
    pub title: Option<String>,
    /// The line under the title; default: the source, the weight and the total.
    pub subtitle: Option<String>,
    /// What was measured, named in the default subtitle (the input files).
    pub source: Option<String>,
    /// An icicle graph: roots at the top.
    pub inverted: bool,
}
