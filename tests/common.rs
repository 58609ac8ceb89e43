//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The project's root directory.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The real-trace corpus: `$TRACEX_CORPUS`, else `../shared/fixtures` beside the project.
/// `None` (and a note) when it is not there: tests that need it then check nothing.
pub fn corpus() -> Option<PathBuf> {
    let dir = match std::env::var_os("TRACEX_CORPUS") {
        Some(d) => PathBuf::from(d),
        None => root().join("../shared/fixtures"),
    };
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "note: no corpus at {} (set TRACEX_CORPUS); corpus tests check nothing",
            dir.display()
        );
        None
    }
}

/// Files directly under `corpus/sub`, sorted, skipping PROVENANCE.md.
pub fn corpus_files(sub: &str) -> Vec<PathBuf> {
    let Some(c) = corpus() else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = std::fs::read_dir(c.join(sub))
        .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    v.retain(|p| p.file_name().is_some_and(|n| n != "PROVENANCE.md"));
    v.sort();
    v
}

/// The tracex binary under test (`$TRACEX_BIN` or the one cargo built for this test run),
/// with `--quiet`.
pub fn tracex() -> Command {
    let mut c = tracex_loud();
    c.arg("--quiet");
    c
}

/// The tracex binary under test, printing its summary and diagnostics on stderr.
pub fn tracex_loud() -> Command {
    let bin = std::env::var_os("TRACEX_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_tracex")));
    Command::new(bin)
}

/// Runs tracex with `args`; panics with its stderr unless it exits 0.
pub fn run_ok(args: &[&str]) -> Output {
    let out = tracex().args(args).output().expect("run tracex");
    assert!(
        out.status.success(),
        "tracex {args:?} failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Runs tracex with `args` expecting failure with exit code 1; returns stderr.
pub fn run_err(args: &[&str]) -> String {
    let out = tracex().args(args).output().expect("run tracex");
    assert_eq!(
        out.status.code(),
        Some(1),
        "tracex {args:?} should fail with exit 1; stderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `tracex dump` of a file, without diagnostics.
pub fn dump(path: &Path) -> String {
    let out = run_ok(&[
        "dump",
        "--no-diagnostics",
        path.to_str().expect("utf-8 path"),
    ]);
    String::from_utf8(out.stdout).expect("utf-8 dump")
}

/// `tracex dump` with diagnostics.
pub fn dump_with_diagnostics(path: &Path) -> String {
    let out = run_ok(&["dump", path.to_str().expect("utf-8 path")]);
    String::from_utf8(out.stdout).expect("utf-8 dump")
}

/// Compares `actual` with the reviewed golden file `tests/golden/<rel>`.
/// `TRACEX_BLESS=1` writes the golden instead (review the diff before committing it).
pub fn golden(rel: &str, actual: &str) {
    let path = root().join("tests/golden").join(rel);
    if std::env::var_os("TRACEX_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, actual).expect("write golden");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!(
            "missing golden {} (run with TRACEX_BLESS=1 and review it)",
            path.display()
        )
    });
    if expected != actual {
        let mut msg = format!("{} differs from the golden:\n", rel);
        for (i, (e, a)) in expected.lines().zip(actual.lines()).enumerate() {
            if e != a {
                msg.push_str(&format!("line {}:\n- {e}\n+ {a}\n", i + 1));
                break;
            }
        }
        msg.push_str(&format!(
            "({} expected lines, {} actual; TRACEX_BLESS=1 rewrites after review)",
            expected.lines().count(),
            actual.lines().count()
        ));
        panic!("{msg}");
    }
}

/// A program on PATH, if installed.
pub fn tool(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

/// The speedscope checker and the speedscope release it loads, when both are installed
/// (`scripts/setup.sh` fetches speedscope; chromium comes from Debian).
pub fn speedscope() -> Option<(PathBuf, PathBuf)> {
    let script = corpus()?.join("../tools/speedscope_check.sh");
    let rel = std::env::var_os("TRACEX_SPEEDSCOPE")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/tracex/speedscope"))
        })?
        .join("package/dist/release");
    (script.is_file() && rel.join("index.html").is_file() && tool("chromium").is_some())
        .then_some((script, rel))
}

/// Runs the speedscope checker on `file`; true when speedscope imported it.
pub fn speedscope_loads(file: &Path) -> Option<bool> {
    let (script, rel) = speedscope()?;
    let out = Command::new("bash")
        .arg(script)
        .arg(rel)
        .arg(file)
        .output()
        .expect("run speedscope_check.sh");
    Some(out.status.success())
}

/// Runs `cmd`, which must exit 1 and leave `dir` as it was (no output, no temporaries); gives
/// its stderr.
pub fn fails_leaving_dir_as_it_was(mut cmd: Command, dir: &Path) -> String {
    let listing = || {
        let mut names: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        names.sort();
        names
    };
    let before = listing();
    let o = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(listing(), before, "{err}");
    err
}
