//! The CUPTI descriptor: its names, how to recognise and read it (it has no exporter: write
//! Chrome JSON or folded stacks instead).

use tracex_ir::format::{Format, Import, InputKind, Options, Source};
use tracex_ir::{EventOrder, ImportCtx, Result};

use crate::options::ImportOptions;

/// Format name in the registry.
pub const NAME: &str = "cupti";

pub static FORMAT: Format = Format {
    name: NAME,
    aliases: &["cupti-json", "cupti-text"],
    description: "CUPTI activity records: the injection library's text (gpu_results.txt) or its Chrome JSON (gpu_results.json)",
    // hints only; content decides (the text is usually gpu_results.txt, the JSON
    // gpu_results.json)
    extensions: &[".cupti", ".cupti.txt", ".cupti.json"],
    sniff: crate::sniff::sniff,
    // CUPTI JSON is Chrome JSON with more meaning
    refines: Some(tracex_chrome::NAME),
    diagnostics: crate::diag::DIAGNOSTICS,
    import: Some(Import {
        // records come as activity buffers complete, not in time order
        order: EventOrder::Unsorted,
        input: InputKind::Stream,
        run: import,
        activities: &[],
        select_activity: None,
    }),
    export: None,
};

fn import(source: &mut dyn Source, opts: &Options, ctx: &mut ImportCtx) -> Result<()> {
    crate::import::import(source.reader()?, &opts.get::<ImportOptions>(), ctx)
}
