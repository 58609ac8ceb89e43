//! Nsight Systems reports (`.nsys-rep`, older `.qdrep`) are a closed format: tracex reads the
//! SQLite export of one, made by NVIDIA's own `nsys export --type sqlite` into a temporary
//! folder when `nsys` is on PATH (or `$TRACEX_NSYS` names it). Without nsys the error gives the
//! exact command to run where Nsight Systems is installed.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};

/// Whether `path` names an Nsight Systems report (by its extension: the format is closed).
pub fn is_report(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    lower.ends_with(".nsys-rep") || lower.ends_with(".qdrep")
}

/// The nsys program: `$TRACEX_NSYS`, else `nsys` on PATH.
fn nsys() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TRACEX_NSYS").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|d| d.join("nsys"))
        .find(|p| p.is_file())
}

/// `text` quoted for a POSIX shell when it needs to be.
fn shell_quote(text: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./=:@%+,".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// The arguments of `nsys` that export `report` to `sqlite`.
fn export_args(report: &Path, sqlite: &Path) -> Vec<String> {
    vec![
        "export".into(),
        "--type".into(),
        "sqlite".into(),
        "--force-overwrite".into(),
        "true".into(),
        "--output".into(),
        sqlite.to_string_lossy().into_owned(),
        report.to_string_lossy().into_owned(),
    ]
}

/// An exported report: the SQLite file, in a folder removed when this is dropped.
pub struct Exported {
    pub sqlite: PathBuf,
    _dir: tempfile::TempDir,
}

/// Exports the report `arg` to a temporary SQLite file with nsys.
pub fn export(arg: &str) -> anyhow::Result<Exported> {
    let report = Path::new(arg);
    if !report.is_file() {
        bail!("cannot open {arg}: no such file");
    }
    let stem = report
        .file_stem()
        .map_or_else(|| "report".into(), |s| s.to_string_lossy().into_owned());
    let Some(nsys) = nsys() else {
        let suggested = report.with_file_name(format!("{stem}.sqlite"));
        let cmd: Vec<String> = std::iter::once("nsys".to_string())
            .chain(export_args(report, &suggested))
            .map(|a| shell_quote(&a))
            .collect();
        bail!(
            "{arg} is an Nsight Systems report, which tracex reads through its SQLite export; \
nsys is not on PATH (nor in $TRACEX_NSYS). Where Nsight Systems is installed, run\n  {}\n\
and convert {} instead",
            cmd.join(" "),
            shell_quote(&suggested.to_string_lossy())
        );
    };
    let dir = tempfile::Builder::new()
        .prefix("tracex-nsys-rep-")
        .tempdir()
        .context("cannot make a temporary folder for the nsys export")?;
    let sqlite = dir.path().join(format!("{stem}.sqlite"));
    let out = Command::new(&nsys)
        .args(export_args(report, &sqlite))
        .output()
        .with_context(|| format!("cannot run {}", nsys.display()))?;
    if !out.status.success() || !sqlite.is_file() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(5).collect();
        bail!(
            "`{} export --type sqlite` failed on {arg} ({}){}",
            nsys.display(),
            if out.status.success() {
                "it wrote no SQLite file".to_string()
            } else {
                out.status.to_string()
            },
            if tail.is_empty() {
                String::new()
            } else {
                format!(
                    ":\n  {}",
                    tail.into_iter().rev().collect::<Vec<_>>().join("\n  ")
                )
            }
        );
    }
    Ok(Exported { sqlite, _dir: dir })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_by_extension_and_quoting() {
        assert!(is_report("a/b.nsys-rep") && is_report("X.QDREP"));
        assert!(!is_report("a.sqlite"));
        assert_eq!(shell_quote("run 1.nsys-rep"), "'run 1.nsys-rep'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote("a/b.sqlite"), "a/b.sqlite");
    }
}
