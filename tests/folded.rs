//! Folded stacks: goldens of the project's fixtures, byte-identical round trips of every folded
//! file, bad input, timeline and sample flame graphs, the GPU view from backtraces (the nsys
//! contract), and the independent readers (inferno, speedscope) on everything written.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use tracex_folded::options::{ExportOptions, Fold, Prefix, Weight};
use tracex_ir::builder::TraceBuilder;
use tracex_ir::event::{FlowBind, FlowPoint, FlowRole, Sample};
use tracex_ir::io::OutputTarget;
use tracex_ir::mem::Trace;
use tracex_ir::nest::OverlapRouter;
use tracex_ir::order::Sorter;
use tracex_ir::{Event, Sink, TrackId};

use crate::common::*;

fn own(name: &str) -> PathBuf {
    root().join("fixtures/folded").join(name)
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// Fixtures that are recognised from their content.
const SNIFFED: &[&str] = &[
    "stacks.folded",
    "differential.folded",
    "extended_threads.txt",
];
/// Fixtures full of bad lines on purpose: read with `--from folded`.
const FORCED: &[&str] = &["edge_cases.folded", "extended_bad.txt"];

/// The stacks and counts of folded text: `stack -> [counts]`, summed per stack.
pub fn parse_folded(text: &str) -> BTreeMap<String, Vec<i64>> {
    let mut m: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for line in text.lines() {
        let mut parts: Vec<&str> = line.rsplitn(3, ' ').collect();
        parts.reverse();
        let (stack, counts): (String, Vec<i64>) = match parts.as_slice() {
            [stack, a, b] if a.parse::<i64>().is_ok() => (
                stack.to_string(),
                vec![a.parse().unwrap(), b.parse().unwrap()],
            ),
            [a, b, c] => (format!("{a} {b}"), vec![c.parse().unwrap()]),
            [stack, c] => (stack.to_string(), vec![c.parse().unwrap()]),
            _ => panic!("not a folded line: {line:?}"),
        };
        let e = m.entry(stack).or_insert_with(|| vec![0; counts.len()]);
        for (x, c) in e.iter_mut().zip(counts) {
            *x += c;
        }
    }
    m
}

/// The independent gate on a folded file tracex wrote: inferno renders it with rc 0 and no
/// warning, its total equals the sum of the (last) counts; every line is `stack count` with a
/// positive count and a non-empty stack, and lines are sorted. `false` when inferno is missing.
pub fn check_flamegraph(path: &Path) -> bool {
    let text = std::fs::read_to_string(path).expect("read folded output");
    let mut prev: Option<&str> = None;
    let mut total = 0i64;
    for line in text.lines() {
        assert!(
            !line.starts_with('#'),
            "{}: comment written",
            path.display()
        );
        let (stack, count) = line.rsplit_once(' ').expect("stack count");
        let count: i64 = count.parse().expect("integer count");
        // a differential line may have 0 in one column, never in both
        let before = stack
            .rsplit_once(' ')
            .and_then(|(_, b)| b.parse::<i64>().ok());
        assert!(
            count > 0 || before.is_some_and(|b| b > 0),
            "{}: zero count in {line:?}",
            path.display()
        );
        assert!(
            !stack.trim().is_empty(),
            "{}: empty stack in {line:?}",
            path.display()
        );
        if let Some(p) = prev {
            assert!(
                p < stack,
                "{}: stacks not sorted at {line:?}",
                path.display()
            );
        }
        prev = Some(stack);
        total += count;
    }
    let Some(inferno) = tool("inferno-flamegraph") else {
        eprintln!("note: inferno-flamegraph not installed; skipped (run scripts/setup.sh)");
        return false;
    };
    let out = std::process::Command::new(inferno)
        .arg(path)
        .output()
        .expect("run inferno-flamegraph");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && !stderr.contains("WARN"),
        "inferno on {}: {} {stderr}",
        path.display(),
        out.status
    );
    let svg = String::from_utf8_lossy(&out.stdout);
    let all = svg
        .split("<title>all (")
        .nth(1)
        .and_then(|t| t.split(" samples").next())
        .unwrap_or_else(|| panic!("no total in the SVG of {}", path.display()))
        .replace(',', "");
    assert_eq!(
        all.parse::<i64>().unwrap(),
        total,
        "inferno's total for {} differs from the sum of the counts",
        path.display()
    );
    true
}

/// The lines inferno reads from a folded input (its own rules, restated): trimmed, not blank
/// or `#`, ending in a count (fraction truncated) with a non-empty stack, two counts kept.
fn inferno_view(text: &str) -> BTreeMap<String, Vec<i64>> {
    let count = |t: &str| -> Option<i64> {
        let int = t.split('.').next()?;
        (!int.is_empty() && t.bytes().all(|b| b.is_ascii_digit() || b == b'.'))
            .then(|| int.parse().ok())
            .flatten()
    };
    let mut kept = String::new();
    for line in text.lines() {
        let l = line.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let Some((rest, last)) = l.rsplit_once(' ') else {
            continue;
        };
        let Some(last) = count(last) else { continue };
        let rest = rest.trim_end();
        let (stack, before) = match rest.rsplit_once(' ').map(|(s, b)| (s, count(b))) {
            Some((s, Some(b))) => (s.trim_end(), Some(b)),
            _ => (rest, None),
        };
        if stack.is_empty() {
            continue;
        }
        match before {
            Some(b) => kept.push_str(&format!("{stack} {b} {last}\n")),
            None => kept.push_str(&format!("{stack} {last}\n")),
        }
    }
    parse_folded(&kept)
}

#[test]
fn goldens_of_own_fixtures() {
    for name in SNIFFED {
        golden(
            &format!("folded/{name}.dump"),
            &dump_with_diagnostics(&own(name)),
        );
    }
    for name in FORCED {
        let out = run_ok(&["dump", "--from", "folded", s(&own(name))]);
        golden(
            &format!("folded/{name}.dump"),
            &String::from_utf8(out.stdout).unwrap(),
        );
    }
}

#[test]
fn edge_cases_mean_what_inferno_means() {
    let out = run_ok(&["dump", "--from", "folded", s(&own("edge_cases.folded"))]);
    let d = String::from_utf8(out.stdout).unwrap();
    for fact in [
        // the fraction is truncated, padding and \r are trimmed, an empty frame stays a frame
        "weight=2 stack=[\"main\"; \"work\"; \"inner\"]",
        "weight=3 stack=[\"main\"; \"padded\"]",
        "weight=4 stack=[\"main\"; \"crlf\"]",
        "weight=2 stack=[\"main\"; \"\"; \"empty frame\"]",
        "weight=8 stack=[\"main\"; \"two  spaces\"]",
        // a count-only line is a sample without a stack; a zero count is kept as read
        "ts=none weight=7\n",
        "weight=0 stack=[\"main\"; \"zero\"]",
        "diag folded_comment_line count=3 first=line 1",
        "diag folded_blank_line count=2 first=line 3",
        "diag folded_fractional_count count=1 first=line 5",
        "diag folded_empty_stack count=1 first=line 8",
        "diag folded_zero_count count=1 first=line 9",
        "diag folded_missing_count count=2 first=line 10",
        "diag folded_negative_count count=1 first=line 11",
        "diag folded_bad_count count=1 first=line 16",
    ] {
        assert!(d.contains(fact), "missing {fact:?} in\n{d}");
    }
    // the same lines as inferno reads them, written back
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("edge.folded");
    run_ok(&[
        "convert",
        "--from",
        "folded",
        s(&own("edge_cases.folded")),
        s(&out),
    ]);
    let text = std::fs::read_to_string(&out).unwrap();
    let mut expected = inferno_view(&std::fs::read_to_string(own("edge_cases.folded")).unwrap());
    expected.retain(|_, c| c.iter().any(|&x| x != 0));
    assert_eq!(parse_folded(&text), expected, "{text}");
    check_flamegraph(&out);
}

/// folded → IR → folded gives the input's stack lines back byte for byte (after sorting), for
/// the ten folded fixtures and the project's own. Lines inferno does not read (comments, blank
/// lines, py-spy's count-only line) are counted diagnostics, not output. The merger outputs in
/// the corpus's cupti folder repeat stacks: those come back summed per stack.
#[test]
fn round_trip_every_folded_file() {
    let mut files: Vec<PathBuf> = ["stacks.folded", "differential.folded"]
        .iter()
        .map(|n| own(n))
        .collect();
    let corpus_folded = corpus_files("folded");
    let corpus_merged: Vec<PathBuf> = corpus_files("cupti")
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "folded"))
        .collect();
    if corpus().is_some() {
        assert_eq!(corpus_folded.len(), 10, "the ten folded fixtures");
        assert_eq!(corpus_merged.len(), 5, "the five merged outputs");
    }
    files.extend(corpus_folded.iter().cloned());
    let byte_identical = files.len();
    files.extend(corpus_merged.iter().cloned());
    let dir = tempfile::tempdir().unwrap();
    let mut inferno_checked = 0;
    let mut repeats = 0;
    for (i, f) in files.iter().enumerate() {
        let input = std::fs::read_to_string(f).unwrap();
        let out = dir.path().join(format!("rt{i}.folded"));
        run_ok(&["convert", s(f), s(&out)]);
        let written = std::fs::read_to_string(&out).unwrap();
        let got: Vec<&str> = written.lines().collect();
        if i < byte_identical {
            let mut expected: Vec<&str> = input
                .lines()
                .map(str::trim)
                .filter(|l| inferno_view(&format!("{l}\n")).len() == 1)
                .collect();
            expected.sort();
            assert_eq!(got, expected, "round trip of {}", f.display());
        } else {
            let summed: Vec<String> = inferno_view(&input)
                .into_iter()
                .map(|(stack, c)| format!("{stack} {}", c[0]))
                .collect();
            repeats += (summed.len() < input.lines().count()) as usize;
            assert_eq!(got, summed, "stacks of {} summed", f.display());
        }
        if check_flamegraph(&out) {
            inferno_checked += 1;
        }
    }
    if corpus().is_some() {
        assert!(repeats > 0, "merged_trace.folded repeats stacks");
    }
    eprintln!(
        "folded round trip: {} files ({} from the corpus), {inferno_checked} rendered by inferno",
        files.len(),
        corpus_folded.len() + corpus_merged.len()
    );
}

#[test]
fn extended_lines_are_timed_samples_on_threads() {
    let d = dump(&own("extended_threads.txt"));
    for fact in [
        "process P0 host pid=31001 name=\"python3\"",
        "process P1 host pid=48213 name=\"llm_server\"",
        "thread T1 P0 tid=31007 name=\"python3\"",
        "thread T2 P0 tid=31012 name=\"pt_autograd_0\"",
        "thread T4 P1 tid=48220 name=\"llm_server\"",
        "sample ts=1761700100000004000 weight=1 cpu=1 stack=[\"_start\"; \"__libc_start_main\"; \"0x5581c02a1ca0\"; \"main\"; \"serve(Config const&)\"; \"<no-symbol>\"",
        "clock origin_unix_ns=0",
    ] {
        assert!(d.contains(fact), "missing {fact:?} in\n{d}");
    }
    assert_eq!(d.matches(" sample ts=").count(), 7, "{d}");
}

/// Each kind of bad line: a counted diagnostic with its line number, or with --strict a clear
/// failure that writes nothing. Never a panic.
#[test]
fn bad_input_is_counted_or_fails_under_strict() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.folded");
    let cases: &[(&str, &[u8], &str)] = &[
        ("no_count.folded", b"main;a 3\nmain;b\n", "folded_missing_count count=1 first=line 2"),
        ("negative.folded", b"main;a 3\n\nmain;b -4\n", "folded_negative_count count=1 first=line 3"),
        ("binary.folded", b"main;a 3\n\xff\xfe\x00\x01 7\nmain;c 1\n", "folded_not_text count=1 first=line 2"),
        (
            "short.txt",
            b"1761700100000001000 app 1 1 0 main;cudaLaunchKernel\n1761700100000002000 app 1 1\n",
            "folded_ext_short_line count=1 first=line 2",
        ),
        (
            "bad_ts.txt",
            b"1761700100000001000 app 1 1 0 main;cudaLaunchKernel\n17617001000x0002000 app 1 1 0 main;x\n",
            "folded_ext_bad_number count=1 first=line 2",
        ),
    ];
    for (name, bytes, diag) in cases {
        let input = dir.path().join(name);
        std::fs::write(&input, bytes).unwrap();
        let d = String::from_utf8(run_ok(&["dump", "--from", "folded", s(&input)]).stdout).unwrap();
        assert!(d.contains(diag), "{name}: expected {diag:?} in\n{d}");
        let err = run_err(&[
            "convert",
            "--strict",
            "--from",
            "folded",
            s(&input),
            s(&out),
        ]);
        let kind = diag.split(' ').next().unwrap();
        assert!(
            err.contains("--strict") && err.contains(kind),
            "{name}: {err}"
        );
        assert!(!out.exists(), "{name}: --strict left an output");
        run_ok(&["convert", "--from", "folded", s(&input), s(&out)]);
        assert!(out.exists());
        std::fs::remove_file(&out).unwrap();
    }
    // a file of nothing but bad lines has nothing to write: an error, no output
    let junk = dir.path().join("junk.folded");
    std::fs::write(&junk, b"\xff\xfe\n\x00\x00\n").unwrap();
    let err = run_err(&["convert", "--from", "folded", s(&junk), s(&out)]);
    assert!(err.contains("nothing to fold"), "{err}");
    assert!(!out.exists());
}

/// Runs `trace` through the CLI's chain (sorter, overlap router) into the folded exporter;
/// returns the output and the trace (with the diagnostics counted on the way).
fn export(mut trace: Trace, opts: &ExportOptions, dir: &Path) -> (String, Trace) {
    let path = dir.join("out.folded");
    let _ = std::fs::remove_file(&path);
    let exporter =
        tracex_folded::Exporter::create(&OutputTarget::Path(path.clone()), opts).unwrap();
    let mut chain = Sorter::new(OverlapRouter::new(exporter));
    trace.replay(&mut chain).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    check_flamegraph(&path);
    (text, trace)
}

fn opts(fold: Fold, weight: Option<Weight>, prefix: Prefix) -> ExportOptions {
    let mut o = ExportOptions::default();
    o.fold = fold;
    o.weight = weight;
    o.prefix = prefix;
    o
}

#[test]
fn timeline_self_time_per_stack() {
    let mut b = TraceBuilder::new();
    let p = b.process(7, "server");
    let t = b.thread(p, 8, "main");
    let u = b.thread(p, 9, "io");
    // main: run [0,10000) > parse [1000,3000) > lex [1000,1500); run > eval [4000,9000)
    b.slice(t, 0, 10_000, "run");
    b.slice(t, 1_000, 2_000, "parse");
    b.slice(t, 1_000, 500, "lex");
    b.slice(t, 4_000, 5_000, "eval");
    // a partial overlap on main: [9500, 12000) starts in run, ends after it
    b.slice(t, 9_500, 2_500, "late");
    b.slice(u, 0, 2_400, "read");
    b.slice(u, 5_000, 400, "read");
    let dir = tempfile::tempdir().unwrap();
    let (text, defs) = export(b.finish(), &ExportOptions::default(), dir.path());
    assert_eq!(
        text,
        "late 2500\nread 2800\nrun 3000\nrun;eval 5000\nrun;parse 1500\nrun;parse;lex 500\n"
    );
    assert_eq!(defs.diag.count("slice_partial_overlap"), 1);

    let mut b = TraceBuilder::new();
    let p = b.process(7, "server");
    let t = b.thread(p, 8, "main");
    b.slice(t, 0, 10_400, "run");
    b.slice(t, 1_000, 2_600, "parse");
    b.slice(t, 5_000, 300, "parse");
    let both = Prefix {
        process: true,
        thread: true,
    };
    // run: 10.4 µs - 2.6 - 0.3 = 7.5 µs → 8; parse: 2.9 µs → 3
    let (us, _) = export(
        b.finish(),
        &opts(Fold::Auto, Some(Weight::Us), both),
        dir.path(),
    );
    assert_eq!(
        us,
        "server (pid 7);main (tid 8);run 8\nserver (pid 7);main (tid 8);run;parse 3\n"
    );
}

#[test]
fn timeline_counts_calls_and_never_writes_zero() {
    let mut b = TraceBuilder::new();
    let p = b.process(7, "server");
    let t = b.thread(p, 8, "main");
    b.slice(t, 0, 100, "tick");
    b.slice(t, 200, 100, "tick");
    b.slice(t, 400, 0, "instant-like");
    let dir = tempfile::tempdir().unwrap();
    let (calls, _) = export(
        b.finish(),
        &opts(Fold::Timeline, Some(Weight::Samples), Prefix::default()),
        dir.path(),
    );
    assert_eq!(calls, "instant-like 1\ntick 2\n");
    let mut b = TraceBuilder::new();
    let p = b.process(7, "server");
    let t = b.thread(p, 8, "main");
    b.slice(t, 0, 100, "tick");
    b.slice(t, 400, 0, "zero");
    let (ns, defs) = export(b.finish(), &ExportOptions::default(), dir.path());
    assert_eq!(ns, "tick 100\n");
    assert_eq!(defs.diag.count("folded_zero_weight"), 1);
}

#[test]
fn samples_summed_per_stack_with_prefix() {
    let mut b = TraceBuilder::new();
    let p = b.process(7, "server");
    let t = b.thread(p, 8, "main");
    let u = b.thread(p, 9, "io");
    b.sample(t, Some(5), &["main", "work"], 2);
    b.sample(t, Some(6), &["main", "work"], 3);
    b.sample(u, Some(6), &["main", "work"], 1);
    b.sample(u, None, &["a;b", "c\nd"], 4);
    b.events.push(Event::Sample(Sample {
        track: t,
        ts: Some(9),
        stack: None,
        weight: 9,
        cpu: None,
        name: None,
    }));
    let dir = tempfile::tempdir().unwrap();
    let (plain, defs) = export(b.finish(), &ExportOptions::default(), dir.path());
    assert_eq!(plain, "a:b;c d 4\nmain;work 6\n");
    assert_eq!(defs.diag.count("folded_frame_renamed"), 2);
    assert_eq!(defs.diag.count("folded_sample_without_stack"), 1);

    let mut b = TraceBuilder::new();
    let p = b.process(7, "server");
    let t = b.thread(p, 8, "main");
    let u = b.thread(p, 9, "io");
    b.sample(t, Some(5), &["main", "work"], 2);
    b.sample(u, Some(6), &["main", "work"], 1);
    let thread_only = Prefix {
        process: false,
        thread: true,
    };
    let (prefixed, _) = export(
        b.finish(),
        &opts(Fold::Samples, None, thread_only),
        dir.path(),
    );
    assert_eq!(
        prefixed,
        "io (tid 9);main;work 1\nmain (tid 8);main;work 2\n"
    );
}

#[test]
fn wrong_view_or_weight_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o.folded");
    let stacks = own("stacks.folded");
    for (args, needle) in [
        (&["--fold", "timeline"][..], "no slices"),
        (&["--fold", "gpu"][..], "needs CUDA launch calls"),
        (&["--weight", "gpu-ns"][..], "needs CUDA launch calls"),
        (
            &["--fold", "samples", "--weight", "ns"][..],
            "does not apply",
        ),
    ] {
        let mut a = vec!["convert"];
        a.extend_from_slice(args);
        a.extend([s(&stacks), s(&out)]);
        let err = run_err(&a);
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(!out.exists());
    }
    // a usage error: clap's exit code 2
    let o = tracex()
        .args(["convert", "--tolerance-ms=-1", s(&stacks), s(&out)])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--tolerance-ms") && err.contains("non-negative"),
        "{err}"
    );
}

/// Chrome traces fold by thread nesting; the overlap router's lanes keep overlapping slices
/// from forming stacks they never had.
#[test]
fn timeline_from_chrome_traces() {
    let dir = tempfile::tempdir().unwrap();
    let chrome = root().join("fixtures/chrome");
    let out = dir.path().join("po.folded");
    run_ok(&["convert", s(&chrome.join("partial_overlap.json")), s(&out)]);
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "A 10000\nB 10000\nC 10000\nD 1000\n"
    );
    check_flamegraph(&out);
    let mut inputs = vec![
        root().join("fixtures/demo/gpu_training_step.json"),
        chrome.join("equal_timestamps.json"),
        chrome.join("missing_end.json"),
        chrome.join("all_phases.json"),
    ];
    inputs.extend(corpus_files("chrome").into_iter().filter(|p| {
        let n = p.file_name().unwrap().to_string_lossy();
        n.contains("kineto-worker") || n.contains("speedscope-simple") || n.contains("tcmalloc")
    }));
    for (i, input) in inputs.iter().enumerate() {
        let out = dir.path().join(format!("tl{i}.folded"));
        run_ok(&[
            "convert",
            "--fold",
            "timeline",
            "--prefix",
            "process,thread",
            s(input),
            s(&out),
        ]);
        check_flamegraph(&out);
    }
    eprintln!("timeline folding: {} Chrome traces", inputs.len());
}

/// The GPU view from backtraces, built to the nsys importer's contract: CUDA API slices on
/// threads with `stack` (root first) and flows Start (API track, api ts) → End (stream, kernel
/// ts); kernels and copies on GPU stream tracks.
fn nsys_like() -> Trace {
    let mut b = TraceBuilder::new();
    let p = b.process(900, "saxpy");
    let t = b.thread(p, 901, "saxpy");
    let dev = b.device(0, "GPU 0");
    let stream = b.gpu_stream(dev, 0, 7);
    let launch_stack = b.stack(&[
        "_start",
        "main",
        "run(int)",
        "cudaLaunchKernel",
        "libcuda.so.1+0x2a1b3",
    ]);
    let copy_stack = b.stack(&[
        "_start",
        "main",
        "upload(float*)",
        "cudaMemcpy",
        "libcudart.so+0x4c0",
    ]);
    let call = |b: &mut TraceBuilder, ts: i64, name: &str, stack| {
        b.slice(t, ts, 2_000, name).stack = stack;
        b.cat("cuda_runtime");
    };
    call(&mut b, 1_000, "cudaMemcpy_v3020", copy_stack);
    call(&mut b, 10_000, "cudaLaunchKernel_v7000", launch_stack);
    call(&mut b, 20_000, "cudaLaunchKernel_v7000", launch_stack);
    call(&mut b, 30_000, "cudaLaunchKernel_v7000", None);
    b.slice(stream, 1_500, 700, "Memcpy HtoD");
    b.cat("gpu_memcpy");
    b.slice(
        stream,
        11_000,
        4_000,
        "saxpy_kernel(int, float, float*, float*)",
    );
    b.cat("kernel");
    b.slice(
        stream,
        21_000,
        5_000,
        "saxpy_kernel(int, float, float*, float*)",
    );
    b.cat("kernel");
    b.slice(
        stream,
        31_000,
        6_000,
        "saxpy_kernel(int, float, float*, float*)",
    );
    b.cat("kernel");
    for (a, k) in [
        (1_000, 1_500),
        (10_000, 11_000),
        (20_000, 21_000),
        (30_000, 31_000),
    ] {
        b.flow((t, a), (stream, k), "ac2g");
    }
    // periodic CPU samples, one caught inside cudaLaunchKernel: not part of the GPU view
    b.sample(
        t,
        Some(10_500),
        &["_start", "main", "run(int)", "cudaLaunchKernel"],
        1,
    );
    b.sample(t, Some(40_000), &["_start", "main", "compute()"], 1);
    b.finish()
}

#[test]
fn gpu_time_by_cpu_stack_from_backtraces() {
    let dir = tempfile::tempdir().unwrap();
    let (text, defs) = export(nsys_like(), &ExportOptions::default(), dir.path());
    assert_eq!(
        text,
        "main;run(int);cudaLaunchKernel;[GPU_Kernel]saxpy_kernel(int, float, float*, float*) 9000\n\
         main;upload(float*);cudaMemcpy;[GPU_Memcpy]Memcpy HtoD 700\n"
    );
    // the launch without a backtrace: counted with its GPU time, not silently lost
    let d = defs.diag.get("folded_gpu_work_without_stack").unwrap();
    assert_eq!(d.count, 1);
    assert_eq!(d.detail.as_deref(), Some("6000 ns of GPU time"));
    assert_eq!(defs.diag.count("folded_events_not_in_view"), 2);

    let (counts, _) = export(
        nsys_like(),
        &opts(
            Fold::Gpu,
            Some(Weight::Samples),
            Prefix {
                process: true,
                thread: false,
            },
        ),
        dir.path(),
    );
    assert_eq!(
        counts,
        "saxpy (pid 900);main;run(int);cudaLaunchKernel;[GPU_Kernel]saxpy_kernel(int, float, float*, float*) 2\n\
         saxpy (pid 900);main;upload(float*);cudaMemcpy;[GPU_Memcpy]Memcpy HtoD 1\n"
    );
    // the same trace's CPU samples as a CPU flame graph
    let (cpu, _) = export(
        nsys_like(),
        &opts(Fold::Samples, None, Prefix::default()),
        dir.path(),
    );
    assert_eq!(
        cpu,
        "_start;main;compute() 1\n_start;main;run(int);cudaLaunchKernel 1\n"
    );
}

/// nsys records a launch's backtrace on the outer of two nested rows of the same call; a flow
/// from the inner row (or from a driver call inside a runtime call) uses that backtrace.
#[test]
fn gpu_view_takes_the_backtrace_of_the_enclosing_call() {
    let mut b = TraceBuilder::new();
    let p = b.process(900, "app");
    let t = b.thread(p, 900, "app");
    let dev = b.device(0, "GPU 0");
    let stream = b.gpu_stream(dev, 0, 7);
    let stack = b.stack(&["main", "step()", "cudaLaunchKernel"]);
    b.slice(t, 1_000, 3_000, "cudaLaunchKernel").stack = stack;
    b.cat("cuda_runtime");
    b.slice(t, 1_200, 2_600, "cudaLaunchKernel_v7000");
    b.cat("cuda_runtime");
    b.slice(t, 1_500, 1_000, "cuLaunchKernel");
    b.cat("cuda_driver");
    b.slice(stream, 5_000, 700, "k1");
    b.cat("kernel");
    b.slice(stream, 6_000, 300, "k2");
    b.cat("kernel");
    b.flow((t, 1_200), (stream, 5_000), "ac2g");
    b.flow((t, 1_500), (stream, 6_000), "ac2g");
    let dir = tempfile::tempdir().unwrap();
    let (text, defs) = export(b.finish(), &ExportOptions::default(), dir.path());
    assert_eq!(
        text,
        "main;step();cudaLaunchKernel;[GPU_Kernel]k1 700\n\
         main;step();cudaLaunchKernel;cuLaunchKernel;[GPU_Kernel]k2 300\n"
    );
    assert_eq!(defs.diag.count("folded_gpu_work_without_stack"), 0);
}

/// A flow end bound to the next slice (`FlowBind::Next`, Chrome `f` without `bp`) joins the
/// kernel that starts after it.
#[test]
fn gpu_view_binds_next_slice_flows() {
    let mut t = nsys_like();
    for ev in &mut t.events {
        if let Event::Flow(FlowPoint {
            role: FlowRole::End,
            bind,
            ts,
            ..
        }) = ev
        {
            *bind = FlowBind::Next;
            *ts -= 400;
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let (text, _) = export(t, &ExportOptions::default(), dir.path());
    assert!(
        text.contains("[GPU_Kernel]saxpy_kernel(int, float, float*, float*) 9000\n"),
        "{text}"
    );
}

/// nsys exports: GPU time by CPU call stack (pipit saxpy has CUDA backtraces) and a CPU flame
/// graph from the sampling data (cutlass). Checks nothing until tracex reads nsys files.
#[test]
fn nsys_corpus_gpu_by_cpu_stack() {
    let files = corpus_files("nsys");
    let dir = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for f in files.iter().filter(|p| {
        let n = p.file_name().unwrap().to_string_lossy();
        n.contains("saxpy") || n.contains("cutlass")
    }) {
        let readable = tracex()
            .args(["info", s(f)])
            .output()
            .unwrap()
            .status
            .success();
        if !readable {
            eprintln!("note: tracex cannot read {} yet; skipped", f.display());
            continue;
        }
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        if name.contains("saxpy") {
            let out = dir.path().join("saxpy_gpu.folded");
            run_ok(&[
                "convert",
                "--fold",
                "gpu",
                "--weight",
                "gpu-ns",
                s(f),
                s(&out),
            ]);
            let text = std::fs::read_to_string(&out).unwrap();
            let kernel_ns: i64 = parse_folded(&text)
                .iter()
                .filter(|(k, _)| k.contains(";[GPU_Kernel]"))
                .map(|(_, c)| c[0])
                .sum();
            if let Some(expected) = saxpy_kernel_ns_with_backtrace(f) {
                assert_eq!(
                    kernel_ns, expected,
                    "GPU ns of kernels launched with a backtrace"
                );
            }
            assert!(text.contains(";cudaLaunchKernel;[GPU_Kernel]"), "{text}");
            check_flamegraph(&out);
        }
        let out = dir.path().join(format!("{name}.cpu.folded"));
        run_ok(&["convert", "--fold", "samples", s(f), s(&out)]);
        check_flamegraph(&out);
        checked += 1;
    }
    eprintln!("nsys GPU/CPU flame graphs: {checked} files checked");
}

/// Kernel time whose launching runtime call has a callchain, straight from the SQLite file
/// (python3's sqlite3, independent of tracex); `None` without python3.
fn saxpy_kernel_ns_with_backtrace(db: &Path) -> Option<i64> {
    let sql = "select sum(k.end - k.start) from CUPTI_ACTIVITY_KIND_KERNEL k where exists \
        (select 1 from CUPTI_ACTIVITY_KIND_RUNTIME r where r.correlationId = k.correlationId \
        and r.callchainId is not null)";
    let script = format!(
        "import sqlite3,sys; c=sqlite3.connect('file:'+sys.argv[1]+'?immutable=1', uri=True); print(c.execute(\"{sql}\").fetchone()[0])"
    );
    let out = std::process::Command::new("python3")
        .args(["-c", &script, s(db)])
        .output()
        .ok()?;
    String::from_utf8(out.stdout).ok()?.trim().parse().ok()
}

#[test]
fn outputs_load_in_speedscope() {
    let dir = tempfile::tempdir().unwrap();
    let mut outs = Vec::new();
    for (i, (inputs, extra)) in [
        (vec![own("stacks.folded")], vec![]),
        (vec![own("differential.folded")], vec![]),
        (
            vec![root().join("fixtures/demo/gpu_training_step.json")],
            vec!["--fold", "timeline"],
        ),
        (
            vec![
                root().join("fixtures/cupti/app_cpu.txt"),
                root().join("fixtures/cupti/app_gpu.json"),
            ],
            vec![],
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let out = dir.path().join(format!("ss{i}.folded"));
        let mut a = vec!["convert".to_string()];
        a.extend(extra.iter().map(|x| x.to_string()));
        a.extend(inputs.iter().map(|p| s(p).to_string()));
        a.push(s(&out).to_string());
        run_ok(&a.iter().map(String::as_str).collect::<Vec<_>>());
        outs.push(out);
    }
    let mut checked = 0;
    for out in &outs {
        match speedscope_loads(out) {
            Some(ok) => {
                assert!(ok, "speedscope did not load {}", out.display());
                checked += 1;
            }
            None => {
                eprintln!("note: speedscope/chromium not installed; skipped");
                return;
            }
        }
    }
    eprintln!("speedscope: {checked} folded outputs loaded");
}

/// A random tree of calls on one thread, laid out in time: (name index, self time, children).
#[derive(Clone, Debug)]
struct Call(u8, i64, Vec<Call>);

fn calls() -> impl Strategy<Value = Vec<Call>> {
    let leaf = (0u8..4, 0i64..50).prop_map(|(n, t)| Call(n, t, vec![]));
    let tree = leaf.prop_recursive(3, 24, 4, |inner| {
        (0u8..4, 0i64..50, prop::collection::vec(inner, 0..4)).prop_map(|(n, t, c)| Call(n, t, c))
    });
    prop::collection::vec(tree, 1..5)
}

fn total(call: &Call) -> i64 {
    call.1 + call.2.iter().map(total).sum::<i64>()
}

/// Lays calls out on `track` from `start` (a call first, as a file lists a parent before its
/// children, then its children one after another, then its own self time); adds each stack's
/// self time to `expected`. Returns the end.
fn lay_out(
    b: &mut TraceBuilder,
    track: TrackId,
    start: i64,
    call: &Call,
    path: &str,
    expected: &mut BTreeMap<String, i64>,
) -> i64 {
    let name = format!("f{}", call.0);
    let path = if path.is_empty() {
        name.clone()
    } else {
        format!("{path};{name}")
    };
    b.slice(track, start, total(call), &name);
    let mut t = start;
    for c in &call.2 {
        t = lay_out(b, track, t, c, &path, expected);
    }
    *expected.entry(path).or_default() += call.1;
    t + call.1
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Any nesting of calls (zero self times and equal starts included) folds to exactly the
    /// stacks and self times it was built from.
    #[test]
    fn random_call_trees_fold_to_their_self_times(roots in calls()) {
        let mut b = TraceBuilder::new();
        let p = b.process(1, "p");
        let t = b.thread(p, 1, "t");
        let mut expected = BTreeMap::new();
        let mut at = 0;
        for r in &roots {
            at = lay_out(&mut b, t, at, r, "", &mut expected) + 10;
        }
        expected.retain(|_, v| *v > 0);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.folded");
        let mut chain = Sorter::new(OverlapRouter::new(
            tracex_folded::Exporter::create(&OutputTarget::Path(path.clone()), &ExportOptions::default()).unwrap(),
        ));
        let mut trace = b.finish();
        let r = trace.replay(&mut chain);
        if expected.is_empty() {
            prop_assert!(r.is_err());
            return Ok(());
        }
        r.unwrap();
        let got: BTreeMap<String, i64> = parse_folded(&std::fs::read_to_string(&path).unwrap())
            .into_iter()
            .map(|(k, v)| (k, v[0]))
            .collect();
        prop_assert_eq!(got, expected);
    }
}

/// The exporter's own sink contract: dropped without `finish`, it leaves nothing.
#[test]
fn no_output_without_finish() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.folded");
    {
        let mut e = tracex_folded::Exporter::create(
            &OutputTarget::Path(path.clone()),
            &ExportOptions::default(),
        )
        .unwrap();
        let mut t = nsys_like();
        for ev in t.events.clone() {
            e.event(&t.defs, &mut t.diag, ev).unwrap();
        }
    }
    assert!(!path.exists());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}
