//! The format registry: how to recognise each format, import it, export to it. Each format's
//! glue (registry entry, command-line options) lives in its own module here.

pub mod chrome;
pub mod cupti;
pub mod folded;
pub mod nsys;
#[cfg(feature = "otf2")]
pub mod otf2;
pub mod perfetto;

use tracex_ir::diag::DiagKind;
use tracex_ir::io::OutputTarget;
use tracex_ir::{Confidence, EventOrder, ImportCtx, Probe, Result, Sink};

use crate::input::Input;
use crate::options::Options;

pub type ImportFn = fn(&mut Input, &Options, &mut ImportCtx) -> Result<()>;
/// Sets a format's import options from the `--activity` words.
pub type SelectActivityFn = fn(&[String], &mut Options) -> std::result::Result<(), String>;
pub type ExportFn = fn(&OutputTarget, &Options) -> Result<Box<dyn Sink>>;

/// How an importer reads its input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputKind {
    /// A byte stream (decompressed transparently); stdin works.
    Stream,
    /// A file on disk (SQLite, archives); stdin is copied to a temporary file first.
    File,
}

pub struct Format {
    pub name: &'static str,
    /// Other names accepted by `--from` / `--to`.
    pub aliases: &'static [&'static str],
    pub description: &'static str,
    /// File name endings that suggest the format; content sniffing decides.
    pub extensions: &'static [&'static str],
    pub sniff: fn(&Probe) -> Confidence,
    pub import: Option<ImportFn>,
    pub export: Option<ExportFn>,
    /// The order in which the importer pushes events.
    pub order: EventOrder,
    pub input: InputKind,
    pub diagnostics: &'static [&'static DiagKind],
    /// The format this one is a more specific reading of (CUPTI's Chrome JSON is Chrome JSON):
    /// when both sniff the same input equally sure, the refining format wins.
    pub refines: Option<&'static str>,
    /// Lets the importer itself select `--activity` kinds (reading only those tables); without
    /// it the filter selects after import.
    pub select_activity: Option<SelectActivityFn>,
}

/// Every format, in the order `tracex formats` lists them.
static FORMATS: &[&Format] = &[
    &chrome::FORMAT,
    &cupti::FORMAT,
    &folded::FORMAT,
    &nsys::FORMAT,
    #[cfg(feature = "otf2")]
    &otf2::FORMAT,
    &perfetto::FORMAT,
];

pub fn formats() -> impl Iterator<Item = &'static Format> {
    FORMATS.iter().copied()
}

pub fn by_name(name: &str) -> Option<&'static Format> {
    let n = name.to_ascii_lowercase();
    formats().find(|f| f.name == n || f.aliases.contains(&n.as_str()))
}

/// The output format suggested by a file name, longest matching extension first.
pub fn for_output_name(name: &str) -> Option<&'static Format> {
    let lower = name.to_ascii_lowercase();
    formats()
        .filter(|f| f.export.is_some())
        .flat_map(|f| f.extensions.iter().map(move |e| (f, *e)))
        .filter(|(_, e)| lower.ends_with(e))
        .max_by_key(|(_, e)| e.len())
        .map(|(f, _)| f)
}

/// The paths an output occupies (several for OTF2), to refuse overwriting any of them.
pub fn output_paths(format: &Format, out: &std::path::Path) -> Vec<std::path::PathBuf> {
    #[cfg(feature = "otf2")]
    if format.name == otf2::FORMAT.name {
        return otf2::output_paths(out);
    }
    let _ = format;
    vec![out.to_path_buf()]
}

/// Every diagnostic kind tracex can report.
pub fn all_diagnostics() -> Vec<&'static DiagKind> {
    let mut v: Vec<&'static DiagKind> = tracex_ir::diag::kinds::ALL.to_vec();
    v.extend_from_slice(crate::filter::DIAGNOSTICS);
    v.extend_from_slice(crate::pipeline::DIAGNOSTICS);
    for f in formats() {
        v.extend_from_slice(f.diagnostics);
    }
    v.sort_by_key(|k| k.name);
    v.dedup_by_key(|k| k.name);
    v
}
