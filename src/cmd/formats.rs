use std::io::Write;

use crate::formats;

/// `tracex formats`, or with `--diagnostics` the table of every diagnostic kind.
pub fn run(diagnostics: bool) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    if diagnostics {
        for k in formats::all_diagnostics() {
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
