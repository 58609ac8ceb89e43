//! The viewers people open tracex's Chrome output in, as test oracles on every real fixture:
//! the Catapult Trace Viewer (chrome://tracing's importer, `../shared/tools/traceviewer/
//! check.sh`) and Perfetto's trace processor ([`crate::trace_processor`]). Every Chrome output
//! must import with no warning and no error, and give the counts the viewer builds from the
//! input itself where the viewer reads the input too (Chrome JSON in both, Perfetto protobuf in
//! trace processor). Each group runs where its tool is installed
//! and prints why it skips where not; both print a table of counts.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::common::*;
use crate::trace_processor;

/// One real input and its Chrome output.
pub struct Case {
    pub name: String,
    pub input: PathBuf,
    pub chrome_input: bool,
    /// A Perfetto protobuf input, which trace processor reads too.
    pub perfetto_input: bool,
    pub output: PathBuf,
    /// The conversion's summary on stderr, with the importer's and the exporter's diagnostics.
    pub summary: String,
}

/// Runs `f` over `items` on two threads (the machine has two cores), keeping the order.
pub fn par_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<std::sync::Mutex<Option<R>>> =
        items.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(item) = items.get(i) else { break };
                let r = f(item);
                *results[i].lock().expect("lock") = Some(r);
            });
        }
    });
    results
        .into_iter()
        .map(|m| m.into_inner().expect("lock").expect("done"))
        .collect()
}

/// Every real input with a timeline or samples, converted to Chrome JSON once per test run.
pub fn cases() -> &'static [Case] {
    static CASES: OnceLock<Vec<Case>> = OnceLock::new();
    CASES.get_or_init(|| {
        if corpus().is_none() {
            return Vec::new();
        }
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("viewers");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("mkdir");
        let mut inputs: Vec<(String, PathBuf, &str)> = Vec::new();
        for sub in ["chrome", "perfetto", "nsys", "cupti", "folded"] {
            for f in corpus_files(sub) {
                let name = f.file_name().expect("name").to_string_lossy().into_owned();
                inputs.push((name, f, sub));
            }
        }
        for f in corpus_files("otf2") {
            let anchor = f.join("traces.otf2");
            if anchor.is_file() {
                let name = f.file_name().expect("name").to_string_lossy().into_owned();
                inputs.push((name, anchor, "otf2"));
            }
        }
        par_map(&inputs, |(name, input, sub)| {
            let output = dir.join(format!("{name}.json"));
            let run = tracex_loud()
                .args(["convert", "--force"])
                .arg(input)
                .arg(&output)
                .output()
                .expect("run tracex");
            let summary = String::from_utf8_lossy(&run.stderr).into_owned();
            assert!(run.status.success(), "tracex convert {name}: {summary}");
            Case {
                name: name.clone(),
                input: input.clone(),
                chrome_input: *sub == "chrome",
                perfetto_input: *sub == "perfetto",
                output,
                summary,
            }
        })
    })
}

/// What the Catapult viewer built from one file.
#[derive(Debug, Default, Clone)]
pub struct Viewed {
    pub counts: BTreeMap<String, i64>,
    pub warnings: Vec<String>,
    pub errors: Vec<String>,
    /// check.sh gave no result (crash, timeout), with its line.
    pub no_result: Option<String>,
}

/// check.sh, or why it cannot run here.
pub fn catapult() -> Result<PathBuf, String> {
    let script = corpus()
        .map(|c| c.join("../tools/traceviewer/check.sh"))
        .filter(|s| s.is_file())
        .ok_or("../shared/tools/traceviewer/check.sh is not there")?;
    if tool("chromium").is_none() {
        return Err("chromium is not installed (scripts/setup.sh installs it)".into());
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    let page = std::env::var_os("CATAPULT_VIEWER_HTML")
        .map(PathBuf::from)
        .unwrap_or_else(|| home.join(".cache/tracex-tools/catapult-viewer.html"));
    if !page.is_file() {
        return Err(format!(
            "the Catapult viewer page is not built on this machine ({}; third-party, see \
             ../shared/tools/traceviewer/README.md)",
            page.display()
        ));
    }
    Ok(script)
}

/// Loads `file` in the Catapult viewer.
pub fn view(script: &Path, file: &Path) -> Viewed {
    let out = Command::new("bash")
        .arg(script)
        .arg(file)
        .output()
        .expect("run check.sh");
    parse_view(&String::from_utf8_lossy(&out.stdout))
}

fn parse_view(text: &str) -> Viewed {
    let mut v = Viewed::default();
    for line in text.lines() {
        if line.starts_with("NORESULT") {
            v.no_result = Some(line.to_string());
        } else if let Some(w) = line.trim_start().strip_prefix("warning: ") {
            v.warnings.push(w.to_string());
        } else if let Some(e) = line.trim_start().strip_prefix("error: ") {
            v.errors.push(e.to_string());
        } else if let Some((_, rest)) = line.split_once(": ") {
            if !line.starts_with(' ') {
                for kv in rest.split_whitespace() {
                    if let Some((k, n)) = kv.split_once('=') {
                        if let Ok(n) = n.parse::<i64>() {
                            v.counts.insert(k.to_string(), n);
                        }
                    }
                }
            }
        }
    }
    v
}

/// Counts that may differ between the output and the input, and why: tracex repairs what the
/// viewer drops from the input, or writes something the viewer counts differently. Each entry is
/// (fixture, count, reason), and the output may only hold more; everything else must be equal.
const KNOWN_DIFFERENCES: &[(&str, &str, &str)] = &[
    (
        "mtia_inference",
        "flows",
        "Kineto's ac2g flows with several f per s (a CUDA graph launch and its kernels): catapult draws only the first f, Perfetto an arrow to each (1,166), as tracex keeps them (flow_end_after_its_flow_ended)",
    ),
    (
        "flow_fan_out",
        "flows",
        "f and t after the f of their id: catapult draws only the first of each id, Perfetto each",
    ),
    (
        "perf_sampling_trace",
        "flows",
        "flow v1 ids with an f after the f of their id: Perfetto draws an arrow to each (118 from the input, as from tracex's output), catapult only the first",
    ),
    (
        "perf_sampling_trace",
        "samples",
        "samples on threads with no other event: tracex declares the threads, catapult drops 5,097 samples of the input (Thread undefined not found)",
    ),
    (
        "speedscope-simple",
        "asyncSlices",
        "async begins without an end: tracex keeps them open and closes them at the end of the trace; catapult drops them from the input",
    ),
    (
        "speedscope-Trace-2023",
        "asyncSlices",
        "an async begin without an end, kept and closed at the end of the trace",
    ),
    (
        "x_event_trace",
        "asyncSlices",
        "legacy async S/F with unmatched ends and begins: tracex keeps the begins open, closed at the end of the trace",
    ),
    (
        "webview",
        "asyncSlices",
        "async begins without an end, kept and closed at the end of the trace",
    ),
    (
        "tcmalloc_trace",
        "asyncSlices",
        "object lifetimes (N/O/D) are written as nestable async slices (b/n/e): the IR keeps no object phase",
    ),
    (
        "webview",
        "instants",
        "the clock sync marker (c) is written as a global instant",
    ),
];

/// Only more than the input is known: tracex never draws less than the viewer does.
fn known(case: &str, key: &str, input: i64, output: i64) -> bool {
    output > input
        && KNOWN_DIFFERENCES
            .iter()
            .any(|(c, k, _)| case.contains(c) && *k == key)
}

const CATAPULT_KEYS: &[&str] = &[
    "threadSlices",
    "asyncSlices",
    "counterSamples",
    "flows",
    "instants",
    "samples",
];

fn short(counts: &BTreeMap<String, i64>, keys: &[&str]) -> String {
    keys.iter()
        .map(|k| counts.get(*k).map_or("-".to_string(), |n| n.to_string()))
        .collect::<Vec<_>>()
        .join("/")
}

#[test]
fn catapult_reads_every_output_as_the_input() {
    let script = match catapult() {
        Ok(s) => s,
        Err(why) => {
            eprintln!("skipped: Catapult viewer check: {why}");
            return;
        }
    };
    let cases = cases();
    let results = par_map(cases, |c| {
        let input = c.chrome_input.then(|| view(&script, &c.input));
        (input, view(&script, &c.output))
    });
    let mut problems = Vec::new();
    eprintln!("Catapult counts ({}):", CATAPULT_KEYS.join("/"));
    for (c, (input, output)) in cases.iter().zip(&results) {
        print_row(
            &c.name,
            input.as_ref().map(|v| &v.counts),
            &output.counts,
            CATAPULT_KEYS,
        );
        if let Some(n) = &output.no_result {
            problems.push(format!("{}: {n}", c.name));
            continue;
        }
        for w in output.warnings.iter().chain(&output.errors) {
            // what the viewer reports on the input's own data is not tracex's to fix
            let inherent = input
                .as_ref()
                .is_some_and(|i| i.warnings.iter().any(|iw| iw == w));
            let off_thread =
                OFF_THREAD_FLOWS.iter().any(|n| c.name.contains(n)) && w.contains("flow_slice_");
            if inherent {
                eprintln!("  ({}: also in the input: {w})", c.name);
            } else if off_thread {
                eprintln!("  ({}: chrome_export_flow_off_thread: {w})", c.name);
            } else {
                problems.push(format!("{}: {w}", c.name));
            }
        }
        let Some(input) = input.as_ref().filter(|v| v.no_result.is_none()) else {
            continue;
        };
        compare(
            &c.name,
            &input.counts,
            &output.counts,
            CATAPULT_KEYS,
            |_, _| false,
            &mut problems,
        );
    }
    eprintln!("Catapult: {} outputs checked", cases.len());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Perfetto inputs with flows between async slices, which Chrome flow events cannot bind to
/// (`chrome_export_flow_off_thread`, listed in `docs/formats/chrome.md`): catapult's flow
/// warnings on their outputs are that loss.
const OFF_THREAD_FLOWS: &[&str] = &[
    "csc-training-hip-programming-results.pftrace",
    "google-perfetto-nested_tracks.perfetto-trace",
];

const PERFETTO_KEYS: &[&str] = &["slices", "flows", "counter_values", "instants"];

#[test]
fn perfetto_reads_every_output_as_the_input() {
    let script = match trace_processor::find() {
        Ok(s) => s,
        Err(why) => {
            eprintln!("skipped: Perfetto trace processor check: {why}");
            return;
        }
    };
    let cases: Vec<&Case> = cases().iter().collect();
    let results = par_map(&cases, |c| {
        // trace processor reads Chrome JSON and Perfetto protobuf inputs
        let input =
            (c.chrome_input || c.perfetto_input).then(|| trace_processor::load(&script, &c.input));
        (input, trace_processor::load(&script, &c.output))
    });
    let mut problems = Vec::new();
    eprintln!("Perfetto counts ({}):", PERFETTO_KEYS.join("/"));
    for (c, (input, output)) in cases.iter().zip(&results) {
        print_row(
            &c.name,
            input.as_ref().map(|l| &l.counts),
            &output.counts,
            PERFETTO_KEYS,
        );
        if let Some(f) = &output.failed {
            problems.push(format!("{}: did not load: {f}", c.name));
            continue;
        }
        for (sev, stat, n) in output.loss_stats() {
            // what Perfetto already loses from the input itself is not tracex's
            let in_input = input.as_ref().map_or(0, |i| i.lost(stat));
            if *n > in_input && !known_perfetto(&c.name, stat) {
                problems.push(format!("{}: {stat}={n} ({sev}), input {in_input}", c.name));
            }
        }
        // an input Perfetto itself cannot read fully gives nothing to compare with
        let Some(input) = input
            .as_ref()
            .filter(|l| l.failed.is_none() && l.losses().is_empty())
        else {
            continue;
        };
        compare(
            &c.name,
            &input.counts,
            &output.counts,
            PERFETTO_KEYS,
            known_perfetto,
            &mut problems,
        );
        let moved = moved_flows(&input.flow_ends, &output.flow_ends);
        if moved.0 > 0 && !known_perfetto(&c.name, "flow_ends") {
            problems.push(format!(
                "{}: {} of {} flows end on other slices than in the input, e.g. {}",
                c.name,
                moved.0,
                input.count("flows"),
                moved.1.join("; ")
            ));
        }
        // a loss allowed as counted must be counted
        for (_, key, diag) in COUNTED_PERFETTO_LOSSES
            .iter()
            .filter(|(case, ..)| c.name.contains(case))
        {
            let lost = match *key {
                "flow_ends" => moved.0 > 0,
                k => input.counts.get(k) != output.counts.get(k),
            };
            if lost && !c.summary.contains(diag) {
                problems.push(format!("{}: {key} lost, and {diag} not reported", c.name));
            }
        }
    }
    eprintln!("Perfetto: {} outputs checked", cases.len());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Differences between what Perfetto builds from an input and from tracex's output of it, where
/// tracex keeps more than Perfetto builds from the input (the issue allows more where tracex
/// repairs the input): (case, stat or count, why).
const KNOWN_PERFETTO: &[(&str, &str, &str)] = &[
    (
        "tcmalloc_trace",
        "slices",
        "object lifetimes (N/O/D) become nestable async slices (b/n/e), which Perfetto imports as \
         slices; Perfetto drops the object phases of the input",
    ),
    (
        "tcmalloc_trace",
        "instants",
        "object snapshots (O) become instants; Perfetto drops them from the input",
    ),
    (
        "speedscope-Trace-2023",
        "slices",
        "an async begin without an end, kept and closed at the end of the trace",
    ),
    (
        "pytorch-kineto-worker0",
        "flow_ends",
        "Perfetto binds the input's flow starts to the `[memory]` instants at the launch's time; \
         from the output it binds them to the cudaLaunchKernel (and cudaMemcpy...) slices, as \
         Kineto meant",
    ),
    (
        "speedscope-Trace-2023",
        "instants",
        "two instants Perfetto drops from the input (unknown scope) are written with a scope",
    ),
];

/// How many of the input's flows have no flow between the same two slice names in the
/// output, and a few of their `out -> in` names (input and output counts).
fn moved_flows(
    input: &BTreeMap<String, i64>,
    output: &BTreeMap<String, i64>,
) -> (i64, Vec<String>) {
    let mut moved = 0;
    let mut examples = Vec::new();
    for (ends, &n) in input {
        let kept = output.get(ends).copied().unwrap_or(0);
        if kept < n {
            moved += n - kept;
            if examples.len() < 3 {
                examples.push(format!("{ends}: {n} in the input, {kept} in the output"));
            }
        }
    }
    (moved, examples)
}

/// Less in the output than Perfetto builds from a Perfetto protobuf input, each loss counted in
/// the named tracex diagnostic: (case, count, diagnostic).
const COUNTED_PERFETTO_LOSSES: &[(&str, &str, &str)] = &[
    // Android's frame timeline packets (field 76: expected and actual frame slices and the
    // flows between them) are not mapped; its atrace slices are
    ("nowinandroid", "slices", "perfetto_packet_unmapped"),
    ("nowinandroid", "flows", "perfetto_packet_unmapped"),
    ("nowinandroid", "flow_ends", "perfetto_packet_unmapped"),
    // flow points on async tracks are written on the process's main thread (flow v1 binds to
    // thread slices only), where they bind to the slice that encloses them there
    (
        "nested_tracks",
        "flow_ends",
        "chrome_export_flow_off_thread",
    ),
    // TrackEvent thread-time counters (`extra_counter_values` of thread time)
    (
        "Android-chrome.pftrace",
        "counter_values",
        "perfetto_thread_time_dropped",
    ),
];

fn known_perfetto(case: &str, key: &str) -> bool {
    KNOWN_PERFETTO
        .iter()
        .chain(COUNTED_PERFETTO_LOSSES)
        .any(|(c, k, _)| case.contains(c) && *k == key)
}

/// One line of a table of counts: the input's (where trace processor reads it) and the output's.
fn print_row(
    name: &str,
    input: Option<&BTreeMap<String, i64>>,
    output: &BTreeMap<String, i64>,
    keys: &[&str],
) {
    let input = input.map_or("-".into(), |i| short(i, keys));
    eprintln!("  {name:70} in {input:32} out {}", short(output, keys));
}

/// Counts that differ between input and output, other than the known differences.
fn compare(
    name: &str,
    input: &BTreeMap<String, i64>,
    output: &BTreeMap<String, i64>,
    keys: &[&str],
    also_known: fn(&str, &str) -> bool,
    problems: &mut Vec<String>,
) {
    for key in keys {
        let (i, o) = (
            input.get(*key).copied().unwrap_or(0),
            output.get(*key).copied().unwrap_or(0),
        );
        if o != i && !known(name, key, i, o) && !also_known(name, key) {
            problems.push(format!("{name}: {key} {i} in the input, {o} in the output"));
        }
    }
}

#[test]
fn parses_check_output() {
    let v = parse_view("WARN  x.json: processes=2 threads=3 threadSlices=10 asyncSlices=0 counters=1 counterSamples=4 flows=0 instants=2 samples=0 stackFrames=0 import=5ms render=3ms\n  warning: metadata_parse_error: Unrecognized metadata name: tracex_identity\n");
    assert_eq!(v.counts.get("threadSlices"), Some(&10));
    assert_eq!(v.counts.get("counterSamples"), Some(&4));
    assert_eq!(v.warnings.len(), 1);
    assert!(v.errors.is_empty() && v.no_result.is_none());
}
