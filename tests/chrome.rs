//! Chrome JSON: goldens of the project's own fixtures, round trips over every real trace,
//! an independent check of the output, bad inputs, and property tests.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use serde::Deserialize;
use serde_json::value::RawValue;
use tracex_ir::builder::TraceBuilder;
use tracex_ir::dump::{dump_with, DumpOptions};
use tracex_ir::io::OutputTarget;
use tracex_ir::mem::MemSink;
use tracex_ir::nest::OverlapRouter;
use tracex_ir::order::Sorter;
use tracex_ir::{Defs, Diagnostics, ImportCtx, Progress, Sink, Stage};

use crate::common::*;

fn own(name: &str) -> PathBuf {
    root().join("fixtures/chrome").join(name)
}

/// The project's fixtures that import successfully.
const GOOD: &[&str] = &[
    "all_phases.json",
    "empty_array.json",
    "single_event.json",
    "unterminated_array.json",
    "torn_event.json",
    "lenient_commas_padding.json",
    "string_pids.json",
    "equal_timestamps.json",
    "partial_overlap.json",
    "missing_end.json",
    "precision.json",
    "flow_fan_out.json",
];

#[test]
fn goldens_of_own_fixtures() {
    for name in GOOD {
        let text = dump_with_diagnostics(&own(name));
        golden(&format!("chrome/{name}.dump"), &text);
    }
}

#[test]
fn edge_cases_have_the_expected_meaning() {
    // The goldens are reviewed; these assertions state the key facts independently of them.
    let d = dump_with_diagnostics(&own("precision.json"));
    assert!(
        d.contains("ts=1700000000000123 dur=1 name=\"epoch ns\""),
        "{d}"
    );
    assert!(d.contains("ts=1712195495519689047 dur=3953"), "{d}");
    assert!(d.contains("ts=1234500 dur=2000 name=\"string ts\""), "{d}");
    assert!(d.contains("ts=1500000 dur=20000 name=\"exponent\""), "{d}");
    assert!(
        d.contains("ts=1124609200224730 dur=1000 name=\"sub-ns\""),
        "{d}"
    );
    assert!(d.contains("ts=-12500 dur=1000"), "{d}");
    assert!(d.contains("diag chrome_sub_ns_rounded count=1"), "{d}");

    let d = dump_with_diagnostics(&own("partial_overlap.json"));
    // B and C overlap A without nesting: they go to overflow lanes, none is clipped or lost
    assert_eq!(d.matches(" slice ").count(), 4, "{d}");
    assert!(d.contains("overflow=1"), "{d}");
    assert!(d.contains("overflow=2"), "{d}");
    assert!(d.contains("diag slice_partial_overlap count=2"), "{d}");

    let d = dump_with_diagnostics(&own("missing_end.json"));
    assert!(d.contains("dur=open name=\"never ends\""), "{d}");
    assert!(d.contains("diag chrome_unmatched_end count=1"), "{d}");
    assert!(d.contains("diag chrome_unmatched_async_end count=1"), "{d}");
    assert!(
        d.contains("diag chrome_flow_end_without_start count=1"),
        "{d}"
    );
    assert!(
        d.contains("diag chrome_flow_start_without_end count=1"),
        "{d}"
    );

    // an f does not close its id (as Perfetto draws it): the graph launch flows to each of its
    // three kernels, a step after the end leaves from the start, and a new s starts anew
    let d = dump_with_diagnostics(&own("flow_fan_out.json"));
    assert_eq!(
        d.matches("flow name=\"ac2g\" cat=\"ac2g\" K0@10000/")
            .count(),
        3,
        "{d}"
    );
    assert!(
        d.contains("K0@40000/enclosing -> K2@60000/enclosing -> K1@70000"),
        "{d}"
    );
    assert!(d.contains("K0@80000/enclosing -> K2@90000"), "{d}");
    assert!(
        d.contains("diag flow_end_after_its_flow_ended count=3"),
        "{d}"
    );
    assert!(!d.contains("chrome_flow_end_without_start"), "{d}");

    let d = dump_with_diagnostics(&own("string_pids.json"));
    assert!(d.contains("label=\"Spans\""), "{d}");
    assert!(d.contains("tid=140234234234567"), "{d}");
    assert!(d.contains("label=\"18446744073709551615\""), "{d}");
    // the string "25738" is the number 25738, as viewers read it: one thread, named
    assert!(d.contains("tid=25738 name=\"python\""), "{d}");
    assert!(!d.contains("label=\"25738\""), "{d}");

    let d = dump_with_diagnostics(&own("unterminated_array.json"));
    assert!(d.contains("diag chrome_unterminated count=1"), "{d}");
    assert_eq!(d.matches(" slice ").count(), 2, "{d}");
    let d = dump_with_diagnostics(&own("torn_event.json"));
    assert!(d.contains("name=\"kept\"") && !d.contains("torn\""), "{d}");
    assert!(d.contains("diag chrome_torn_event count=1"), "{d}");

    let d = dump_with_diagnostics(&own("all_phases.json"));
    for phase_effect in [
        "name=\"outer\" cat=\"c1\" tts=50000 tdur=90000",
        "name=\"inner\" cat=\"c1\" color=\"good\" tts=55000 tdur=10000 stack=[\"main\"@\"app\"; \"work\"@\"app\"; \"leaf\"@\"lib\"]",
        "args={\"b\":1, \"e\":\"end arg\"}",
        "clock origin_unix_ns=1700000000000000000",
        "diag chrome_unknown_phase count=1",
        "diag chrome_linked_ids_dropped count=1",
        "sample ts=115000 weight=1 name=\"sample\" stack=[\"main\"@\"app\"; \"work\"@\"app\"; \"leaf\"@\"lib\"]",
        "sample ts=150500 weight=2 cpu=0 name=\"cycles\"",
    ] {
        assert!(d.contains(phase_effect), "missing {phase_effect:?} in\n{d}");
    }
}

/// Two gzip members, as `cat a.gz b.gz` makes: the whole document must be read.
#[test]
fn multi_member_gzip_reads_every_member() {
    let plain = std::fs::read(own("all_phases.json")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let gz = dir.path().join("two_members.json.gz");
    let mut bytes = Vec::new();
    let (a, b) = plain.split_at(plain.len() / 2);
    for part in [a, b] {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(part).unwrap();
        bytes.extend(e.finish().unwrap());
    }
    std::fs::write(&gz, bytes).unwrap();
    assert_eq!(dump(&gz), dump(&own("all_phases.json")));
}

#[test]
fn bad_inputs_fail_with_a_location_and_leave_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.json");
    let o = out.to_str().unwrap();
    let cases: &[(&str, &[&str])] = &[
        ("empty.json", &["empty"]),
        (
            "bad_not_json.txt",
            &["no format recognised", "tried chrome"],
        ),
        (
            "bad_event_middle.json",
            &["byte", "event #1", "not valid JSON"],
        ),
    ];
    for (name, needles) in cases {
        let p = own(name);
        let err = run_err(&["convert", p.to_str().unwrap(), o]);
        for n in *needles {
            assert!(err.contains(n), "{name}: error should mention {n:?}: {err}");
        }
        assert!(!out.exists(), "{name}: a failed conversion left {o}");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "temp files left"
        );
    }
    // forcing the format still gives a located error
    let err = run_err(&[
        "convert",
        "--from",
        "chrome",
        own("bad_not_json.txt").to_str().unwrap(),
        o,
    ]);
    assert!(err.contains("byte 0"), "{err}");
    // --strict turns input errors (here: an event without ts) into a failure; without it the
    // event is skipped and counted
    let no_ts = dir.path().join("no_ts.json");
    std::fs::write(&no_ts, r#"[{"ph":"X","name":"a","pid":1,"tid":1,"dur":1}]"#).unwrap();
    let err = run_err(&["convert", "--strict", no_ts.to_str().unwrap(), o]);
    assert!(
        err.contains("--strict") && err.contains("chrome_missing_ts"),
        "{err}"
    );
    assert!(!out.exists());
    run_ok(&["convert", no_ts.to_str().unwrap(), o]);
    assert!(out.exists());
}

/// Converts `input` to Chrome JSON (and .json.gz) and checks the dump is unchanged.
fn assert_round_trip(input: &Path, dir: &Path) {
    let before = dump(input);
    for ext in ["json", "json.gz"] {
        let out = dir.join(format!("rt.{ext}"));
        run_ok(&[
            "convert",
            "-f",
            input.to_str().unwrap(),
            out.to_str().unwrap(),
        ]);
        let after = dump(&out);
        if before != after {
            let first = before
                .lines()
                .zip(after.lines())
                .find(|(a, b)| a != b)
                .map(|(a, b)| format!("- {a}\n+ {b}"))
                .unwrap_or_else(|| "(one is a prefix of the other)".into());
            panic!(
                "{} changed in a round trip through .{ext}:\n{first}",
                input.display()
            );
        }
        check_output(&out);
    }
}

#[test]
fn round_trip_own_fixtures() {
    let dir = tempfile::tempdir().unwrap();
    for name in GOOD {
        assert_round_trip(&own(name), dir.path());
    }
    assert_round_trip(
        &root().join("fixtures/demo/gpu_training_step.json"),
        dir.path(),
    );
}

#[test]
fn round_trip_every_real_chrome_trace() {
    let files = corpus_files("chrome");
    let dir = tempfile::tempdir().unwrap();
    for f in &files {
        assert_round_trip(f, dir.path());
    }
    eprintln!("round trip: {} real Chrome traces checked", files.len());
    if corpus().is_some() {
        assert!(
            files.len() >= 18,
            "expected the 18 Chrome fixtures, found {}",
            files.len()
        );
    }
}

#[derive(Deserialize)]
struct OutDoc<'a> {
    #[serde(borrow, rename = "traceEvents")]
    trace_events: Vec<&'a RawValue>,
}

#[derive(Deserialize)]
struct OutEvent<'a> {
    ph: String,
    #[serde(borrow)]
    ts: Option<&'a RawValue>,
    #[serde(borrow)]
    dur: Option<&'a RawValue>,
    pid: Option<serde_json::Value>,
    tid: Option<serde_json::Value>,
}

/// `123.456` µs → ns, checking there are exactly three decimals.
fn exact_micros(raw: &str) -> i128 {
    let (int, frac) = raw
        .split_once('.')
        .unwrap_or_else(|| panic!("ts {raw} has no decimals"));
    assert_eq!(frac.len(), 3, "ts {raw} must have exactly three decimals");
    let neg = int.starts_with('-');
    let v =
        int.trim_start_matches('-').parse::<i128>().unwrap() * 1000 + frac.parse::<i128>().unwrap();
    if neg {
        -v
    } else {
        v
    }
}

/// An independent look at an output: strict JSON (serde_json), the object form, integer
/// pids/tids within u32, `ts`/`dur` with exactly three decimals, and `X` slices nested per thread.
pub(crate) fn check_output(path: &Path) {
    let bytes = std::fs::read(path).unwrap();
    let text = if path.extension().is_some_and(|e| e == "gz") {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut flate2::read::MultiGzDecoder::new(&bytes[..]), &mut s)
            .unwrap();
        s
    } else {
        String::from_utf8(bytes).unwrap()
    };
    let _: serde_json::Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not valid JSON: {e}", path.display()));
    let doc: OutDoc = serde_json::from_str(&text).unwrap();
    let mut per_thread: HashMap<(u64, u64), Vec<(i128, i128)>> = HashMap::new();
    for raw in &doc.trace_events {
        let e: OutEvent = serde_json::from_str(raw.get()).unwrap();
        for id in [&e.pid, &e.tid].into_iter().flatten() {
            let n = id
                .as_u64()
                .unwrap_or_else(|| panic!("non-integer id in {}", raw.get()));
            assert!(n <= u32::MAX as u64, "id beyond u32 in {}", raw.get());
        }
        let ts = e.ts.map(|t| exact_micros(t.get()));
        let dur = e.dur.map(|t| exact_micros(t.get()));
        if e.ph == "X" {
            let key = (
                e.pid.unwrap().as_u64().unwrap(),
                e.tid.unwrap().as_u64().unwrap(),
            );
            per_thread
                .entry(key)
                .or_default()
                .push((ts.unwrap(), ts.unwrap() + dur.unwrap()));
        }
    }
    for (key, mut v) in per_thread {
        v.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        let mut open: Vec<i128> = Vec::new();
        for (s, e) in v {
            while open.last().is_some_and(|&top| top <= s) {
                open.pop();
            }
            if let Some(&top) = open.last() {
                assert!(
                    e <= top,
                    "{}: slices on {key:?} overlap without nesting",
                    path.display()
                );
            }
            open.push(e);
        }
    }
}

#[test]
fn outputs_load_in_speedscope() {
    let dir = tempfile::tempdir().unwrap();
    let mut inputs = vec![
        root().join("fixtures/demo/gpu_training_step.json"),
        own("partial_overlap.json"),
        own("string_pids.json"),
    ];
    inputs.extend(corpus_files("chrome").into_iter().filter(|p| {
        let n = p.file_name().unwrap().to_string_lossy();
        n.contains("kineto-worker")
            || n.contains("speedscope-simple.json")
            || n.contains("traceviewify")
    }));
    let mut checked = 0;
    for (i, input) in inputs.iter().enumerate() {
        let out = dir.path().join(format!("out{i}.json"));
        run_ok(&["convert", input.to_str().unwrap(), out.to_str().unwrap()]);
        match speedscope_loads(&out) {
            Some(ok) => {
                assert!(
                    ok,
                    "speedscope did not load the conversion of {}",
                    input.display()
                );
                checked += 1;
            }
            None => {
                eprintln!(
                    "note: speedscope/chromium not installed; skipped (run scripts/setup.sh)"
                );
                return;
            }
        }
    }
    eprintln!("speedscope: {checked} outputs loaded");
}

#[test]
fn stdin_to_stdout() {
    let input = std::fs::read(own("all_phases.json")).unwrap();
    let mut child = tracex()
        .args(["convert", "-", "-", "--to", "chrome"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("piped.json");
    std::fs::write(&p, &out.stdout).unwrap();
    assert_eq!(dump(&p), dump(&own("all_phases.json")));
}

/// Imports Chrome JSON bytes through the standard chain (sorter, router) into memory.
fn import_bytes(bytes: &[u8]) -> (Defs, Vec<tracex_ir::Event>) {
    let mut defs = Defs::new();
    let mut diag = Diagnostics::default();
    let mut chain = Sorter::new(OverlapRouter::new(MemSink::default()));
    let progress = Progress::new();
    let mut ctx = ImportCtx::new(&mut defs, &mut diag, &mut chain, &progress);
    tracex_chrome::import(bytes, &Default::default(), &mut ctx).unwrap();
    chain.end(&mut defs, &mut diag).unwrap();
    let events = chain.into_inner().into_inner().events;
    (defs, events)
}

fn export_trace(mut t: tracex_ir::mem::Trace, path: &Path) -> String {
    // what the exporter sees: the trace in order and nested, as the CLI chains it
    let mut routed = Sorter::new(OverlapRouter::new(MemSink::default()));
    t.replay(&mut routed).unwrap();
    let events = routed.into_inner().into_inner().events;
    let opts = DumpOptions { diagnostics: None };
    let expected = dump_with(&t.defs, &events, &opts);
    let mut exp = tracex_chrome::Exporter::create(
        &OutputTarget::Path(path.to_path_buf()),
        &Default::default(),
    )
    .unwrap();
    for e in events {
        exp.event(&t.defs, &mut t.diag, e).unwrap();
    }
    exp.finish(&t.defs, &mut t.diag).unwrap();
    expected
}

/// One random slice: (thread, start, duration) in ns, small ranges so equal timestamps are common.
fn slices() -> impl Strategy<Value = Vec<(u8, i64, i64)>> {
    prop::collection::vec((0u8..3, 0i64..40, 0i64..15), 0..40)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Random slices (many at equal timestamps, some overlapping) survive export and re-import.
    #[test]
    fn random_traces_round_trip(spec in slices(), nested in prop::collection::vec((0u8..3, 0i64..5), 0..10)) {
        let mut b = TraceBuilder::new();
        let p = b.process(7, "proc");
        let tracks: Vec<_> = (0..3).map(|i| b.thread(p, 100 + i, &format!("t{i}"))).collect();
        for (i, (t, ts, dur)) in spec.iter().enumerate() {
            b.slice(tracks[*t as usize], ts * 1000, dur * 1000 + (i as i64 % 3), &format!("s{}", i % 4));
        }
        // explicitly nested stacks with equal starts: parent, child and grandchild at one ts
        for (t, ts) in nested {
            let tr = tracks[t as usize];
            b.slice(tr, ts * 1_000_000, 300, "parent");
            b.slice(tr, ts * 1_000_000, 200, "child");
            b.slice(tr, ts * 1_000_000, 0, "grandchild");
        }
        let c = b.counter(p, "mem", "bytes");
        b.count(c, 5, tracex_ir::Num::Int(3));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.json");
        let expected = export_trace(b.finish(), &path);
        let (defs, events) = import_bytes(&std::fs::read(&path).unwrap());
        let actual = dump_with(&defs, &events, &DumpOptions { diagnostics: None });
        prop_assert_eq!(expected, actual);
    }
}

/// Every event of every Chrome trace (own fixtures and the corpus, gzip or not): where the
/// importer's fast path reads an event, serde reads the same fields; where serde refuses one,
/// so does the importer. Where the tokenizer found an event's end by the fast path's walk,
/// that walk read the fields serde reads.
#[test]
fn fast_path_reads_every_real_event_as_serde_does() {
    use tracex_chrome::import::fast::parse_event as parse_event_fast;
    use tracex_chrome::import::fast::Spans;
    use tracex_chrome::import::parse_event;
    use tracex_chrome::import::raw::parse_event_serde;
    use tracex_chrome::import::tokenizer::{Item, Tokenizer};
    let mut files: Vec<PathBuf> = std::fs::read_dir(own(""))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains(".json"))
        .collect();
    files.extend(corpus_files("chrome"));
    let (mut events, mut fast, mut walked) = (0u64, 0u64, 0u64);
    for f in &files {
        let raw = std::fs::read(f).unwrap();
        let bytes = if raw.starts_with(&[0x1f, 0x8b]) {
            let mut out = Vec::new();
            std::io::Read::read_to_end(&mut flate2::read::MultiGzDecoder::new(&raw[..]), &mut out)
                .unwrap();
            out
        } else {
            raw
        };
        let mut tok = Tokenizer::new(&bytes[..]);
        let mut spans = Spans::default();
        while let Ok(Some(item)) = tok.next_item(&mut spans) {
            let Item::Event {
                bytes,
                index,
                layout,
                ..
            } = item
            else {
                continue;
            };
            events += 1;
            let reference = parse_event_serde(bytes);
            // (the importer checks the bytes as UTF-8 before it reads the layout's spans)
            if let (Some(layout), Ok(text)) = (layout, std::str::from_utf8(bytes)) {
                walked += 1;
                let e = layout.event(text, &spans).expect("on the event");
                assert_eq!(Ok(&e), reference.as_ref().map_err(|_| ()), "{f:?} #{index}");
            }
            spans.clear();
            if let Some(e) = parse_event_fast(bytes) {
                fast += 1;
                assert_eq!(Ok(&e), reference.as_ref().map_err(|_| ()), "{f:?} #{index}");
            }
            assert_eq!(
                parse_event(bytes).ok(),
                reference.ok(),
                "{f:?} event #{index}"
            );
        }
    }
    eprintln!(
        "fast path: {fast} of {events} events in {} Chrome traces ({walked} found by its walk), \
         each equal to serde's reading",
        files.len()
    );
    assert!(fast > 0 && walked > 0);
}
