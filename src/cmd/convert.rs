//! `tracex convert IN... OUT`.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context};
use tracex_ir::io::OutputTarget;
use tracex_ir::Defs;

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
    opts
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
        for i in ins {
            if i != "-" && same_file(std::path::Path::new(i), &p) {
                bail!("the output {out} is also an input; tracex never overwrites its input");
            }
        }
        if p.exists() && !args.force {
            bail!("{out} exists; use --force to replace it");
        }
        OutputTarget::Path(p)
    };
    let opts = options(args);
    let started = Instant::now();
    let mut sources = super::open_sources(ins, args.from.as_deref())?;
    let export = format.export.expect("checked");
    let mut defs = Defs::new();
    let sink = export(&target, &opts).with_context(|| format!("cannot create {out}"))?;
    super::run(
        &mut sources,
        &opts,
        &args.common,
        args.align,
        &mut defs,
        sink,
        quiet,
    )
    .with_context(|| format!("conversion to {out} failed; nothing was written"))?;
    super::print_diagnostics(&defs, quiet);
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
