//! The Perfetto protobuf descriptor: its names, how to recognise, read and write it.

use tracex_ir::format::{one_file, Export, ExportSink, Format, Import, InputKind, Options, Source};
use tracex_ir::io::OutputTarget;
use tracex_ir::{EventOrder, ImportCtx, Result};

use crate::export::Exporter;
use crate::options::{ExportOptions, ImportOptions};

/// Format name in the registry.
pub const NAME: &str = "perfetto";

pub static FORMAT: Format = Format {
    name: NAME,
    aliases: &["pftrace", "protobuf", "perfetto-trace"],
    description: "Perfetto protobuf traces (TrackEvent; Perfetto SDK apps, Chrome, rocprofv3): .pftrace, .perfetto-trace, .pb; plain or gzip",
    // hints only; content decides
    extensions: &[
        ".pftrace",
        ".pftrace.gz",
        ".perfetto-trace",
        ".perfetto-trace.gz",
        ".pb",
        ".pb.gz",
    ],
    sniff: crate::sniff::sniff,
    refines: None,
    diagnostics: crate::diag::DIAGNOSTICS,
    import: Some(Import {
        // packets of several sequences interleave, and slices complete at their end
        order: EventOrder::Unsorted,
        // two passes (track descriptors may follow the events that use them): a file
        input: InputKind::File,
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
    let path = source.file()?;
    crate::import::import(&path, &opts.get::<ImportOptions>(), ctx)
}

fn export(target: &OutputTarget, opts: &Options) -> Result<ExportSink> {
    Ok(ExportSink::Movable(Box::new(Exporter::create(
        target,
        &opts.get::<ExportOptions>(),
    )?)))
}
