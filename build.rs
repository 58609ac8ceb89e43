//! Records the commit tracex is built from for `tracex --version` (`TRACEX_COMMIT` when set,
//! else `git rev-parse`, else "unknown": a crates.io source package has no git history).

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_string())
}

fn main() {
    println!("cargo:rerun-if-env-changed=TRACEX_COMMIT");
    let commit = std::env::var("TRACEX_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(|| {
            // rebuild when HEAD moves (in a worktree too: refs live in the common dir)
            if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
                println!("cargo:rerun-if-changed={dir}/HEAD");
            }
            if let (Some(common), Some(head)) = (
                git(&["rev-parse", "--git-common-dir"]),
                git(&["symbolic-ref", "-q", "HEAD"]),
            ) {
                let loose = format!("{common}/{head}");
                // a missing path would rerun this script on every build
                if std::path::Path::new(&loose).exists() {
                    println!("cargo:rerun-if-changed={loose}");
                } else {
                    println!("cargo:rerun-if-changed={common}/packed-refs");
                }
            }
            git(&["rev-parse", "--short=10", "HEAD"])
        })
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=TRACEX_COMMIT={commit}");
}
