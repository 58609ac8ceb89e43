//! Chrome JSON's descriptor: its names, how to recognise, read and write it.

use tracex_ir::format::{one_file, Export, ExportSink, Format, Import, InputKind, Options, Source};
use tracex_ir::io::OutputTarget;
use tracex_ir::{EventOrder, ImportCtx, Result};

use crate::export::Exporter;
use crate::options::{ExportOptions, ImportOptions};

/// Format name in the registry.
pub const NAME: &str = "chrome";

pub static FORMAT: Format = Format {
    name: NAME,
    aliases: &["json"],
    description: "Chrome Trace Event JSON (Perfetto, chrome://tracing, speedscope); plain or gzip",
    // hints only; content decides
    extensions: &[".json", ".json.gz", ".trace", ".pt.trace.json", ".log"],
    sniff: crate::sniff::sniff,
    refines: None,
    diagnostics: crate::diag::DIAGNOSTICS,
    import: Some(Import {
        order: EventOrder::Unsorted,
        input: InputKind::Stream,
        run: import,
        activities: &[],
        select_activity: None,
    }),
    export: Some(Export {
        create: export,
        paths: one_file,
    }),
};

fn import(source: &mut dyn Source, opts: &Options, ctx: &mut ImportCtx) -> Result<()> {
    crate::import::import(source.reader()?, &opts.get::<ImportOptions>(), ctx)
}

fn export(target: &OutputTarget, opts: &Options) -> Result<ExportSink> {
    Ok(ExportSink::Movable(Box::new(Exporter::create(
        target,
        &opts.get::<ExportOptions>(),
    )?)))
}
