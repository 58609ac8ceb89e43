//! Perfetto protobuf traces (TrackEvent, `.pftrace`) in the registry.

use tracex_ir::io::OutputTarget;
use tracex_ir::{EventOrder, ImportCtx, Result, Sink};

use super::{Format, InputKind};
use crate::input::Input;
use crate::options::Options;

fn import(input: &mut Input, opts: &Options, ctx: &mut ImportCtx) -> Result<()> {
    // two passes (track descriptors may follow the events that use them): a file, never a pipe
    let path = input.file_path()?;
    tracex_perfetto::import(&path, &opts.perfetto_import, ctx)
}

fn export(target: &OutputTarget, opts: &Options) -> Result<Box<dyn Sink>> {
    Ok(Box::new(tracex_perfetto::Exporter::create(
        target,
        &opts.perfetto_export,
    )?))
}

pub static FORMAT: Format = Format {
    name: tracex_perfetto::NAME,
    aliases: &["pftrace", "protobuf", "perfetto-trace"],
    description: "Perfetto protobuf traces (TrackEvent; Perfetto SDK apps, Chrome, rocprofv3): .pftrace, .perfetto-trace, .pb; plain or gzip",
    extensions: tracex_perfetto::EXTENSIONS,
    sniff: tracex_perfetto::sniff,
    import: Some(import),
    export: Some(export),
    // packets of several sequences interleave, and slices complete at their end
    order: EventOrder::Unsorted,
    input: InputKind::File,
    diagnostics: tracex_perfetto::DIAGNOSTICS,
    refines: None,
    select_activity: None,
};
