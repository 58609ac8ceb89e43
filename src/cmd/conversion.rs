//! One conversion: inputs into one output of a format, never over an input, replacing an
//! existing output only when asked. Both `convert` and `batch` run it.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context};
use tracex_ir::format::{ExportSink, Format};
use tracex_ir::io::OutputTarget;

use tracex_ir::threaded::Threaded;
use tracex_ir::{Defs, Sink};

use super::report::{Counting, InputReport, OutputReport, Report};
use crate::cli::ConvertArgs;
use crate::formats;
use crate::input::same_file;
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
    let opts = args.format_options(ins);
    let started = Instant::now();
    let mut sources = super::open_sources(ins, args.from.as_deref())?;
    let mut defs = Defs::new();
    let failed = || format!("conversion to {out} failed; nothing was written");
    // one output, or its numbered chunks: either way one sink, counted for --json
    let chunk_opts = args.format_options(ins);
    let mut splitter = match (split, &target) {
        (Some(by), OutputTarget::Path(p)) => {
            let marks = Marks::intern(&mut defs);
            Some(Splitter::new(by, p, format, &chunk_opts, args.force, marks))
        }
        _ => None,
    };
    let mut single = match splitter {
        Some(_) => None,
        None => {
            Some((export.create)(&target, &opts).with_context(|| format!("cannot create {out}"))?)
        }
    };
    let (diag, counts) = std::thread::scope(|scope| -> anyhow::Result<_> {
        let mut threaded;
        let on_thread = export_thread();
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
            &mut sources,
            opts,
            &args.common,
            args.align,
            &mut counting,
            quiet,
        )
        .with_context(failed)?;
        Ok((diag, counting.counts()))
    })?;
    let files = match (&splitter, &target) {
        (Some(s), _) => s.outputs().to_vec(),
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
