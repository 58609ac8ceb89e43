//! The folded stacks descriptor: its names, how to recognise, read and write it.

use tracex_ir::format::{one_file, Export, ExportSink, Format, Import, InputKind, Options, Source};
use tracex_ir::io::OutputTarget;
use tracex_ir::{EventOrder, ImportCtx, Result};

use crate::export::Exporter;
use crate::options::{ExportOptions, ImportOptions};

/// Format name in the registry.
pub const NAME: &str = "folded";

pub static FORMAT: Format = Format {
    name: NAME,
    aliases: &["collapsed"],
    description: "Folded stacks (inferno, flamegraph.pl, speedscope); reads the uprobe profiler's extended lines too; writes GPU work by CPU stack",
    // hints only; content decides
    extensions: &[".folded", ".collapsed"],
    sniff: crate::sniff::sniff,
    refines: None,
    diagnostics: crate::diag::DIAGNOSTICS,
    import: Some(Import {
        // extended lines are timed and need not be in order
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
