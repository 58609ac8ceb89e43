//! The conversion pipeline: importers push into an optional reorder stage, then the overlap
//! router, then the sink (an exporter, or a command's own sink).

use anyhow::Context;
use tracex_ir::nest::OverlapRouter;
use tracex_ir::order::Sorter;
use tracex_ir::{Defs, EventOrder, ImportCtx, Sink};

use crate::formats::{Format, InputKind};
use crate::input::Input;
use crate::options::Options;

/// An input with the format chosen for it.
pub struct Source {
    pub input: Input,
    pub format: &'static Format,
}

/// Whether the events must be reordered before `sink`: any unsorted importer, or several inputs.
pub fn needs_sort(sources: &[Source]) -> bool {
    sources.len() > 1 || sources.iter().any(|s| s.format.order != EventOrder::Sorted)
}

/// `sink` behind the overlap router, and behind a sorter when `sort`.
pub fn chain(sink: Box<dyn Sink>, sort: bool, mem_budget: usize) -> Box<dyn Sink> {
    let routed = OverlapRouter::new(sink);
    if sort {
        Box::new(Sorter::with_budget(routed, mem_budget))
    } else {
        Box::new(routed)
    }
}

/// Runs every importer into `sink` (without finishing it).
pub fn import_all(
    sources: &mut [Source],
    opts: &Options,
    defs: &mut Defs,
    sink: &mut dyn Sink,
) -> anyhow::Result<()> {
    for s in sources.iter_mut() {
        let import = s.format.import.expect("importable format");
        if s.format.input == InputKind::File {
            // stdin and gzip input become a temporary file before the importer opens it
            s.input.file_path().with_context(|| {
                format!(
                    "{}: cannot copy the input to a temporary file",
                    s.input.display
                )
            })?;
        }
        let progress = s.input.progress.clone();
        let mut ctx = ImportCtx::new(defs, sink, &progress);
        import(&mut s.input, opts, &mut ctx)
            .with_context(|| format!("{} ({})", s.input.display, s.format.name))?;
    }
    Ok(())
}

/// Parses a size like `512M`, `2G`, `100k` or a plain byte count.
pub fn parse_size(text: &str) -> Option<usize> {
    let t = text.trim();
    let (num, mul) = match t.char_indices().find(|(_, c)| c.is_ascii_alphabetic()) {
        Some((i, _)) => {
            let mul = match t[i..].to_ascii_lowercase().trim_end_matches(['b', 'i']) {
                "" => 1,
                "k" => 1 << 10,
                "m" => 1 << 20,
                "g" => 1 << 30,
                _ => return None,
            };
            (&t[..i], mul)
        }
        None => (t, 1),
    };
    num.trim().parse::<usize>().ok()?.checked_mul(mul)
}
