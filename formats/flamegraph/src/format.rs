//! The SVG flame graph descriptor: its names and how to write it.

use tracex_ir::format::{one_file, Export, ExportSink, Format, Options};
use tracex_ir::io::OutputTarget;
use tracex_ir::Result;

use crate::export::Exporter;
use crate::options::ExportOptions;

/// Format name in the registry.
pub const NAME: &str = "svg";

pub static FORMAT: Format = Format {
    name: NAME,
    aliases: &["flamegraph", "flamegraph-svg"],
    description: "SVG flame graph (rendered by inferno): the folded views and weights as a picture; GPU time by CPU stack from nsys, CUPTI + uprobe stacks, Chrome samples",
    extensions: &[".svg"],
    sniff: crate::sniff::sniff,
    refines: None,
    diagnostics: crate::diag::DIAGNOSTICS,
    import: None,
    export: Some(Export {
        create: export,
        paths: one_file,
    }),
};

fn export(target: &OutputTarget, opts: &Options) -> Result<ExportSink> {
    Ok(ExportSink::Movable(Box::new(Exporter::create(
        target,
        &opts.get::<tracex_folded::ExportOptions>(),
        &opts.get::<ExportOptions>(),
    )?)))
}
