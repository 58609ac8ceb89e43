//! What tracex's Chrome output must be for the viewers and analysers to read it exactly (issue
//! 9): each test states one rule on a small input, independently of the viewers themselves
//! (`viewers.rs` runs those on the real fixtures).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::common::*;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// Converts `input` to Chrome JSON with `extra` options and parses the output.
fn convert(input: &Path, extra: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.json");
    let mut args = vec!["convert", "--force"];
    args.extend_from_slice(extra);
    args.push(input.to_str().unwrap());
    args.push(out.to_str().unwrap());
    run_ok(&args);
    serde_json::from_slice(&std::fs::read(&out).unwrap()).expect("output is JSON")
}

fn events(v: &Value) -> &Vec<Value> {
    v["traceEvents"].as_array().expect("traceEvents")
}

fn ph<'a>(v: &'a Value, ph: &str) -> Vec<&'a Value> {
    events(v).iter().filter(|e| e["ph"] == ph).collect()
}

/// Metadata names catapult and Perfetto know (tracex must not add others).
const KNOWN_METADATA: &[&str] = &[
    "process_name",
    "thread_name",
    "process_sort_index",
    "thread_sort_index",
    "process_labels",
];

#[test]
fn identity_rides_in_name_records_and_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let input = root().join("fixtures/chrome/string_pids.json");
    let out = convert(&input, &[]);
    for m in ph(&out, "M") {
        let name = m["name"].as_str().unwrap();
        assert!(KNOWN_METADATA.contains(&name), "unknown metadata {m}");
    }
    // the identity is in the args of the name records
    let with_identity = ph(&out, "M")
        .into_iter()
        .filter(|m| m["args"].get("tracex_identity").is_some())
        .count();
    assert!(with_identity > 0);
    // and still makes the round trip exact
    let rt = dir.path().join("rt.json");
    run_ok(&["convert", input.to_str().unwrap(), rt.to_str().unwrap()]);
    assert_eq!(dump(&input), dump(&rt));
}

#[test]
fn synthetic_ids_stay_small() {
    let input = root().join("fixtures/chrome/string_pids.json");
    let out = convert(&input, &[]);
    for e in events(&out) {
        for key in ["pid", "tid"] {
            if let Some(n) = e.get(key).and_then(Value::as_i64) {
                assert!(n < 1_000_000_000, "{key} {n} in {e}");
            }
        }
    }
}

#[test]
fn a_numeric_string_tid_is_that_number() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(
        dir.path(),
        "kineto_tids.json",
        r#"{"traceEvents":[
{"ph":"X","name":"op","pid":1,"tid":25738,"ts":0,"dur":10},
{"ph":"X","name":"launch","pid":1,"tid":"25738","ts":2,"dur":2},
{"ph":"s","name":"ac2g","cat":"ac2g","id":7,"pid":1,"tid":"25738","ts":3},
{"ph":"X","name":"kernel","pid":0,"tid":"stream 7","ts":20,"dur":5},
{"ph":"f","name":"ac2g","cat":"ac2g","id":7,"bp":"e","pid":0,"tid":"stream 7","ts":20},
{"ph":"X","name":"lead","pid":1,"tid":"007","ts":1,"dur":1}
]}"#,
    );
    let d = dump(&input);
    // one thread 25738 (the string and the number), "007" stays a label of its own
    assert_eq!(d.matches("tid=25738").count(), 1, "{d}");
    assert!(d.contains("label=\"007\""), "{d}");
    let out = convert(&input, &[]);
    let threads: std::collections::BTreeSet<(i64, i64)> = ph(&out, "X")
        .iter()
        .filter(|e| e["pid"] == 1)
        .map(|e| (e["pid"].as_i64().unwrap(), e["tid"].as_i64().unwrap()))
        .collect();
    assert_eq!(threads.len(), 2, "{threads:?}");
}

#[test]
fn every_flow_point_has_a_name_a_category_and_its_source_id() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(
        dir.path(),
        "flows.json",
        r#"{"traceEvents":[
{"ph":"X","name":"a","pid":1,"tid":1,"ts":0,"dur":10,"bind_id":"0x2a","flow_out":true},
{"ph":"X","name":"b","pid":1,"tid":2,"ts":20,"dur":10,"bind_id":"0x2a","flow_in":true},
{"ph":"X","name":"launch","pid":1,"tid":1,"ts":30,"dur":5},
{"ph":"s","name":"ac2g","cat":"ac2g","id":4242,"pid":1,"tid":1,"ts":31},
{"ph":"X","name":"kernel","pid":2,"tid":7,"ts":40,"dur":5},
{"ph":"f","name":"ac2g","cat":"ac2g","id":4242,"bp":"e","pid":2,"tid":7,"ts":40}
]}"#,
    );
    let out = convert(&input, &[]);
    let points: Vec<&Value> = events(&out)
        .iter()
        .filter(|e| matches!(e["ph"].as_str(), Some("s" | "t" | "f")))
        .collect();
    assert_eq!(points.len(), 4);
    for p in &points {
        assert!(p["name"].is_string() && p["cat"].is_string(), "{p}");
    }
    // Kineto's flow id (its correlation id) is kept; the v2 binding keeps its hex id's number
    let ids: std::collections::BTreeSet<u64> =
        points.iter().map(|p| p["id"].as_u64().unwrap()).collect();
    assert_eq!(ids, [0x2a, 4242].into_iter().collect());
    // the default name and category read back as none: the round trip is exact
    let rt = dir.path().join("rt.json");
    run_ok(&["convert", input.to_str().unwrap(), rt.to_str().unwrap()]);
    assert_eq!(dump(&input), dump(&rt));
}

/// Catapult holds ids as doubles (exact to 2^53) and Perfetto's JSON parser rejects an integer
/// `id` beyond `i64`: rocprofv3's async ids are such. An integer id a double does not hold is
/// written as a string the viewers read (`0x` hex where it is a `u64`); smaller ones stay numbers.
#[test]
fn async_and_flow_ids_beyond_2_53_are_written_as_strings() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(
        dir.path(),
        "ids.json",
        r#"{"traceEvents":[
{"ph":"b","name":"copy","cat":"memory_copy","id":10771294206341709049,"pid":1,"tid":1,"ts":0},
{"ph":"e","name":"copy","cat":"memory_copy","id":10771294206341709049,"pid":1,"tid":1,"ts":5},
{"ph":"b","name":"copy","cat":"memory_copy","id":10771294206341709049,"pid":1,"tid":1,"ts":7},
{"ph":"e","name":"copy","cat":"memory_copy","id":10771294206341709049,"pid":1,"tid":1,"ts":9},
{"ph":"b","name":"g","cat":"c","id2":{"global":18446744073709551615},"pid":1,"tid":1,"ts":1},
{"ph":"e","name":"g","cat":"c","id2":{"global":18446744073709551615},"pid":1,"tid":1,"ts":2},
{"ph":"b","name":"neg","cat":"c","id":-9007199254740993,"pid":1,"tid":1,"ts":1},
{"ph":"e","name":"neg","cat":"c","id":-9007199254740993,"pid":1,"tid":1,"ts":3},
{"ph":"b","name":"small","cat":"c","id":9007199254740991,"pid":1,"tid":1,"ts":1},
{"ph":"e","name":"small","cat":"c","id":9007199254740991,"pid":1,"tid":1,"ts":4},
{"ph":"X","name":"launch","pid":1,"tid":2,"ts":0,"dur":5},
{"ph":"s","name":"f","cat":"f","id":9007199254740993,"pid":1,"tid":2,"ts":1},
{"ph":"X","name":"kernel","pid":1,"tid":3,"ts":6,"dur":5},
{"ph":"f","name":"f","cat":"f","id":9007199254740993,"bp":"e","pid":1,"tid":3,"ts":7}
]}"#,
    );
    let out = convert(&input, &[]);
    let id_of = |name: &str, ph_: &str| -> Vec<Value> {
        ph(&out, ph_)
            .iter()
            .filter(|e| e["name"] == name)
            .map(|e| {
                e.get("id")
                    .or_else(|| e["id2"].get("global"))
                    .cloned()
                    .expect("an id")
            })
            .collect()
    };
    let copies = id_of("copy", "b");
    assert_eq!(copies.len(), 2);
    assert!(
        copies.iter().all(|i| i == "0x957b53030c387cf9"),
        "{copies:?}"
    );
    assert_eq!(id_of("copy", "e"), copies);
    assert_eq!(id_of("g", "b"), vec![Value::from("0xffffffffffffffff")]);
    // Perfetto reads a negative `i64` exactly
    assert_eq!(id_of("neg", "b"), vec![Value::from(-9007199254740993i64)]);
    assert_eq!(id_of("small", "b"), vec![Value::from(9007199254740991u64)]);
    assert_eq!(id_of("f", "s"), vec![Value::from("0x20000000000001")]);
    assert_eq!(id_of("f", "f"), vec![Value::from("0x20000000000001")]);
    // read back, the output gives the input's IR: the strings are read as the integers
    let rt = dir.path().join("rt.json");
    std::fs::write(&rt, serde_json::to_vec(&out).unwrap()).unwrap();
    assert_eq!(dump(&input), dump(&rt));
}

/// Trace processor counts a name record with `"name":""` as a parser failure (the threads of
/// Chrome's own `.pftrace` have such names): an empty name rides in the identity record
/// instead, and is read back from there.
#[test]
fn empty_names_are_not_written_as_args_name_and_come_back() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(
        dir.path(),
        "empty-names.json",
        r#"{"traceEvents":[
{"ph":"M","name":"process_name","pid":1,"args":{"name":""}},
{"ph":"M","name":"thread_name","pid":1,"tid":1,"args":{"name":""}},
{"ph":"M","name":"thread_name","pid":1,"tid":"worker","args":{"name":""}},
{"ph":"M","name":"thread_name","pid":1,"tid":3,"args":{"name":"main"}},
{"ph":"X","name":"a","pid":1,"tid":1,"ts":0,"dur":5},
{"ph":"X","name":"b","pid":1,"tid":"worker","ts":1,"dur":2},
{"ph":"X","name":"c","pid":1,"tid":3,"ts":2,"dur":2}
]}"#,
    );
    let out = convert(&input, &[]);
    let names = ph(&out, "M");
    let named: Vec<&Value> = names
        .into_iter()
        .filter(|e| e["name"] == "thread_name" || e["name"] == "process_name")
        .collect();
    // the two threads, the process, and "main"
    assert_eq!(named.len(), 4, "{named:?}");
    for e in &named {
        assert_ne!(e["args"].get("name"), Some(&Value::from("")), "{e}");
    }
    let empty: Vec<&Value> = named
        .iter()
        .filter(|e| e["args"]["tracex_identity"]["name"] == "")
        .copied()
        .collect();
    assert_eq!(empty.len(), 3, "{named:?}");
    // the string tid's identity keeps its label beside the empty name
    assert!(
        empty
            .iter()
            .any(|e| e["args"]["tracex_identity"]["label"] == "worker"),
        "{empty:?}"
    );
    let rt = dir.path().join("rt.json");
    std::fs::write(&rt, serde_json::to_vec(&out).unwrap()).unwrap();
    let back = dump(&rt);
    assert_eq!(dump(&input), back);
    assert_eq!(back.matches("name=\"\"").count(), 3, "{back}");
}

/// Catapult drops nestable async events (`b`, `e`, `n`) that have no `cat`: tracex writes an
/// empty one for slices and instants without a category, and reads it back as none.
#[test]
fn nestable_async_events_always_have_a_category() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(
        dir.path(),
        "async-no-cat.json",
        r#"{"traceEvents":[
{"ph":"b","name":"load","id":"0x1","pid":1,"tid":1,"ts":0},
{"ph":"n","name":"step","id":"0x1","pid":1,"tid":1,"ts":2},
{"ph":"e","name":"load","id":"0x1","pid":1,"tid":1,"ts":5},
{"ph":"b","name":"io","cat":"disk","id":"0x2","pid":1,"tid":1,"ts":1},
{"ph":"e","name":"io","cat":"disk","id":"0x2","pid":1,"tid":1,"ts":3}
]}"#,
    );
    let out = convert(&input, &[]);
    let nestable: Vec<&Value> = ["b", "e", "n"].iter().flat_map(|p| ph(&out, p)).collect();
    assert_eq!(nestable.len(), 5, "{out}");
    for e in &nestable {
        let want = if e["name"] == "io" { "disk" } else { "" };
        assert_eq!(e["cat"], want, "{e}");
    }
    let rt = dir.path().join("rt.json");
    std::fs::write(&rt, serde_json::to_vec(&out).unwrap()).unwrap();
    let back = dump(&rt);
    assert_eq!(dump(&input), back);
    assert!(!back.contains("cat=\"\""), "{back}");
}

/// Chrome flow events bind only to a thread's slices: a flow point on an async track is
/// written on the process's main thread and counted, not passed over in silence.
#[test]
fn a_flow_point_on_an_async_track_is_counted() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(
        dir.path(),
        "async-flow.json",
        r#"{"traceEvents":[
{"ph":"b","name":"copy","cat":"c","id":"0x1","pid":1,"tid":1,"ts":0,"bind_id":"0x7","flow_out":true},
{"ph":"e","name":"copy","cat":"c","id":"0x1","pid":1,"tid":1,"ts":5},
{"ph":"X","name":"kernel","pid":1,"tid":2,"ts":6,"dur":5,"bind_id":"0x7","flow_in":true},
{"ph":"X","name":"launch","pid":1,"tid":2,"ts":20,"dur":5,"bind_id":"0x8","flow_out":true},
{"ph":"X","name":"kernel","pid":1,"tid":3,"ts":30,"dur":5,"bind_id":"0x8","flow_in":true}
]}"#,
    );
    let out = dir.path().join("out.json");
    let run = tracex_loud()
        .args(["convert", input.to_str().unwrap(), out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(run.status.success());
    let stderr = String::from_utf8_lossy(&run.stderr);
    // the start on the async slice, not the end on a thread, nor the thread-to-thread flow
    assert!(
        stderr.contains("chrome_export_flow_off_thread ×1 "),
        "{stderr}"
    );
    let v: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(ph(&v, "s").len(), 2);
    assert_eq!(ph(&v, "f").len(), 2);
}

#[test]
fn merged_inputs_with_the_same_flow_ids_are_renumbered_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let text = r#"{"traceEvents":[
{"ph":"X","name":"launch","pid":1,"tid":1,"ts":30,"dur":5},
{"ph":"s","name":"ac2g","cat":"ac2g","id":5,"pid":1,"tid":1,"ts":31},
{"ph":"X","name":"kernel","pid":2,"tid":7,"ts":40,"dur":5},
{"ph":"f","name":"ac2g","cat":"ac2g","id":5,"bp":"e","pid":2,"tid":7,"ts":40}
]}"#;
    let a = write(dir.path(), "rank0.json", text);
    let b = write(dir.path(), "rank1.json", text);
    let out = dir.path().join("merged.json");
    let r = tracex_loud()
        .args([
            "convert",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(r.status.success());
    assert!(String::from_utf8_lossy(&r.stderr).contains("flow_id_renumbered"));
    let v: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let starts: Vec<u64> = ph(&v, "s")
        .iter()
        .map(|p| p["id"].as_u64().unwrap())
        .collect();
    assert_eq!(starts.len(), 2);
    assert!(starts.contains(&5) && starts[0] != starts[1], "{starts:?}");
}

#[test]
fn an_end_written_before_its_start_at_the_same_time_pairs() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(
        dir.path(),
        "f_first.json",
        r#"{"traceEvents":[
{"ph":"X","name":"launch","pid":1,"tid":1,"ts":10,"dur":5},
{"ph":"X","name":"kernel","pid":2,"tid":7,"ts":10,"dur":5},
{"ph":"f","name":"ac2g","cat":"ac2g","id":9,"bp":"e","pid":2,"tid":7,"ts":10},
{"ph":"s","name":"ac2g","cat":"ac2g","id":9,"pid":1,"tid":1,"ts":10}
]}"#,
    );
    let d = dump_with_diagnostics(&input);
    assert_eq!(
        d.matches("\nflow ").count() + d.starts_with("flow ") as usize,
        1,
        "{d}"
    );
    assert!(
        d.contains("diag flow_end_first_at_same_time count=1"),
        "{d}"
    );
    assert!(!d.contains("chrome_flow_end_without_start"), "{d}");
}

#[test]
fn samples_have_a_declared_thread_and_a_frame() {
    let dir = tempfile::tempdir().unwrap();
    // samples on a thread that has no other event, one of them without a stack
    let input = write(
        dir.path(),
        "samples.json",
        r#"{"traceEvents":[{"ph":"X","name":"x","pid":1,"tid":1,"ts":0,"dur":1}],
"stackFrames":{"1":{"name":"main"},"2":{"name":"work","parent":"1"}},
"samples":[{"pid":1,"tid":42,"ts":5,"sf":"2","weight":1},{"pid":1,"tid":42,"ts":6,"weight":1}]}"#,
    );
    let out = convert(&input, &[]);
    let declared = ph(&out, "M")
        .iter()
        .any(|m| m["name"] == "thread_name" && m["pid"] == 1 && m["tid"] == 42);
    assert!(declared, "the sampled thread is not declared");
    let frames = out["stackFrames"].as_object().unwrap();
    for s in out["samples"].as_array().unwrap() {
        let sf = s["sf"].as_str().expect("every sample has a frame");
        assert!(frames.contains_key(sf), "{s}");
    }
    let rt = dir.path().join("rt.json");
    run_ok(&["convert", input.to_str().unwrap(), rt.to_str().unwrap()]);
    assert_eq!(dump(&input), dump(&rt));
}

/// Reads `b`/`e` in a stable sort by time and matches each `e` with the innermost open `b` of
/// its id, as catapult does; returns the ends that closed a slice of another name.
fn misnested_async_ends(v: &Value) -> usize {
    let mut evs: Vec<&Value> = events(v)
        .iter()
        .filter(|e| matches!(e["ph"].as_str(), Some("b" | "e")))
        .collect();
    evs.sort_by(|a, b| {
        a["ts"]
            .as_f64()
            .unwrap()
            .total_cmp(&b["ts"].as_f64().unwrap())
    });
    let mut open: std::collections::HashMap<String, Vec<String>> = Default::default();
    let mut bad = 0;
    for e in evs {
        let key = format!("{}{}{}", e["cat"], e["id"], e["id2"]);
        let name = e["name"].as_str().unwrap().to_string();
        if e["ph"] == "b" {
            open.entry(key).or_default().push(name);
        } else if open.get_mut(&key).and_then(|s| s.pop()) != Some(name) {
            bad += 1;
        }
    }
    bad
}

#[test]
fn nested_async_slices_at_equal_times_end_innermost_first() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(
        dir.path(),
        "async.json",
        r#"{"traceEvents":[
{"ph":"b","name":"outer","cat":"c","id":1,"pid":1,"tid":1,"ts":0},
{"ph":"b","name":"inner","cat":"c","id":1,"pid":1,"tid":1,"ts":0},
{"ph":"b","name":"leaf","cat":"c","id":1,"pid":1,"tid":1,"ts":0},
{"ph":"e","name":"leaf","cat":"c","id":1,"pid":1,"tid":1,"ts":10},
{"ph":"e","name":"inner","cat":"c","id":1,"pid":1,"tid":1,"ts":10},
{"ph":"e","name":"outer","cat":"c","id":1,"pid":1,"tid":1,"ts":10},
{"ph":"b","name":"next","cat":"c","id":1,"pid":1,"tid":1,"ts":10},
{"ph":"e","name":"next","cat":"c","id":1,"pid":1,"tid":1,"ts":12}
]}"#,
    );
    let out = convert(&input, &[]);
    assert_eq!(misnested_async_ends(&out), 0, "{out}");
}

#[test]
fn an_async_step_at_the_end_of_its_slice_stays_inside_it() {
    // Fuchsia writes the last `n` of an async slice at the time of its `e`, before it; viewers
    // nest by file order at equal times, so after the `e` it would be a slice of its own
    let dir = tempfile::tempdir().unwrap();
    let input = write(
        dir.path(),
        "steps.json",
        r#"{"traceEvents":[
{"ph":"b","name":"frame","cat":"gfx","id":7,"pid":1,"tid":1,"ts":0},
{"ph":"n","name":"frame","cat":"gfx","id":7,"pid":1,"tid":1,"ts":4},
{"ph":"n","name":"frame","cat":"gfx","id":7,"pid":1,"tid":1,"ts":10},
{"ph":"e","name":"frame","cat":"gfx","id":7,"pid":1,"tid":1,"ts":10},
{"ph":"b","name":"next","cat":"gfx","id":7,"pid":1,"tid":1,"ts":11},
{"ph":"e","name":"next","cat":"gfx","id":7,"pid":1,"tid":1,"ts":12}
]}"#,
    );
    let out = convert(&input, &[]);
    let phases: String = events(&out)
        .iter()
        .filter_map(|e| e["ph"].as_str().filter(|p| "bne".contains(p)))
        .collect();
    assert_eq!(phases, "bnnebe", "{out}");
}

#[test]
fn negative_times_are_shifted_and_shifted_back() {
    let dir = tempfile::tempdir().unwrap();
    for (name, base) in [("neg", "-5.250"), ("neg_big", "-1712195495.047")] {
        let input = write(
            dir.path(),
            &format!("{name}.json"),
            &format!(
                r#"{{"traceEvents":[
{{"ph":"X","name":"a","pid":1,"tid":1,"ts":{base},"dur":10}},
{{"ph":"i","name":"m","pid":1,"tid":1,"ts":{base},"s":"t"}}]}}"#
            ),
        );
        let out = convert(&input, &[]);
        for e in events(&out).iter().filter(|e| e.get("ts").is_some()) {
            let ts = e["ts"].as_f64().unwrap();
            assert!((0.0..1.0).contains(&ts), "{name}: ts {ts} in {e}");
            // shifted by whole microseconds: the nanoseconds stay what they were
            let ns = (ts * 1000.0).round() as i64;
            assert_eq!(ns, if name == "neg" { 750 } else { 953 }, "{name}");
        }
        let rt = dir.path().join(format!("{name}.rt.json"));
        run_ok(&["convert", input.to_str().unwrap(), rt.to_str().unwrap()]);
        assert_eq!(dump(&input), dump(&rt), "{name}");
    }
}

/// CUPTI times are Unix ns: written as µs they would need 19 digits, more than the doubles of
/// Perfetto and HTA keep, so back-to-back kernels would round onto each other. They count from
/// the whole second of the first event instead, which `baseTimeNanoseconds` gives (as Kineto
/// writes it), every nanosecond is exact in a double, and the round trip is exact.
#[test]
fn unix_times_with_a_clock_count_from_a_whole_second() {
    let dir = tempfile::tempdir().unwrap();
    let input = root().join("fixtures/cupti/app_gpu.txt");
    let out = convert(&input, &[]);
    let base = out["baseTimeNanoseconds"].as_i64().expect("a base time");
    assert_eq!(
        base, 1_761_700_000_000_000_000,
        "the whole second of the first event"
    );
    let timed: Vec<&Value> = events(&out)
        .iter()
        .filter(|e| e.get("ts").is_some())
        .collect();
    assert!(timed.len() > 10);
    for e in timed {
        let ts = e["ts"].as_f64().unwrap();
        assert!((0.0..10e6).contains(&ts), "ts {ts} in {e}");
    }
    // the first runtime call starts 400 µs after the base, to the nanosecond
    let set_device = events(&out)
        .iter()
        .find(|e| e["name"] == "cudaSetDevice_v3020")
        .unwrap();
    assert_eq!(set_device["ts"].as_f64().unwrap(), 400.0);
    let rt = dir.path().join("rt.json");
    run_ok(&["convert", input.to_str().unwrap(), rt.to_str().unwrap()]);
    assert_eq!(dump(&input), dump(&rt));
}

#[test]
fn an_object_system_trace_is_kept_where_perfetto_ignores_it() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(
        dir.path(),
        "fuchsia.json",
        r#"{"traceEvents":[{"ph":"X","name":"a","pid":1,"tid":1,"ts":0,"dur":1}],
"systemTraceEvents":{"type":"fuchsia","events":[{"ph":"p","pid":1,"name":"app"}]}}"#,
    );
    let out = convert(&input, &[]);
    assert!(out.get("systemTraceEvents").is_none_or(Value::is_string));
    assert!(out["tracexSystemTraceEvents"].is_object());
    let rt = dir.path().join("rt.json");
    run_ok(&["convert", input.to_str().unwrap(), rt.to_str().unwrap()]);
    assert_eq!(dump(&input), dump(&rt));
    // the string form stays where it is
    let text = write(
        dir.path(),
        "ftrace.json",
        r##"{"traceEvents":[],"systemTraceEvents":"# tracer: nop\n"}"##,
    );
    assert!(convert(&text, &[])["systemTraceEvents"].is_string());
}

#[test]
fn a_closed_stdout_ends_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("[");
    for i in 0..50_000 {
        text.push_str(&format!(
            "{{\"ph\":\"X\",\"name\":\"slice {i}\",\"pid\":1,\"tid\":1,\"ts\":{i},\"dur\":1}},"
        ));
    }
    text.push_str("{}]");
    let input = write(dir.path(), "big.json", &text);
    let bin = std::env::var_os("TRACEX_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_tracex")));
    let mut child = Command::new(bin)
        .args(["convert", "--to", "chrome", input.to_str().unwrap(), "-"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut head = [0u8; 100];
    child.stdout.take().unwrap().read_exact(&mut head).unwrap();
    // the reader is gone (as `| head -c 100` leaves it)
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "exit {:?}: {err}", out.status);
    assert!(
        !err.contains("Broken pipe") && !err.contains("nothing was written"),
        "{err}"
    );
}

#[test]
fn kineto_names_for_cupti_gpu_work() {
    let input = root().join("fixtures/cupti/app_gpu.json");
    let out = convert(&input, &["--kineto"]);
    let x = ph(&out, "X");
    let launches: Vec<&&Value> = x
        .iter()
        .filter(|e| e["name"].as_str().unwrap().contains("cudaLaunchKernel"))
        .collect();
    let kernels: Vec<&&Value> = x
        .iter()
        .filter(|e| {
            matches!(
                e["cat"].as_str(),
                Some("kernel" | "gpu_memcpy" | "gpu_memset")
            )
        })
        .collect();
    assert!(!launches.is_empty() && !kernels.is_empty());
    for l in &launches {
        assert_eq!(l["cat"], "cuda_runtime", "{l}");
        assert!(l["args"]["correlation"].is_u64(), "{l}");
    }
    for k in &kernels {
        assert!(k["args"]["correlation"].is_u64(), "{k}");
        assert!(
            k["args"]["stream"].is_u64() && k["args"]["device"].is_u64(),
            "{k}"
        );
    }
    // ac2g flows whose id is the correlation id, ending on the kernel's pid and tid, as
    // TraceLens and HTA join them
    let ends = ph(&out, "f");
    assert!(!ends.is_empty());
    for f in ends {
        assert_eq!(
            (f["cat"].as_str(), f["name"].as_str()),
            (Some("ac2g"), Some("ac2g"))
        );
        let k = kernels
            .iter()
            .find(|k| k["args"]["correlation"] == f["id"])
            .unwrap_or_else(|| panic!("no kernel with the flow's id: {f}"));
        assert_eq!((&f["pid"], &f["tid"]), (&k["pid"], &k["tid"]));
    }
}

/// Chrome JSON and Perfetto exporters run on a thread of their own, fed the definitions as
/// they change (`ir/src/threaded.rs`): every real trace must give the bytes it gives with the
/// exporter on the importing thread (`TRACEX_EXPORT_THREAD=0`), including traces that name
/// processes and threads, intern strings and define stacks between events.
#[test]
fn the_export_thread_writes_what_the_importing_thread_writes() {
    let dir = tempfile::tempdir().unwrap();
    let mut inputs = Vec::new();
    for sub in ["chrome", "nsys", "perfetto", "otf2", "cupti"] {
        inputs.extend(corpus_files(sub));
    }
    inputs.retain(|p| p.is_file() && !p.to_string_lossy().ends_with(".md"));
    let mut compared = 0;
    for input in &inputs {
        for ext in ["json", "pftrace"] {
            let out = |thread: bool| {
                let path = dir.path().join(format!("out-{thread}.{ext}"));
                let o = tracex()
                    .env("TRACEX_EXPORT_THREAD", if thread { "1" } else { "0" })
                    .args(["convert", "-f"])
                    .arg(input)
                    .arg(&path)
                    .output()
                    .unwrap();
                o.status.success().then(|| std::fs::read(&path).unwrap())
            };
            let (threaded, here) = (out(true), out(false));
            assert!(
                threaded == here,
                "{} -> {ext}: the export thread wrote something else",
                input.display()
            );
            compared += usize::from(threaded.is_some());
        }
    }
    eprintln!("export thread: {compared} outputs byte-identical to the importing thread's");
    assert!(inputs.is_empty() || compared > 40);
}
