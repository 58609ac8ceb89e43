use crate::formats;

/// `tracex formats`, or with `--diagnostics` the table of every diagnostic kind.
pub fn run(diagnostics: bool) -> anyhow::Result<()> {
    if diagnostics {
        for k in formats::all_diagnostics() {
            println!("{:<36} {:<8} {}", k.name, k.severity, k.help);
        }
        return Ok(());
    }
    println!(
        "{:<8} {:<6} {:<6} {:<28} description",
        "format", "import", "export", "extensions (hints)"
    );
    for f in formats::formats() {
        println!(
            "{:<8} {:<6} {:<6} {:<28} {}",
            f.name,
            if f.import.is_some() { "yes" } else { "no" },
            if f.export.is_some() { "yes" } else { "no" },
            f.extensions.join(" "),
            f.description
        );
    }
    Ok(())
}
