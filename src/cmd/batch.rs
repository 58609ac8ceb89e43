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
fn sniff(path: &Path) -> Option<&'static Format> {
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
    Ok((jobs, skipped))
}

pub fn run(args: &ConvertArgs, plan: &Plan, quiet: bool) -> anyhow::Result<()> {
    let (jobs, skipped) = jobs_of(plan)?;
    if jobs.is_empty() {
        bail!(
            "no trace found under {} ({skipped} files not recognised)",
            args.paths.join(", ")
        );
    }
    let progress = Arc::new(Progress::new());
    progress.set_total(jobs.len() as u64);
    let bar = crate::progress::Bar::start(vec![progress.clone()], "converting".into(), quiet);
    let workers = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .clamp(1, jobs.len());
    let next = AtomicUsize::new(0);
    let failures: Mutex<Vec<String>> = Mutex::new(Vec::new());
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
                if let Err(e) = result {
                    let msg = format!("{}: {e:#}", job.input.display());
                    eprintln!("tracex: error: {msg}");
                    failures.lock().expect("lock").push(msg);
                }
                progress.advance(1);
            });
        }
    });
    drop(bar);
    let failed = failures.into_inner().expect("lock").len();
    if !quiet {
        eprintln!(
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
