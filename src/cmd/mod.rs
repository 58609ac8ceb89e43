pub mod batch;
pub mod completions;
mod conversion;
pub mod convert;
pub mod dump;
pub mod formats;
pub mod info;
pub mod report;
pub mod stats;

use std::io::Write;

use anyhow::{bail, Context};
use tracex_ir::format::Options;
use tracex_ir::{Defs, Diagnostics, Severity, Sink, Stage};

use crate::cli::CommonArgs;

use crate::input::Input;
use crate::pipeline::{self, Align, Chain, Opened};

/// Opens inputs and picks each one's format.
pub fn open_sources(paths: &[String], from: Option<&str>) -> anyhow::Result<Vec<Opened>> {
    if paths.iter().filter(|p| p.as_str() == "-").count() > 1 {
        bail!("stdin (-) can be read only once");
    }
    paths
        .iter()
        .map(|p| {
            let input = Input::open(p)?;
            let format = crate::formats::sniff::resolve(&input.probe(), &input.display, from)?;
            Ok(Opened { input, format })
        })
        .collect()
}

/// Imports `sources` through the standard chain into `sink` and finishes it, with the formats'
/// options `opts`. Returns the trace's definitions and the diagnostics counted on the way.
pub fn run(
    sources: &mut [Opened],
    opts: Options,
    common: &CommonArgs,
    align: Align,
    sink: &mut dyn Sink,
    quiet: bool,
) -> anyhow::Result<(Defs, Diagnostics)> {
    run_with(
        Defs::new(),
        sources,
        opts,
        common,
        align,
        sink,
        quiet,
        false,
    )
}

/// [`run`], starting from definitions the caller made (strings a sink needs interned); with
/// `unordered`, `sink` has agreed to take its events unordered ([`Sink::unordered`]) and
/// `common` has no filter.
#[allow(clippy::too_many_arguments)]
pub fn run_with(
    mut defs: Defs,
    sources: &mut [Opened],
    mut opts: Options,
    common: &CommonArgs,
    align: Align,
    sink: &mut dyn Sink,
    quiet: bool,
    unordered: bool,
) -> anyhow::Result<(Defs, Diagnostics)> {
    let mut diag = Diagnostics::default();
    let budget = pipeline::parse_size(&common.mem_budget)
        .with_context(|| format!("--mem-budget {:?} is not a size", common.mem_budget))?;
    let mut filter = common.filter()?;
    if !common.activity.is_empty() {
        // formats that select activities while reading (nsys tables) do it themselves; the
        // filter selects for the others
        let mut all_selected = true;
        for s in sources.iter() {
            match s.format.import.as_ref().and_then(|i| i.select_activity) {
                Some(select) => select(&common.activity, &mut opts)
                    .map_err(|e| anyhow::anyhow!("--activity: {e}"))?,
                None => all_selected = false,
            }
        }
        if all_selected {
            filter.activity.clear();
            filter.activity_out.clear();
        }
    }
    let opts = &opts;
    let args_read = sink.args_read();
    let sort = pipeline::needs_sort(sources);
    let mut chain = Chain::new(sink, sort, budget, filter, unordered);
    {
        let bar = crate::progress::Bar::start(
            sources.iter().map(|s| s.input.progress.clone()).collect(),
            "reading".into(),
            quiet,
        );
        let into = (&mut chain, args_read);
        pipeline::import_all(sources, opts, &mut defs, &mut diag, into, align)?;
        drop(bar);
    }
    if common.strict && diag.errors() > 0 {
        print_diagnostics(&diag, false);
        bail!(
            "--strict: the input has {} error(s) (listed above); nothing was written",
            diag.errors()
        );
    }
    let spinner = crate::progress::Spinner::start("ordering and writing", quiet);
    chain.end(&mut defs, &mut diag)?;
    drop(spinner);
    Ok((defs, diag))
}

/// The diagnostics summary on stderr.
pub fn print_diagnostics(diag: &Diagnostics, quiet: bool) {
    if quiet || diag.is_empty() {
        return;
    }
    use crate::term::{DIM, ERROR, WARNING};
    let mut err = anstream::stderr().lock();
    let _ = writeln!(
        err,
        "tracex: diagnostics (what was worked around or could not be carried over):"
    );
    for d in diag.iter() {
        let (sev, style) = match d.kind.severity {
            Severity::Info => ("info", anstyle::Style::new()),
            Severity::Warning => ("warning", WARNING),
            Severity::Error => ("ERROR", ERROR),
        };
        let _ = write!(
            err,
            "  {style}{sev:7}{style:#} {} ×{} (first at {})",
            d.kind.name, d.count, d.first
        );
        if let Some(detail) = &d.detail {
            let _ = write!(err, " [{detail}]");
        }
        let _ = writeln!(err, "\n          {DIM}{}{DIM:#}", d.kind.help);
    }
}
