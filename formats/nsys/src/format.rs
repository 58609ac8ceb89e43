//! The Nsight Systems descriptor: its names, how to recognise and read it (there is no
//! exporter).

use tracex_ir::format::{Format, Import, InputKind, Options, Source};
use tracex_ir::{EventOrder, ImportCtx, Result};

use crate::options::{Activities, Activity, ImportOptions};

/// Format name in the registry.
pub const NAME: &str = "nsys";

pub static FORMAT: Format = Format {
    name: NAME,
    aliases: &["nsight", "sqlite"],
    description: "Nsight Systems SQLite export (nsys export --type sqlite), nsys 2021-2026",
    // hints only; content decides
    extensions: &[".sqlite", ".sqlite3", ".db"],
    sniff: crate::sniff::sniff,
    refines: None,
    diagnostics: crate::diag::DIAGNOSTICS,
    import: Some(Import {
        order: EventOrder::Sorted,
        input: InputKind::File,
        run: import,
        activities: &Activity::NAMES,
        select_activity: Some(select_activity),
    }),
    export: None,
};

fn import(source: &mut dyn Source, opts: &Options, ctx: &mut ImportCtx) -> Result<()> {
    crate::import::import(&source.file()?, &opts.get::<ImportOptions>(), ctx)
}

/// `--activity` words as nsys tables, so that the importer reads only what is asked for.
fn select_activity(words: &[String], opts: &mut Options) -> std::result::Result<(), String> {
    if let Some(a) = Activities::from_words(words)? {
        opts.get_mut::<ImportOptions>().activities = a;
    }
    Ok(())
}
