//! One conversion: inputs into one output of a format, never over an input, replacing an
//! existing output only when asked. Both `convert` and `batch` run it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context};
use tracex_ir::format::{ExportSink, Format};
use tracex_ir::io::OutputTarget;

use tracex_ir::threaded::Threaded;
use tracex_ir::{Defs, Diagnostics, Sink};

use super::report::{Counting, InputReport, OutputReport, Report};
use crate::cli::ConvertArgs;
use crate::formats;
use crate::input::same_file;
use crate::pipeline::Opened;
use crate::split::{disk_size, Marks, SplitBy, Splitter};

pub fn output_format(out: &str, to: Option<&str>) -> anyhow::Result<&'static Format> {
    let names = || {
        formats::formats()
            .filter(|f| f.export.is_some())
            .map(|f| f.name)
            .collect::<Vec<_>>()
            .join(", ")
    };
    if let Some(name) = to {
        let Some(f) = formats::by_name(name) else {
            bail!("unknown output format {name:?} (one of: {})", names());
        };
        if f.export.is_none() {
            bail!("tracex cannot write {name} (it can write: {})", names());
        }
        return Ok(f);
    }
    if out == "-" {
        bail!("writing to stdout needs --to FORMAT (one of: {})", names());
    }
    formats::for_output_name(out).with_context(|| {
        format!(
            "cannot tell the output format from the name {out:?}; use --to FORMAT (one of: {})",
            names()
        )
    })
}

/// Whether an exporter that can runs on a thread of its own (`TRACEX_EXPORT_THREAD=0`: on the
/// importing thread, to compare the two).
fn export_thread() -> bool {
    std::env::var_os("TRACEX_EXPORT_THREAD").is_none_or(|v| v != "0")
}

/// Whether `path` lies inside the directory `dir`.
fn inside(path: &Path, dir: &Path) -> bool {
    match (path.canonicalize(), dir.canonicalize()) {
        (Ok(p), Ok(d)) => d.is_dir() && p.starts_with(d),
        _ => false,
    }
}

/// Whether `ins` may go to the output unordered: the output can take them so ([`Sink::unordered`]
/// — asked later, of the sink itself), nothing needs the total order in front of it (filters,
/// `--split-by`), every input is a plain file that can be read again should the output find
/// it needs the order after all, and together they are small enough for the output to hold
/// what it keeps of them (the memory budget). `TRACEX_UNORDERED=0` keeps the order always
/// (to compare the two); `TRACEX_UNORDERED=only` fails where the order is needed instead of
/// running again (the tests count the conversions that went unordered so).
fn may_go_unordered(
    ins: &[String],
    sources: &[Opened],
    args: &ConvertArgs,
) -> anyhow::Result<bool> {
    if std::env::var_os("TRACEX_UNORDERED").is_some_and(|v| v == "0") {
        return Ok(false);
    }
    if args.split_by.is_some()
        || !args.common.filter()?.is_empty()
        || !args.common.activity.is_empty()
    {
        return Ok(false);
    }
    let budget = crate::pipeline::parse_size(&args.common.mem_budget).unwrap_or(0) as u64;
    let mut bytes = 0u64;
    for (arg, s) in ins.iter().zip(sources) {
        let plain = s
            .input
            .path
            .as_ref()
            .filter(|_| !s.input.is_dir && !s.input.compressed);
        let Some(meta) = plain.and_then(|p| std::fs::metadata(p).ok()) else {
            return Ok(false);
        };
        if !meta.is_file() || crate::nsys_rep::is_report(arg) {
            return Ok(false);
        }
        bytes += meta.len();
    }
    Ok(bytes <= budget)
}

fn unordered_only() -> bool {
    std::env::var_os("TRACEX_UNORDERED").is_some_and(|v| v == "only")
}

/// Whether `e` is an output's call for the events in order ([`tracex_ir::Error::NeedsOrder`]).
fn needs_order(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        matches!(
            c.downcast_ref::<tracex_ir::Error>(),
            Some(tracex_ir::Error::NeedsOrder(_))
        )
    })
}

/// What one run of the inputs into the output gives: the diagnostics, the counts of events
/// written, and the numbered chunks written (`--split-by`).
type Converted = (
    Diagnostics,
    BTreeMap<&'static str, u64>,
    Option<Vec<PathBuf>>,
);

/// Imports `sources` (opened from `ins`) into one new output (or its numbered chunks). With
/// `unordered`, the sink is asked to take the events unordered ([`Sink::unordered`]).
#[allow(clippy::too_many_arguments)]
fn convert_sources(
    ins: &[String],
    sources: &mut [Opened],
    out: &str,
    (format, target): (&'static Format, &OutputTarget),
    args: &ConvertArgs,
    split: Option<SplitBy>,
    unordered: bool,
    quiet: bool,
) -> anyhow::Result<Converted> {
    let export = format.export.as_ref().expect("an output format");
    let opts = args.format_options(ins);
    let mut defs = Defs::new();
    let failed = || format!("conversion to {out} failed; nothing was written");
    // one output, or its numbered chunks: either way one sink, counted for --json
    let chunk_opts = args.format_options(ins);
    let mut splitter = match (split, target) {
        (Some(by), OutputTarget::Path(p)) => {
            let marks = Marks::intern(&mut defs);
            Some(Splitter::new(by, p, format, &chunk_opts, args.force, marks))
        }
        _ => None,
    };
    let mut single = match splitter {
        Some(_) => None,
        None => {
            Some((export.create)(target, &opts).with_context(|| format!("cannot create {out}"))?)
        }
    };
    // asked of the exporter itself, before a thread of its own takes it
    let unordered = unordered && single.as_mut().is_some_and(|s| s.sink().unordered());
    let (diag, counts) = std::thread::scope(|scope| -> anyhow::Result<_> {
        let mut threaded;
        // an unordered sink only keeps records as events come, which costs less than handing
        // the events to another thread (measured: 2.5 ms less CPU, 0.6 ms less time, on the
        // 20k-launch GPU merge); it works out the order at the end with a thread of its own
        let on_thread = export_thread() && !unordered;
        let sink: &mut dyn Sink = match (&mut splitter, &mut single) {
            (Some(s), _) => s,
            // the exporter formats and writes on a thread of its own while the input is read
            (None, Some(ExportSink::Movable(s))) => match on_thread {
                true => {
                    threaded = Threaded::spawn(scope, &mut **s).with_context(failed)?;
                    &mut threaded
                }
                false => &mut **s,
            },
            (None, Some(ExportSink::Bound(s))) => &mut **s,
            (None, None) => unreachable!("a sink was made above"),
        };
        let mut counting = Counting::new(sink);
        let (_, diag) = super::run_with(
            defs,
            sources,
            opts,
            &args.common,
            args.align,
            &mut counting,
            quiet,
            unordered,
        )
        .with_context(failed)?;
        Ok((diag, counting.counts()))
    })?;
    Ok((diag, counts, splitter.map(|s| s.outputs().to_vec())))
}

/// Converts `ins` into one output `out` of `format`, and says what it did.
pub fn convert_one(
    ins: &[String],
    out: &str,
    format: &'static Format,
    args: &ConvertArgs,
    quiet: bool,
) -> anyhow::Result<Report> {
    let split = args.split_by.as_deref().map(SplitBy::parse).transpose()?;
    let export = format.export.as_ref().expect("an output format");
    let target = if out == "-" {
        if split.is_some() {
            bail!("--split-by writes numbered files; give an output path, not -");
        }
        if args.json {
            bail!("--json prints the summary on stdout; give an output path, not -");
        }
        OutputTarget::Stdout
    } else {
        let p = PathBuf::from(out);
        let paths = (export.paths)(&p);
        for i in ins.iter().filter(|i| *i != "-") {
            // an output directory (an OTF2 archive) must not hold an input either
            if paths
                .iter()
                .any(|q| same_file(Path::new(i), q) || inside(Path::new(i), q))
            {
                bail!("the output {out} is also an input; tracex never overwrites its input");
            }
        }
        let taken: Vec<String> = paths
            .iter()
            .filter(|q| q.symlink_metadata().is_ok())
            .map(|q| q.display().to_string())
            .collect();
        if !taken.is_empty() && !args.force && split.is_none() {
            bail!("{} exists; use --force to replace it", taken.join(", "));
        }
        OutputTarget::Path(p)
    };
    let started = Instant::now();
    let mut sources = super::open_sources(ins, args.from.as_deref())?;
    let mut unordered = may_go_unordered(ins, &sources, args)?;
    let (diag, counts, chunks) = loop {
        let to = (format, &target);
        match convert_sources(ins, &mut sources, out, to, args, split, unordered, quiet) {
            // the output could not work out the order: again with the reorder stage
            Err(e) if unordered && needs_order(&e) && !unordered_only() => {
                unordered = false;
                sources = super::open_sources(ins, args.from.as_deref())?;
            }
            done => break done?,
        }
    };
    let files = match (chunks, &target) {
        (Some(c), _) => c,
        (None, OutputTarget::Path(p)) => (export.paths)(p),
        (None, OutputTarget::Stdout) => Vec::new(),
    };
    super::print_diagnostics(&diag, quiet);
    let seconds = started.elapsed().as_secs_f64();
    if !quiet {
        let inputs: Vec<String> = sources
            .iter()
            .map(|s| format!("{} ({})", s.input.display, s.format.name))
            .collect();
        let shown = if split.is_some() {
            format!(
                "{} chunks {}",
                files.len(),
                files
                    .first()
                    .map_or(String::new(), |f| format!("{}..", f.display()))
            )
        } else {
            out.to_string()
        };
        anstream::eprintln!(
            "tracex: {} -> {shown} ({}) in {seconds:.2} s",
            inputs.join(", "),
            format.name,
        );
    }
    let existing: Vec<&PathBuf> = files.iter().filter(|f| f.exists()).collect();
    Ok(Report {
        inputs: sources
            .iter()
            .map(|s| InputReport {
                path: s.input.display.clone(),
                format: s.format.name,
                bytes: s
                    .input
                    .path
                    .as_ref()
                    .filter(|_| !s.input.is_dir)
                    .and_then(|p| std::fs::metadata(p).ok())
                    .map(|m| m.len()),
            })
            .collect(),
        output: OutputReport {
            path: out.to_string(),
            format: format.name,
            bytes: existing.iter().map(|f| disk_size(f)).sum(),
            files: existing.iter().map(|f| f.display().to_string()).collect(),
        },
        events: counts,
        diagnostics: super::report::diagnostics(&diag),
        seconds,
    })
}
