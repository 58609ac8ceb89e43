use std::io::Write;

use tracex_ir::dump::{dump_with, DumpOptions};
use tracex_ir::format::Options;
use tracex_ir::mem::MemSink;

use crate::cli::DumpArgs;

pub fn run(args: &DumpArgs, quiet: bool) -> anyhow::Result<()> {
    let mut sources = super::open_sources(std::slice::from_ref(&args.input), args.from.as_deref())?;
    let mut events = MemSink::default();
    let (defs, diag) = super::run(
        &mut sources,
        Options::default(),
        &args.common,
        crate::pipeline::Align::Clock,
        &mut events,
        quiet,
    )?;
    let text = dump_with(
        &defs,
        &events.events,
        &DumpOptions {
            diagnostics: (!args.no_diagnostics).then_some(&diag),
        },
    );
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    Ok(())
}
