//! Batch conversion: every trace found under folders, converted in parallel into one output
//! each, keeping the relative layout. A file that is not a trace is skipped; a trace that fails
//! is reported and the rest still convert; the exit code says whether any failed.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::bail;
use tracex_ir::format::Format;
use tracex_ir::{Confidence, Progress};

use super::conversion::{convert_one, output_format};
use super::report::Report;
use crate::cli::ConvertArgs;
use crate::formats;
use crate::input::Input;

pub struct Plan {
    roots: Vec<PathBuf>,
    out_dir: Option<PathBuf>,
    format: &'static Format,
}

/// A directory no format claims as a trace of its own (an OTF2 archive is a trace).
fn is_plain_dir(p: &Path) -> bool {
    p.is_dir()
        && Input::open(&p.to_string_lossy())
            .map(|i| {
                formats::sniff::sniff_all(&i.probe())
                    .iter()
                    .all(|(_, c)| *c == Confidence::No)
            })
            .unwrap_or(true)
}

/// Batch mode when an output folder is given, or when every path is a plain folder (so there
/// is no output path). `tracex convert archive_dir out.json` stays a single conversion.
pub fn plan(args: &ConvertArgs) -> anyhow::Result<Option<Plan>> {
    let batch = args.out_dir.is_some() || args.paths.iter().all(|p| is_plain_dir(Path::new(p)));
    if !batch {
        return Ok(None);
    }
    let Some(to) = args.to.as_deref() else {
        bail!("converting folders needs --to FORMAT");
    };
    if args.paths.iter().any(|p| p == "-") {
        bail!("a batch reads folders and files, not stdin");
    }
    let format = output_format("", Some(to))?;
    Ok(Some(Plan {
        roots: args.paths.iter().map(PathBuf::from).collect(),
        out_dir: args.out_dir.as_ref().map(PathBuf::from),
        format,
    }))
}

struct Job {
    input: PathBuf,
    output: PathBuf,
}

/// Every trace under `dir` (recursively; hidden entries and links to folders skipped), with its
/// path relative to `root` and its sniffed format. Unrecognised files are counted in `skipped`.
fn walk(dir: &Path, root: &Path, out: &mut Vec<Found>, skipped: &mut usize) -> std::io::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.filter_map(|e| e.ok()).collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        let path = e.path();
        let ft = e.file_type()?;
        if ft.is_symlink() && path.is_dir() {
            continue;
        }
        if path.is_dir() && is_plain_dir(&path) {
            walk(&path, root, out, skipped)?;
            continue;
        }
        match sniff(&path) {
            Some(format) => {
                let rel = path.strip_prefix(root).unwrap_or(&path).to_path_buf();
                out.push((path, rel, Some(format)));
            }
            None => *skipped += 1,
        }
    }
    Ok(())
}

/// A found input: its path, its path relative to the root it was found under, its format.
type Found = (PathBuf, PathBuf, Option<&'static Format>);

/// The format of the trace at `path`, from its content; `None` when unreadable or unknown.
/// An Nsight Systems report is converted through its SQLite export, made when it is converted.
fn sniff(path: &Path) -> Option<&'static Format> {
    if crate::nsys_rep::is_report(&path.to_string_lossy()) {
        return formats::by_name("nsys");
    }
    let input = Input::open(&path.to_string_lossy()).ok()?;
    formats::sniff::resolve(&input.probe(), &input.display, None).ok()
}

/// `rel` with its trace extension replaced by the output format's.
fn output_name(rel: &Path, input_format: Option<&'static Format>, out: &'static Format) -> PathBuf {
    let name = rel
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let lower = name.to_ascii_lowercase();
    let strip = input_format
        .and_then(|f| {
            f.extensions
                .iter()
                .filter(|e| lower.ends_with(*e))
                .max_by_key(|e| e.len())
        })
        .map(|e| e.len())
        .or_else(|| name.rfind('.').map(|i| name.len() - i))
        .unwrap_or(0);
    let ext = out.extensions.first().copied().unwrap_or("");
    rel.with_file_name(format!("{}{ext}", &name[..name.len() - strip]))
}

fn jobs_of(plan: &Plan) -> anyhow::Result<(Vec<Job>, usize)> {
    let mut found = Vec::new();
    let mut skipped = 0;
    for root in &plan.roots {
        if is_plain_dir(root) {
            walk(root, root, &mut found, &mut skipped)?;
        } else if root.exists() {
            let rel = PathBuf::from(root.file_name().unwrap_or(root.as_os_str()));
            found.push((root.clone(), rel, sniff(root)));
        } else {
            bail!("{} does not exist", root.display());
        }
    }
    let jobs = found
        .into_iter()
        .map(|(input, rel, in_format)| {
            let name = output_name(&rel, in_format, plan.format);
            let mut output = match &plan.out_dir {
                Some(d) => d.join(&name),
                None => input.with_file_name(name.file_name().expect("file name")),
            };
            if output == input {
                // converting a format to itself beside the input: never overwrite the input
                let n = output
                    .file_name()
                    .expect("name")
                    .to_string_lossy()
                    .into_owned();
                output.set_file_name(format!("tracex.{n}"));
            }
            Job { input, output }
        })
        .collect();
    Ok((disambiguate(jobs, plan.format), skipped))
}

/// Inputs that would share an output (`a.json` and `a.txt` into `a.json`) keep their whole
/// name instead (`a.json.json`, `a.txt.json`), so that none overwrites another. Decided over
/// the whole list, before `--shard` picks from it, so every shard names outputs alike.
fn disambiguate(mut jobs: Vec<Job>, out: &'static Format) -> Vec<Job> {
    let mut seen: std::collections::HashMap<PathBuf, usize> = std::collections::HashMap::new();
    for j in &jobs {
        *seen.entry(j.output.clone()).or_default() += 1;
    }
    let ext = out.extensions.first().copied().unwrap_or("");
    for j in &mut jobs {
        if seen[&j.output] > 1 {
            let name = j.input.file_name().expect("a file").to_string_lossy();
            j.output.set_file_name(format!("{name}{ext}"));
        }
    }
    jobs
}

/// `I/N` of `--shard`: the I-th (from 0) of N shards.
pub fn parse_shard(text: &str) -> anyhow::Result<(usize, usize)> {
    let parsed = text
        .split_once('/')
        .and_then(|(i, n)| Some((i.trim().parse().ok()?, n.trim().parse().ok()?)));
    match parsed {
        Some((i, n)) if n > 0 && i < n => Ok((i, n)),
        _ => bail!("--shard {text:?}: expected I/N with 0 <= I < N, e.g. 0/4 (Slurm: $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT with --array=0-3)"),
    }
}

/// The jobs of shard `i` of `n`: every n-th of the sorted list, from the i-th. The list is
/// the same on every node (folders are walked in name order), so the shards are disjoint and
/// together convert every input once.
fn shard<T>(jobs: Vec<T>, (i, n): (usize, usize)) -> Vec<T> {
    jobs.into_iter()
        .enumerate()
        .filter(|(k, _)| k % n == i)
        .map(|(_, j)| j)
        .collect()
}

pub fn run(args: &ConvertArgs, plan: &Plan, quiet: bool) -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    let (jobs, skipped) = jobs_of(plan)?;
    if jobs.is_empty() {
        bail!(
            "no trace found under {} ({skipped} files not recognised)",
            args.paths.join(", ")
        );
    }
    let all = jobs.len();
    let jobs = match args.shard.as_deref().map(parse_shard).transpose()? {
        Some(s) => shard(jobs, s),
        None => jobs,
    };
    if jobs.is_empty() {
        if !quiet {
            anstream::eprintln!(
                "tracex: shard {} has none of the {all} traces",
                args.shard.as_deref().unwrap_or("")
            );
        }
        if args.json {
            super::report::print(&[], &[], skipped, started.elapsed().as_secs_f64());
        }
        return Ok(());
    }
    let progress = Arc::new(Progress::new());
    progress.set_total(jobs.len() as u64);
    let bar = crate::progress::Bar::start(vec![progress.clone()], "converting".into(), quiet);
    let workers = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .clamp(1, jobs.len());
    let next = AtomicUsize::new(0);
    let failures: Mutex<Vec<(usize, String, String)>> = Mutex::new(Vec::new());
    let reports: Mutex<Vec<(usize, Report)>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(job) = jobs.get(i) else { break };
                let result = (|| {
                    if let Some(parent) = job.output.parent() {
                        std::fs::create_dir_all(parent)?;
                    }
                    let input = job.input.to_string_lossy().into_owned();
                    let output = job.output.to_string_lossy().into_owned();
                    convert_one(&[input], &output, plan.format, args, true)
                })();
                match result {
                    Ok(r) => reports.lock().expect("lock").push((i, r)),
                    Err(e) => {
                        let input = job.input.display().to_string();
                        crate::term::error(format_args!("{input}: {e:#}"));
                        failures
                            .lock()
                            .expect("lock")
                            .push((i, input, format!("{e:#}")));
                    }
                }
                progress.advance(1);
            });
        }
    });
    drop(bar);
    let mut failures = failures.into_inner().expect("lock");
    failures.sort_by_key(|f| f.0);
    let failed = failures.len();
    if args.json {
        let mut reports = reports.into_inner().expect("lock");
        reports.sort_by_key(|r| r.0);
        let reports: Vec<Report> = reports.into_iter().map(|r| r.1).collect();
        let failures: Vec<(String, String)> =
            failures.into_iter().map(|(_, i, e)| (i, e)).collect();
        super::report::print(
            &reports,
            &failures,
            skipped,
            started.elapsed().as_secs_f64(),
        );
    }
    if !quiet {
        anstream::eprintln!(
            "tracex: converted {} of {} traces to {}{}",
            jobs.len() - failed,
            jobs.len(),
            plan.format.name,
            if skipped > 0 {
                format!(" ({skipped} other files skipped)")
            } else {
                String::new()
            }
        );
    }
    if failed > 0 {
        bail!("{failed} of {} traces failed (see above)", jobs.len());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_are_disjoint_and_complete() {
        let jobs: Vec<usize> = (0..10).collect();
        let mut seen = Vec::new();
        for i in 0..3 {
            let s = shard(jobs.clone(), (i, 3));
            assert!(s.len() == 3 || s.len() == 4);
            seen.extend(s);
        }
        seen.sort();
        assert_eq!(seen, jobs);
        assert_eq!(parse_shard("2/4").unwrap(), (2, 4));
        for bad in ["4/4", "1/0", "a/b", "3", "-1/2"] {
            assert!(parse_shard(bad).is_err(), "{bad}");
        }
    }
}
