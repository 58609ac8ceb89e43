//! `tracex convert IN... OUT`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context};
use tracex_ir::io::OutputTarget;

use crate::cli::ConvertArgs;
use crate::formats::{self, Format};
use crate::input::same_file;
use crate::options::Options;

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

/// The options of every format, from the command line.
pub fn options(args: &ConvertArgs) -> Options {
    let mut opts = Options::default();
    args.chrome.apply(&mut opts);
    args.folded.apply(&mut opts);
    args.nsys.apply(&mut opts);
    #[cfg(feature = "otf2")]
    args.otf2.apply(&mut opts);
    opts
}

/// Whether `path` lies inside the directory `dir`.
fn inside(path: &Path, dir: &Path) -> bool {
    match (path.canonicalize(), dir.canonicalize()) {
        (Ok(p), Ok(d)) => d.is_dir() && p.starts_with(d),
        _ => false,
    }
}

pub fn run(args: &ConvertArgs, quiet: bool) -> anyhow::Result<()> {
    if let Some(plan) = super::batch::plan(args)? {
        return super::batch::run(args, &plan, quiet);
    }
    let (out, ins) = args.paths.split_last().expect("clap requires one path");
    if ins.is_empty() {
        bail!("give the output path after the input(s): tracex convert IN... OUT (or folders with --to for a batch)");
    }
    let format = output_format(out, args.to.as_deref())?;
    convert_one(ins, out, format, args, quiet)
}

/// Converts `ins` into one output `out` of `format`.
pub fn convert_one(
    ins: &[String],
    out: &str,
    format: &'static Format,
    args: &ConvertArgs,
    quiet: bool,
) -> anyhow::Result<()> {
    let target = if out == "-" {
        OutputTarget::Stdout
    } else {
        let p = PathBuf::from(out);
        let paths = formats::output_paths(format, &p);
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
        if !taken.is_empty() && !args.force {
            bail!("{} exists; use --force to replace it", taken.join(", "));
        }
        OutputTarget::Path(p)
    };
    let opts = options(args);
    let started = Instant::now();
    let mut sources = super::open_sources(ins, args.from.as_deref())?;
    let export = format.export.expect("checked");
    let mut sink = export(&target, &opts).with_context(|| format!("cannot create {out}"))?;
    let (_, diag) = super::run(
        &mut sources,
        &opts,
        &args.common,
        args.align,
        &mut *sink,
        quiet,
    )
    .with_context(|| format!("conversion to {out} failed; nothing was written"))?;
    super::print_diagnostics(&diag, quiet);
    if !quiet {
        let inputs: Vec<String> = sources
            .iter()
            .map(|s| format!("{} ({})", s.input.display, s.format.name))
            .collect();
        eprintln!(
            "tracex: {} -> {out} ({}) in {:.2} s",
            inputs.join(", "),
            format.name,
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}
