//! The formats tracex knows: how to recognise each, import it, export to it.

use tracex_ir::diag::DiagKind;
use tracex_ir::io::OutputTarget;
use tracex_ir::{Confidence, EventOrder, ImportCtx, Probe, Result, Sink};

use crate::input::Input;
use crate::options::Options;

pub type ImportFn = fn(&mut Input, &Options, &mut ImportCtx) -> Result<()>;
pub type ExportFn = fn(&OutputTarget, &Options) -> Result<Box<dyn Sink>>;

/// How an importer reads its input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputKind {
    /// A byte stream (decompressed transparently); stdin works.
    Stream,
    /// A file on disk (SQLite, archives); stdin is copied to a temporary file first.
    #[allow(dead_code)] // the first file-based importer (nsys) uses it
    File,
}

pub struct Format {
    pub name: &'static str,
    pub description: &'static str,
    /// File name endings that suggest the format; content sniffing decides.
    pub extensions: &'static [&'static str],
    pub sniff: fn(&Probe) -> Confidence,
    pub import: Option<ImportFn>,
    pub export: Option<ExportFn>,
    /// The order in which the importer pushes events.
    pub order: EventOrder,
    #[allow(dead_code)] // read by file-based importers' registry entries
    pub input: InputKind,
    pub diagnostics: &'static [&'static DiagKind],
}

fn chrome_import(input: &mut Input, opts: &Options, ctx: &mut ImportCtx) -> Result<()> {
    let r = input.take_reader()?;
    tracex_chrome::import(r, &opts.chrome_import, ctx)
}

fn chrome_export(target: &OutputTarget, opts: &Options) -> Result<Box<dyn Sink>> {
    Ok(Box::new(tracex_chrome::Exporter::create(
        target,
        &opts.chrome_export,
    )?))
}

static FORMATS: &[Format] = &[Format {
    name: tracex_chrome::NAME,
    description: "Chrome Trace Event JSON (Perfetto, chrome://tracing, speedscope); plain or gzip",
    extensions: tracex_chrome::EXTENSIONS,
    sniff: tracex_chrome::sniff,
    import: Some(chrome_import),
    export: Some(chrome_export),
    order: EventOrder::Unsorted,
    input: InputKind::Stream,
    diagnostics: tracex_chrome::DIAGNOSTICS,
}];

pub fn formats() -> &'static [Format] {
    FORMATS
}

pub fn by_name(name: &str) -> Option<&'static Format> {
    let n = name.to_ascii_lowercase();
    FORMATS
        .iter()
        .find(|f| f.name == n || (n == "json" && f.name == "chrome"))
}

/// The output format suggested by a file name, longest matching extension first.
pub fn for_output_name(name: &str) -> Option<&'static Format> {
    let lower = name.to_ascii_lowercase();
    FORMATS
        .iter()
        .filter(|f| f.export.is_some())
        .flat_map(|f| f.extensions.iter().map(move |e| (f, *e)))
        .filter(|(_, e)| lower.ends_with(e))
        .max_by_key(|(_, e)| e.len())
        .map(|(f, _)| f)
}

/// Every diagnostic kind tracex can report.
pub fn all_diagnostics() -> Vec<&'static DiagKind> {
    let mut v: Vec<&'static DiagKind> = tracex_ir::diag::kinds::ALL.to_vec();
    for f in FORMATS {
        v.extend_from_slice(f.diagnostics);
    }
    v.sort_by_key(|k| k.name);
    v.dedup_by_key(|k| k.name);
    v
}
