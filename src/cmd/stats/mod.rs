//! `tracex stats`: durations of events by name and kind, per trace, and across a series of
//! traces that differ in one parameter taken from their file names.

mod collect;
mod plot;
mod select;
mod summary;
mod table;

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use anyhow::{bail, Context};
use tracex_ir::format::Options;

use crate::cli::CommonArgs;
pub use summary::Stat;

#[derive(clap::Args, Debug)]
pub struct StatsArgs {
    /// Traces to analyse (any format tracex reads)
    #[arg(required = true, value_name = "TRACE")]
    pub traces: Vec<String>,

    /// Event name patterns (regular expressions searched in names, or globs with --glob):
    /// one row per pattern and kind, aggregating every matching name
    #[arg(long, num_args = 1.., value_name = "PATTERN")]
    pub events: Vec<String>,

    /// Read --events patterns as globs (`cuda*Memcpy*`) matched against whole names
    #[arg(long)]
    pub glob: bool,

    /// With --events: one row per matching name instead of one per pattern
    #[arg(long)]
    pub by_name: bool,

    /// Without --events: how many (name, kind) rows to show, by total time
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub top: usize,

    /// Only these kinds: cuda-api, kernel, memcpy, memset, sync, nvtx, osrt, mpi, library, other
    #[arg(long, value_delimiter = ',', value_name = "KINDS")]
    pub kind: Vec<String>,

    /// The varying parameter, from each file name: `run_b$p.sqlite` ($p = the value) or a regex
    /// with one capture group; prints one column per value, sorted numerically
    #[arg(long, value_name = "PATTERN")]
    pub param: Option<String>,

    /// The statistic shown per parameter value (with --param) and plotted
    #[arg(long, value_enum, default_value = "mean")]
    pub stat: Stat,

    /// For NVTX ranges, use the GPU time of the work launched inside them in --param tables and
    /// plots (other kinds are unaffected)
    #[arg(long)]
    pub gpu: bool,

    /// Output format
    #[arg(long, value_enum, default_value = "table")]
    pub format: table::OutFormat,

    /// Time unit of table and markdown output (csv and json are always in ns)
    #[arg(long, value_enum, default_value = "ms")]
    pub unit: table::Unit,

    /// Draw the statistic against the parameter (needs --param) as an SVG file
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,

    /// Input format, instead of recognising it from the content
    #[arg(long, value_name = "FORMAT")]
    pub from: Option<String>,

    /// Traces read at once (default: the number of cores)
    #[arg(short, long, value_name = "N")]
    pub jobs: Option<usize>,

    #[command(flatten)]
    pub common: CommonArgs,
}

/// Reads one trace through the standard pipeline into the statistics sink.
fn read_trace(path: &str, args: &StatsArgs) -> anyhow::Result<collect::TraceStats> {
    let mut sources = super::open_sources(&[path.to_string()], args.from.as_deref())?;
    let mut sink = collect::StatsSink::default();
    super::run(
        &mut sources,
        Options::default(),
        &args.common,
        crate::pipeline::Align::Clock,
        &mut sink,
        true,
    )?;
    let stats = sink.result.take().context("no statistics")?;
    Ok(stats)
}

/// Reads every trace, `jobs` at a time; results in input order.
fn read_all(args: &StatsArgs, quiet: bool) -> Vec<anyhow::Result<collect::TraceStats>> {
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .clamp(1, args.traces.len().max(1));
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<anyhow::Result<collect::TraceStats>>>> =
        Mutex::new((0..args.traces.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(path) = args.traces.get(i) else {
                    break;
                };
                let r = read_trace(path, args).with_context(|| path.clone());
                if !quiet {
                    match &r {
                        Ok(_) => eprintln!("tracex: read {path}"),
                        Err(e) => eprintln!("tracex: error: {e:#}"),
                    }
                }
                results.lock().expect("lock")[i] = Some(r);
            });
        }
    });
    results
        .into_inner()
        .expect("lock")
        .into_iter()
        .map(|r| r.expect("every trace read"))
        .collect()
}

pub fn run(args: &StatsArgs, quiet: bool) -> anyhow::Result<()> {
    if args.plot.is_some() && args.param.is_none() {
        bail!("--plot draws the statistic against the parameter: give --param too");
    }
    let matcher = select::Matcher::new(&args.events, args.glob, args.by_name, &args.kind)?;
    let param = args
        .param
        .as_deref()
        .map(select::ParamPattern::new)
        .transpose()?;
    let mut reports = Vec::new();
    let mut failed = 0;
    for (path, r) in args.traces.iter().zip(read_all(args, quiet)) {
        match r {
            Ok(stats) => {
                let value = match &param {
                    Some(p) => Some(p.value_of(path).with_context(|| {
                        format!(
                            "{path}: the file name does not match --param {:?}",
                            args.param.as_deref().unwrap_or("")
                        )
                    })?),
                    None => None,
                };
                reports.push(select::TraceReport::new(path, value, stats, &matcher));
            }
            Err(e) => {
                if quiet {
                    eprintln!("tracex: error: {e:#}");
                }
                failed += 1;
            }
        }
    }
    if reports.is_empty() {
        bail!("no trace could be read");
    }
    let rows = select::choose_rows(&reports, &matcher, args.top);
    let mut out = std::io::stdout().lock();
    match &param {
        None => table::write_per_trace(&mut out, &reports, &rows, args.format, args.unit)?,
        Some(_) => {
            let pivot = select::Pivot::new(&reports, &rows, args.stat, args.gpu);
            table::write_pivot(&mut out, &pivot, args.stat, args.format, args.unit)?;
            if let Some(svg) = &args.plot {
                plot::write_svg(svg, &pivot, args.stat, args.unit)
                    .with_context(|| format!("cannot write {}", svg.display()))?;
                if !quiet {
                    eprintln!("tracex: plot written to {}", svg.display());
                }
            }
        }
    }
    if failed > 0 {
        bail!(
            "{failed} of {} traces could not be read (see above)",
            args.traces.len()
        );
    }
    Ok(())
}
