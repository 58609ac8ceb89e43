//! CUPTI activity records (raw text or the Chrome JSON made from it) in the registry.

use tracex_ir::{EventOrder, ImportCtx, Result};

use super::{Format, InputKind};
use crate::input::Input;
use crate::options::Options;

fn import(input: &mut Input, _opts: &Options, ctx: &mut ImportCtx) -> Result<()> {
    let r = input.take_reader()?;
    tracex_cupti::import(r, ctx)
}

pub static FORMAT: Format = Format {
    name: tracex_cupti::NAME,
    aliases: &["cupti-json", "cupti-text"],
    description: "CUPTI activity records: the injection library's text (gpu_results.txt) or its Chrome JSON (gpu_results.json)",
    extensions: tracex_cupti::EXTENSIONS,
    sniff: tracex_cupti::sniff,
    import: Some(import),
    export: None,
    // Records come as activity buffers complete, not in time order.
    order: EventOrder::Unsorted,
    input: InputKind::Stream,
    diagnostics: tracex_cupti::DIAGNOSTICS,
    refines: Some(tracex_cupti::REFINES),
    select_activity: None,
};
