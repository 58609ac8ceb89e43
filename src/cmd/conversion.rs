//! One conversion: inputs into one output of a format, never over an input, replacing an
//! existing output only when asked. Both `convert` and `batch` run it.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context};
use tracex_ir::format::Format;
use tracex_ir::io::OutputTarget;

use crate::cli::ConvertArgs;
use crate::formats;
use crate::input::same_file;

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

/// Whether `path` lies inside the directory `dir`.
fn inside(path: &Path, dir: &Path) -> bool {
    match (path.canonicalize(), dir.canonicalize()) {
        (Ok(p), Ok(d)) => d.is_dir() && p.starts_with(d),
        _ => false,
    }
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
        let export = format.export.as_ref().expect("an output format");
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
        if !taken.is_empty() && !args.force {
            bail!("{} exists; use --force to replace it", taken.join(", "));
        }
        OutputTarget::Path(p)
    };
    let opts = args.format_options();
    let started = Instant::now();
    let mut sources = super::open_sources(ins, args.from.as_deref())?;
    let export = format.export.as_ref().expect("an output format");
    let mut sink =
        (export.create)(&target, &opts).with_context(|| format!("cannot create {out}"))?;
    let (_, diag) = super::run(
        &mut sources,
        opts,
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
