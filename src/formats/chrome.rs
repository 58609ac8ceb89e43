//! Chrome Trace Event JSON in the registry.

use tracex_ir::io::OutputTarget;
use tracex_ir::{EventOrder, ImportCtx, Result, Sink};

use super::{Format, InputKind};
use crate::input::Input;
use crate::options::Options;

fn import(input: &mut Input, opts: &Options, ctx: &mut ImportCtx) -> Result<()> {
    let r = input.take_reader()?;
    tracex_chrome::import(r, &opts.chrome_import, ctx)
}

fn export(target: &OutputTarget, opts: &Options) -> Result<Box<dyn Sink>> {
    Ok(Box::new(tracex_chrome::Exporter::create(
        target,
        &opts.chrome_export,
    )?))
}

pub static FORMAT: Format = Format {
    name: tracex_chrome::NAME,
    aliases: &["json"],
    description: "Chrome Trace Event JSON (Perfetto, chrome://tracing, speedscope); plain or gzip",
    extensions: tracex_chrome::EXTENSIONS,
    sniff: tracex_chrome::sniff,
    import: Some(import),
    export: Some(export),
    order: EventOrder::Unsorted,
    input: InputKind::Stream,
    diagnostics: tracex_chrome::DIAGNOSTICS,
    refines: None,
    select_activity: None,
};

/// Chrome options on the command line.
#[derive(clap::Args, Debug, Clone)]
pub struct ChromeArgs {
    /// gzip level for .json.gz outputs (0-9)
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub gzip_level: u32,
}

impl ChromeArgs {
    pub fn apply(&self, opts: &mut Options) {
        opts.chrome_export.gzip_level = self.gzip_level;
    }
}
