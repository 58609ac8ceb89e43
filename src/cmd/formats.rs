//! `tracex formats`: what tracex reads and writes, and every diagnostic it can report.

use std::io::Write;

use tracex_ir::DiagKind;

use crate::formats;

/// `tracex formats`, or with `--diagnostics` the table of every diagnostic kind.
pub fn run(diagnostics: bool) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    if diagnostics {
        for k in all_diagnostics() {
            writeln!(out, "{:<36} {:<8} {}", k.name, k.severity, k.help)?;
        }
        return Ok(());
    }
    writeln!(
        out,
        "{:<8} {:<6} {:<6} {:<28} description",
        "format", "import", "export", "extensions (hints)"
    )?;
    for f in formats::formats() {
        writeln!(
            out,
            "{:<8} {:<6} {:<6} {:<28} {}",
            f.name,
            if f.import.is_some() { "yes" } else { "no" },
            if f.export.is_some() { "yes" } else { "no" },
            f.extensions.join(" "),
            f.description
        )?;
    }
    Ok(())
}

/// Every diagnostic kind tracex can report: the IR's, the pipeline's and every format's.
fn all_diagnostics() -> Vec<&'static DiagKind> {
    let mut v: Vec<&'static DiagKind> = tracex_ir::diag::kinds::DIAGNOSTICS.to_vec();
    v.extend_from_slice(crate::filter::DIAGNOSTICS);
    v.extend_from_slice(crate::pipeline::DIAGNOSTICS);
    v.extend_from_slice(crate::split::DIAGNOSTICS);
    for f in formats::formats() {
        v.extend_from_slice(f.diagnostics);
    }
    v.sort_by_key(|k| k.name);
    v.dedup_by_key(|k| k.name);
    v
}
