//! The analysers PyTorch users run on Chrome traces, as test oracles: HolisticTraceAnalysis
//! (`../shared/tools/analysers/hta_check.py`) and AMD TraceLens (`tracelens_check.py`). A Kineto
//! trace that went through tracex gives the same results as the original; the `--kineto` Chrome
//! output of every nsys export with kernels runs HTA's analyses and TraceLens's tables. Each
//! group runs where its analyser is installed (`scripts/setup.sh` installs HTA into a virtual
//! environment; TraceLens is not on PyPI) and prints why it skips where not.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;
use crate::viewers::par_map;

/// The analyses the issue names, by the names hta_check.py prints.
const HTA_ANALYSES: &[&str] = &[
    "temporal_breakdown",
    "gpu_kernel_breakdown",
    "idle_time_breakdown",
    "comm_comp_overlap",
    "cuda_kernel_launch_stats",
];
const TRACELENS_TABLES: &[&str] = &["gpu_timeline", "kernel_launchers", "kernels"];

fn home() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default()
}

/// A python that imports `module`: `$var`'s venv first, then the given venvs.
fn python_with(module: &str, var: &str, venvs: &[PathBuf]) -> Option<PathBuf> {
    std::env::var_os(var)
        .map(PathBuf::from)
        .into_iter()
        .chain(venvs.iter().cloned())
        .map(|v| v.join("bin/python"))
        .find(|py| {
            py.is_file()
                && Command::new(py)
                    .args(["-c", &format!("import {module}")])
                    .output()
                    .is_ok_and(|o| o.status.success())
        })
}

fn script(name: &str) -> Result<PathBuf, String> {
    corpus()
        .map(|c| c.join("../tools/analysers").join(name))
        .filter(|s| s.is_file())
        .ok_or(format!("../shared/tools/analysers/{name} is not there"))
}

/// The python with HTA and hta_check.py, or why they are not there.
fn hta() -> Result<(PathBuf, PathBuf), String> {
    let s = script("hta_check.py")?;
    let py = python_with(
        "hta",
        "TRACEX_ANALYSERS_VENV",
        &[
            home().join(".cache/tracex/venv-analysers"),
            home().join(".cache/tracex-tools/venv-hta"),
        ],
    )
    .ok_or("HolisticTraceAnalysis is not installed (scripts/setup.sh installs it from PyPI)")?;
    Ok((py, s))
}

/// The python that imports TraceLens (with `PYTHONPATH` set by `run`), or why not.
fn tracelens() -> Result<(PathBuf, PathBuf), String> {
    let s = script("tracelens_check.py")?;
    let found = [home().join(".cache/tracex-tools")]
        .into_iter()
        .any(|d| d.join("TraceLens").is_dir());
    if !found {
        return Err(
            "AMD TraceLens is not installed (it is not on PyPI: put its TraceLens/ \
                    package in ~/.cache/tracex-tools, see ../shared/tools/analysers/README.md)"
                .into(),
        );
    }
    let py = python_with(
        "pandas, tabulate, orjson, yaml, tqdm",
        "TRACEX_TRACELENS_VENV",
        &[
            home().join(".cache/tracex-tools/venv-tracelens"),
            home().join(".cache/tracex/venv-analysers"),
        ],
    )
    .ok_or("no python with TraceLens's dependencies (scripts/setup.sh installs them)")?;
    Ok((py, s))
}

/// Runs a check script on `trace`: each line `OK name summary` or `FAIL name why`, by name.
fn run(py: &Path, script: &Path, trace: &Path) -> Vec<(String, bool, String)> {
    let out = Command::new(py)
        .arg(script)
        .arg(trace)
        .env("PYTHONPATH", home().join(".cache/tracex-tools"))
        .output()
        .expect("run the analyser");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .filter_map(|l| {
            let (status, rest) = l.split_once(char::is_whitespace)?;
            let rest = rest.trim_start();
            let (name, summary) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
            matches!(status, "OK" | "FAIL")
                .then(|| (name.to_string(), status == "OK", summary.trim().to_string()))
        })
        .collect()
}

fn result<'a>(rs: &'a [(String, bool, String)], name: &str) -> Option<&'a (String, bool, String)> {
    rs.iter().find(|r| r.0 == name)
}

/// Kineto traces among the Chrome fixtures (what HTA and TraceLens are made for).
fn kineto_fixtures() -> Vec<PathBuf> {
    corpus_files("chrome")
        .into_iter()
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.contains("HolisticTraceAnalysis") || n.contains("kineto") || n.contains("TraceLens")
        })
        .collect()
}

/// nsys exports with kernels, converted with `--kineto`.
fn nsys_kineto_outputs(dir: &Path) -> Vec<(String, PathBuf)> {
    let files: Vec<PathBuf> = corpus_files("nsys");
    par_map(&files, |f| {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let out = dir.join(format!("{name}.json"));
        run_ok(&[
            "convert",
            "--kineto",
            "--force",
            f.to_str().unwrap(),
            out.to_str().unwrap(),
        ]);
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
        let kernels = v["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["cat"] == "kernel");
        kernels.then_some((name, out))
    })
    .into_iter()
    .flatten()
    .collect()
}

/// The Kineto fixtures, and for each what the analyser says on it and on tracex's output of it.
type Results = Vec<(String, bool, String)>;
fn originals_and_outputs(
    py: &Path,
    script: &Path,
    dir: &Path,
) -> (Vec<PathBuf>, Vec<(Results, Results)>) {
    let kineto = kineto_fixtures();
    let results = par_map(&kineto, |f| {
        let out = convert_kineto(f, dir);
        (run(py, script, f), run(py, script, &out))
    });
    (kineto, results)
}

fn convert_kineto(input: &Path, dir: &Path) -> PathBuf {
    let name = input.file_name().unwrap().to_string_lossy();
    let out = dir.join(format!("{name}.tracex.json"));
    run_ok(&[
        "convert",
        "--force",
        input.to_str().unwrap(),
        out.to_str().unwrap(),
    ]);
    out
}

#[derive(Clone, Copy)]
enum Analyser {
    Hta,
    TraceLens,
}

impl Analyser {
    fn name(self) -> &'static str {
        match self {
            Analyser::Hta => "HTA",
            Analyser::TraceLens => "TraceLens",
        }
    }

    /// The results that must be there on an nsys export with kernels.
    fn results(self) -> &'static [&'static str] {
        match self {
            Analyser::Hta => HTA_ANALYSES,
            Analyser::TraceLens => TRACELENS_TABLES,
        }
    }

    /// Whether a result's summary has something in it: HTA's analyses say so by running,
    /// TraceLens's tables by having rows.
    fn has_content(self, summary: &str) -> bool {
        match self {
            Analyser::Hta => true,
            Analyser::TraceLens => !summary.starts_with("0 ") && summary != "[]",
        }
    }
}

/// Runs `analyser` on the `--kineto` output of every nsys export with kernels; each of its
/// results must run and have content. Returns how many exports it analysed.
fn check_nsys_outputs(
    analyser: Analyser,
    py: &Path,
    script: &Path,
    dir: &Path,
    problems: &mut Vec<String>,
) -> usize {
    let nsys = nsys_kineto_outputs(dir);
    let results = par_map(&nsys, |(_, out)| run(py, script, out));
    let tool = analyser.name();
    for ((name, _), rs) in nsys.iter().zip(&results) {
        for r in analyser.results() {
            match result(rs, r) {
                Some((_, true, s)) if analyser.has_content(s) => {
                    eprintln!(
                        "{tool} {name}: {r}: {}",
                        s.chars().take(100).collect::<String>()
                    )
                }
                other => problems.push(format!("{name} (nsys --kineto): {r}: {other:?}")),
            }
        }
    }
    nsys.len()
}

#[test]
fn hta_gives_the_same_results_on_kineto_traces_and_runs_on_nsys() {
    let (py, script) = match hta() {
        Ok(x) => x,
        Err(why) => {
            eprintln!("skipped: HTA checks: {why}");
            return;
        }
    };
    let dir = tempfile::tempdir().unwrap();
    let mut problems = Vec::new();
    let (kineto, results) = originals_and_outputs(&py, &script, dir.path());
    for (f, (orig, ours)) in kineto.iter().zip(&results) {
        let name = f.file_name().unwrap().to_string_lossy();
        for a in HTA_ANALYSES {
            match (result(orig, a), result(ours, a)) {
                (Some(o), Some(t)) if o.1 && (!t.1 || o.2 != t.2) => {
                    problems.push(format!("{name}: {a}: original {:?}, tracex {:?}", o.2, t.2))
                }
                (Some(o), None) if o.1 => problems.push(format!("{name}: {a}: did not run")),
                _ => {}
            }
        }
        eprintln!("HTA {name}: {} of the analyses equal", HTA_ANALYSES.len());
    }
    let nsys = check_nsys_outputs(Analyser::Hta, &py, &script, dir.path(), &mut problems);
    eprintln!(
        "HTA: {} Kineto traces compared, {nsys} nsys exports with kernels analysed",
        kineto.len()
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn tracelens_gives_the_same_tables_on_kineto_traces_and_runs_on_nsys() {
    let (py, script) = match tracelens() {
        Ok(x) => x,
        Err(why) => {
            eprintln!("skipped: TraceLens checks: {why}");
            return;
        }
    };
    let dir = tempfile::tempdir().unwrap();
    let mut problems = Vec::new();
    let (kineto, results) = originals_and_outputs(&py, &script, dir.path());
    for (f, (orig, ours)) in kineto.iter().zip(&results) {
        let name = f.file_name().unwrap().to_string_lossy();
        if !result(orig, "load").is_some_and(|r| r.1) {
            eprintln!("TraceLens {name}: the original does not load; nothing to compare");
            continue;
        }
        // (load's event count differs: tracex drops flow ends without a start, which
        // TraceLens counts as events)
        for t in TRACELENS_TABLES {
            let (o, u) = (result(orig, t), result(ours, t));
            if o.map(|r| (r.1, &r.2)) != u.map(|r| (r.1, &r.2)) {
                problems.push(format!("{name}: {t}: original {o:?}, tracex {u:?}"));
            }
        }
    }
    let nsys = check_nsys_outputs(Analyser::TraceLens, &py, &script, dir.path(), &mut problems);
    eprintln!(
        "TraceLens: {} Kineto traces compared, {nsys} nsys exports with kernels analysed",
        kineto.len()
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
