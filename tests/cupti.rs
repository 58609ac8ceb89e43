//! CUPTI inputs and the CPU/GPU flame-graph merge: sniffing (CUPTI JSON is Chrome JSON too),
//! goldens, text and JSON giving the same trace, and the merge against the reference's own
//! algorithm restated below.
//!
//! The reference outputs in the corpus (`merged_trace.folded`, `pytorch.folded`, ...) were made
//! from CPU stacks that were never published (see the corpus PROVENANCE.md), so they cannot be
//! reproduced: parity is checked against [`reference_merge`], a line-by-line restatement of
//! `merge_gpu_cpu_trace.py`, on the project's fixtures and on the corpus's CUPTI JSON with CPU
//! stacks made here from its launches. (The corpus's merged outputs are still read, round-tripped
//! and rendered by the folded tests.)

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use tracex_ir::mem::MemSink;
use tracex_ir::nest::OverlapRouter;
use tracex_ir::order::Sorter;
use tracex_ir::{Defs, Diagnostics, Event, FlowRole, ImportCtx, Progress, Stage};

use crate::common::*;
use crate::folded::{check_flamegraph, parse_folded};

fn own(name: &str) -> PathBuf {
    root().join("fixtures/cupti").join(name)
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// A corpus CUPTI file by the end of its name, if the corpus is there.
fn corpus_cupti(suffix: &str) -> Option<PathBuf> {
    corpus_files("cupti")
        .into_iter()
        .find(|p| p.to_string_lossy().ends_with(suffix))
}

const TOLERANCE_NS: i64 = 10_000_000;

/// A launch as the reference keeps it.
struct Launch {
    corr: i64,
    start: i64,
    pid: i64,
}

/// A line of the uprobe profiler's extended folded text as the scripts split it
/// (`line.strip().split(None, 5)`): five fields and the stack, or `None` where they skip it.
fn cpu_fields(line: &str) -> Option<([&str; 5], &str)> {
    let mut rest = line.trim();
    let mut fields = [""; 5];
    for f in &mut fields {
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        *f = &rest[..end];
        rest = rest[end..].trim_start();
    }
    (!rest.is_empty() && fields.iter().all(|f| !f.is_empty())).then_some((fields, rest))
}

/// `merge_gpu_cpu_trace.py` restated: CPU lines split into five fields and the stack; frames
/// trimmed, empty ones and `_start`, `__libc_start_main`, `<no-symbol>` dropped, the first
/// `cudaLaunchKernel`/`__device_stub__` frame kept as `cudaLaunchKernel` and later ones dropped;
/// `CUDA_Runtime` events whose name has `LaunchKernel` are launches and `GPU_Kernel` events are
/// kernels (ts, dur, correlationId > 0; µs floats times 1000, truncated); each stack goes to the
/// launch with the smallest |Δt| below the tolerance, scanning launches in file order (the first
/// wins a tie), then to the first kernel with its correlation id. `per_process` keeps the scan
/// to the stack's pid, as tracex does. Returns stack → count.
fn reference_merge(cpu: &str, gpu_events: &[Value], per_process: bool) -> BTreeMap<String, i64> {
    let mut launches: Vec<Launch> = Vec::new();
    let mut kernels: Vec<(i64, String)> = Vec::new();
    for e in gpu_events {
        let name = e["name"].as_str().unwrap_or("");
        let cat = e["cat"].as_str().unwrap_or("");
        let corr = e["args"]["correlationId"].as_i64().unwrap_or(0);
        let ts = e["ts"].as_f64().unwrap_or(0.0);
        let dur = e["dur"].as_f64().unwrap_or(0.0);
        if !(ts > 0.0 && dur > 0.0 && corr > 0) {
            continue;
        }
        if cat == "CUDA_Runtime" && name.contains("LaunchKernel") {
            let l = Launch {
                corr,
                start: (ts * 1000.0) as i64,
                pid: e["pid"].as_i64().unwrap_or(-1),
            };
            // a Python dict: a repeated id keeps its place and takes the new value
            match launches.iter_mut().find(|x| x.corr == corr) {
                Some(x) => *x = l,
                None => launches.push(l),
            }
        } else if cat == "GPU_Kernel" || name.starts_with("Kernel:") {
            kernels.push((corr, name.replace("Kernel: ", "")));
        }
    }
    kernels.sort_by_key(|k| k.0);
    let mut out: BTreeMap<String, i64> = BTreeMap::new();
    for line in cpu.lines() {
        let Some((fields, rest)) = cpu_fields(line) else {
            continue;
        };
        let (Ok(ts), Ok(pid)) = (fields[0].parse::<i64>(), fields[2].parse::<i64>()) else {
            continue;
        };
        let mut frames: Vec<String> = Vec::new();
        let mut seen_launch = false;
        for f in rest.split(';').map(str::trim) {
            if f.is_empty() || ["_start", "__libc_start_main", "<no-symbol>"].contains(&f) {
                continue;
            }
            if f.contains("cudaLaunchKernel") || f.contains("__device_stub__") {
                if !seen_launch {
                    frames.push("cudaLaunchKernel".into());
                    seen_launch = true;
                }
            } else {
                frames.push(f.to_string());
            }
        }
        if frames.is_empty() {
            continue;
        }
        let mut best: Option<&Launch> = None;
        let mut min = TOLERANCE_NS;
        for l in &launches {
            if per_process && l.pid != pid {
                continue;
            }
            let d = (ts - l.start).abs();
            if d < min {
                min = d;
                best = Some(l);
            }
        }
        let kernel = best.and_then(|l| kernels.iter().find(|k| k.0 == l.corr));
        frames.push(match kernel {
            Some((_, name)) => format!("[GPU_Kernel]{name}"),
            None => "[GPU_Launch_Pending]".into(),
        });
        *out.entry(frames.join(";")).or_default() += 1;
    }
    out
}

/// The current upstream `merge_gpu_cpu_trace.py` (eunomia-bpf tutorial) restated, which
/// `--weight gpu-us` reproduces: frames cleaned as in [`reference_merge`] except that
/// `__device_stub__` frames are kept and only `cudaLaunchKernel` frames collapse; stacks grouped
/// by (pid, tid) in order of first appearance, sorted by time; launches (a dict by correlation
/// id, `ts`, `dur`, id > 0) go to the first thread of their pid, sorted by time; equal counts
/// pair in order, else with the clock offset of the first launch and first stack and the
/// tolerance in float µs; a pair with a kernel (the last of its correlation id) adds
/// `int(end_us - start_us)`. Returns stack → weight, zero weights included (a kernel shorter
/// than 1 µs makes a line of weight 0 there, and in tracex's output).
fn upstream_merge(cpu: &str, gpu_events: &[PyEvent]) -> BTreeMap<String, i64> {
    // correlation id -> (start µs, pid), in first-insertion order as a Python dict
    let mut launches: Vec<(i64, f64, i64)> = Vec::new();
    let mut kernels: BTreeMap<i64, (String, f64, f64)> = BTreeMap::new();
    for PyEvent { v: e, ts, dur } in gpu_events {
        let (ts, dur) = (*ts, *dur);
        let name = e["name"].as_str().unwrap_or("");
        let cat = e["cat"].as_str().unwrap_or("");
        let corr = e["args"]["correlationId"].as_i64().unwrap_or(0);
        if !(ts > 0.0 && dur > 0.0 && corr > 0) {
            continue;
        }
        if cat == "CUDA_Runtime" && name.contains("LaunchKernel") {
            let l = (corr, ts, e["pid"].as_i64().unwrap_or(0));
            match launches.iter_mut().find(|x| x.0 == corr) {
                Some(x) => *x = l,
                None => launches.push(l),
            }
        } else if cat == "GPU_Kernel" || name.starts_with("Kernel:") {
            // sorted by id (stably) then put in a dict: the last of an id wins
            kernels.insert(corr, (name.replace("Kernel: ", ""), ts, ts + dur));
        }
    }
    // (pid, tid) and its stacks: (time, frames)
    type Stacks = Vec<(i64, Vec<String>)>;
    let mut threads: Vec<((i64, i64), Stacks)> = Vec::new();
    for line in cpu.lines() {
        let Some((fields, rest)) = cpu_fields(line) else {
            continue;
        };
        let (Ok(ts), Ok(pid), Ok(tid), Ok(_)) = (
            fields[0].parse::<i64>(),
            fields[2].parse::<i64>(),
            fields[3].parse::<i64>(),
            fields[4].parse::<i64>(),
        ) else {
            continue;
        };
        let mut frames: Vec<String> = Vec::new();
        let mut seen_launch = false;
        for f in rest.split(';').map(str::trim) {
            if f.is_empty() || ["<no-symbol>", "_start", "__libc_start_main"].contains(&f) {
                continue;
            }
            if f.contains("cudaLaunchKernel") && !f.contains("__device_stub__") {
                if !seen_launch {
                    frames.push("cudaLaunchKernel".into());
                    seen_launch = true;
                }
            } else {
                frames.push(f.to_string());
            }
        }
        if frames.is_empty() {
            continue;
        }
        match threads.iter_mut().find(|t| t.0 == (pid, tid)) {
            Some(t) => t.1.push((ts, frames)),
            None => threads.push(((pid, tid), vec![(ts, frames)])),
        }
    }
    let mut by_thread: Vec<Vec<(i64, f64)>> = vec![Vec::new(); threads.len()];
    for &(corr, start, pid) in &launches {
        if pid > 0 {
            if let Some(t) = threads.iter().position(|t| t.0 .0 == pid) {
                by_thread[t].push((corr, start));
            }
        }
    }
    let tolerance_us = TOLERANCE_NS as f64 / 1000.0;
    let mut out: BTreeMap<String, i64> = BTreeMap::new();
    let mut add = |frames: &[String], corr: i64| -> bool {
        let Some((name, start, end)) = kernels.get(&corr) else {
            return false;
        };
        let key = format!("{};[GPU_Kernel]{name}", frames.join(";"));
        *out.entry(key).or_default() += (end - start) as i64;
        true
    };
    for (t, (_, stacks)) in threads.iter_mut().enumerate() {
        stacks.sort_by_key(|s| s.0);
        let gpu = &mut by_thread[t];
        gpu.sort_by(|a, b| a.1.partial_cmp(&b.1).unwrap());
        if gpu.is_empty() {
            continue;
        }
        if stacks.len() == gpu.len() {
            for (s, l) in stacks.iter().zip(gpu.iter()) {
                add(&s.1, l.0);
            }
            continue;
        }
        let offset = gpu[0].1 - stacks[0].0 as f64 / 1000.0;
        let mut i = 0;
        for (ts, frames) in stacks.iter() {
            let cpu_us = *ts as f64 / 1000.0 + offset;
            while i < gpu.len() && cpu_us - gpu[i].1 > tolerance_us {
                i += 1;
            }
            if i >= gpu.len() {
                continue;
            }
            if (cpu_us - gpu[i].1).abs() <= tolerance_us && add(frames, gpu[i].0) {
                i += 1;
            }
        }
    }
    out
}

/// A trace event with its `ts` and `dur` as Python's `json` reads them: the float nearest the
/// text (serde_json's default parse of long decimals can be a step off).
struct PyEvent {
    v: Value,
    ts: f64,
    dur: f64,
}

fn py_events_of(json_path: &Path) -> Vec<PyEvent> {
    use serde_json::value::RawValue;
    let text = std::fs::read_to_string(json_path).unwrap();
    let doc: BTreeMap<String, &RawValue> = serde_json::from_str(&text).unwrap();
    let events: Vec<BTreeMap<String, &RawValue>> =
        serde_json::from_str(doc["traceEvents"].get()).unwrap();
    let number = |e: &BTreeMap<String, &RawValue>, k: &str| {
        e.get(k)
            .and_then(|r| r.get().parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    events
        .iter()
        .map(|e| PyEvent {
            v: serde_json::to_value(e).unwrap(),
            ts: number(e, "ts"),
            dur: number(e, "dur"),
        })
        .collect()
}

fn events_of(json_path: &Path) -> Vec<Value> {
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(json_path).unwrap()).unwrap();
    doc["traceEvents"].as_array().unwrap().clone()
}

/// Runs `tracex convert INPUTS... OUT` with `extra` options; returns the output's text.
fn merge(inputs: &[&Path], extra: &[&str], dir: &Path) -> String {
    let out = dir.join("merged.folded");
    let _ = std::fs::remove_file(&out);
    let mut args = vec!["convert"];
    args.extend_from_slice(extra);
    args.extend(inputs.iter().map(|p| s(p)));
    args.push(s(&out));
    run_ok(&args);
    check_flamegraph(&out);
    std::fs::read_to_string(&out).unwrap()
}

fn counts(text: &str) -> BTreeMap<String, i64> {
    parse_folded(text)
        .into_iter()
        .map(|(k, v)| (k, v[0]))
        .collect()
}

/// CPU stacks for the launches of a CUPTI JSON, as the uprobe would catch them: 100–400 ns
/// before each launch call (so the nearest launch is clear even at the JSON's 0.25 µs
/// resolution), every 7th launch missed, and two stacks a second before the first launch.
fn synthesize_cpu(events: &[Value]) -> String {
    let kernels: BTreeMap<i64, &str> = events
        .iter()
        .filter(|e| e["cat"] == "GPU_Kernel")
        .map(|e| {
            (
                e["args"]["correlationId"].as_i64().unwrap(),
                e["name"].as_str().unwrap().trim_start_matches("Kernel: "),
            )
        })
        .collect();
    let callers = [
        "forward(Transformer*, int, int)",
        "attention(Layer*, int)",
        "mlp(Layer*)",
    ];
    let mut lines = Vec::new();
    let mut first = i64::MAX;
    let mut pid = 0;
    for (i, e) in events
        .iter()
        .filter(|e| {
            e["cat"] == "CUDA_Runtime" && e["name"].as_str().unwrap().contains("LaunchKernel")
        })
        .enumerate()
    {
        let ts = (e["ts"].as_f64().unwrap() * 1000.0) as i64;
        first = first.min(ts);
        pid = e["pid"].as_i64().unwrap();
        if i % 7 == 3 {
            continue;
        }
        let corr = e["args"]["correlationId"].as_i64().unwrap();
        let kernel = kernels.get(&corr).copied().unwrap_or("unknown");
        lines.push(format!(
            "{} app {pid} {pid} {} _start;__libc_start_main;0x7f3a1c02a1ca;main;{};__device_stub_{kernel}(...);cudaLaunchKernel",
            ts - 100 - (i as i64 * 37) % 300,
            i % 8,
            callers[i % 3]
        ));
    }
    for k in 0..2 {
        lines.push(format!(
            "{} app {pid} {pid} 0 _start;main;init(int);cudaLaunchKernel",
            first - 1_000_000_000 + k
        ));
    }
    lines.join("\n") + "\n"
}

#[test]
fn cupti_json_is_read_as_cupti_and_chrome_stays_chrome() {
    let info = |p: &Path| -> Value {
        serde_json::from_slice(&run_ok(&["info", "--json", s(p)]).stdout).unwrap()
    };
    let v = info(&own("app_gpu.json"));
    assert_eq!(v["format"], "cupti");
    let answers: Vec<(String, String)> = v["sniffers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["format"].as_str().unwrap().into(),
                a["answer"].as_str().unwrap().into(),
            )
        })
        .collect();
    // both are certain: the tie goes to the format that refines the other
    assert!(
        answers.contains(&("chrome".into(), "certain".into())),
        "{answers:?}"
    );
    assert!(
        answers.contains(&("cupti".into(), "certain".into())),
        "{answers:?}"
    );
    assert_eq!(info(&own("app_gpu.txt"))["format"], "cupti");
    let mut chrome = vec![
        root().join("fixtures/demo/gpu_training_step.json"),
        root().join("fixtures/chrome/all_phases.json"),
    ];
    chrome.extend(corpus_files("chrome").into_iter().filter(|p| {
        let n = p.file_name().unwrap().to_string_lossy();
        n.contains("kineto-worker") || n.contains("simple") || n.contains("traceviewify")
    }));
    for p in &chrome {
        assert_eq!(info(p)["format"], "chrome", "{}", p.display());
    }
    let mut cupti = 0;
    for suffix in ["xpu-perf-trace.json", "gpu_final.gpuperf-convert.json"] {
        if let Some(p) = corpus_cupti(suffix) {
            assert_eq!(info(&p)["format"], "cupti", "{}", p.display());
            cupti += 1;
        }
    }
    eprintln!(
        "sniffing: {} Chrome traces stay chrome, {} corpus CUPTI JSON read as cupti",
        chrome.len(),
        cupti
    );
}

#[test]
fn goldens_of_own_fixtures() {
    for name in ["app_gpu.txt", "app_gpu.json", "worker_gpu.txt"] {
        golden(
            &format!("cupti/{name}.dump"),
            &dump_with_diagnostics(&own(name)),
        );
    }
}

/// A CUPTI input imported through the CLI's chain into memory.
fn import(path: &Path) -> (Defs, Vec<Event>) {
    let mut defs = Defs::new();
    let mut diag = Diagnostics::default();
    let mut chain = Sorter::new(OverlapRouter::new(MemSink::default()));
    let progress = Progress::new();
    let file = std::fs::File::open(path).unwrap();
    let mut ctx = ImportCtx::new(&mut defs, &mut diag, &mut chain, &progress);
    tracex_cupti::import(file, &Default::default(), &mut ctx).unwrap();
    chain.end(&mut defs, &mut diag).unwrap();
    (defs, chain.into_inner().into_inner().events)
}

/// Slices per category, and (call, GPU work, work start) joined by each flow.
type Essence = (BTreeMap<String, usize>, Vec<(String, String, i64)>);

/// What must agree between the text and the JSON of one run: slices per category, and the
/// (call, GPU work) pairs the flows join with the GPU work's start (µs floats in JSON: to 250 ns).
/// Each flow must join a call and GPU work with the same correlation id.
fn essence(path: &Path) -> Essence {
    let (defs, events) = import(path);
    let corr_key = defs
        .strings
        .lookup("correlationId")
        .expect("correlation ids");
    let mut cats = BTreeMap::new();
    // slices by (track, start): several may start together at the JSON's resolution
    type NameAndCorrelation = (String, Option<i64>);
    let mut at: BTreeMap<(u32, i64), Vec<NameAndCorrelation>> = BTreeMap::new();
    for e in &events {
        if let Event::Slice(sl) = e {
            *cats
                .entry(defs.opt_str(sl.cat).unwrap_or("").to_string())
                .or_default() += 1;
            let corr = sl
                .args
                .iter()
                .find(|a| a.key == corr_key)
                .and_then(|a| match a.value {
                    tracex_ir::Value::Int(i) => Some(i),
                    _ => None,
                });
            at.entry((defs.root_track(sl.track).0, sl.ts))
                .or_default()
                .push((defs.str(sl.name).to_string(), corr));
        }
    }
    let mut starts = BTreeMap::new();
    let mut pairs = Vec::new();
    for e in &events {
        if let Event::Flow(f) = e {
            let here = &at[&(defs.root_track(f.track).0, f.ts)];
            match f.role {
                FlowRole::Start => {
                    starts.insert(f.id, here.clone());
                }
                _ => {
                    let joined = here.iter().find_map(|(work, c)| {
                        starts[&f.id]
                            .iter()
                            .find(|(_, sc)| sc.is_some() && sc == c)
                            .map(|(call, _)| (call.clone(), work.clone(), f.ts))
                    });
                    pairs.push(joined.unwrap_or_else(|| {
                        panic!(
                            "{}: a flow joins different correlation ids at {}",
                            path.display(),
                            f.ts
                        )
                    }));
                }
            }
        }
    }
    pairs.sort();
    (cats, pairs)
}

#[test]
fn text_and_json_of_one_run_give_the_same_trace() {
    let mut pairs = vec![
        (own("app_gpu.txt"), own("app_gpu.json")),
        (own("worker_gpu.txt"), own("worker_gpu.json")),
    ];
    if let (Some(t), Some(j)) = (
        corpus_cupti("xpu-perf-res.txt"),
        corpus_cupti("xpu-perf-trace.json"),
    ) {
        pairs.push((t, j));
    }
    if let (Some(t), Some(j)) = (
        corpus_cupti("gpu_final.txt"),
        corpus_cupti("gpu_final.gpuperf-convert.json"),
    ) {
        pairs.push((t, j));
    }
    for (text, json) in &pairs {
        let (ct, pt) = essence(text);
        let (cj, pj) = essence(json);
        assert_eq!(
            ct,
            cj,
            "categories of {} and {}",
            text.display(),
            json.display()
        );
        assert_eq!(
            pt.len(),
            pj.len(),
            "flows of {} and {}",
            text.display(),
            json.display()
        );
        assert!(!pt.is_empty());
        for (a, b) in pt.iter().zip(&pj) {
            assert_eq!((&a.0, &a.1), (&b.0, &b.1), "{}", text.display());
            assert!(
                (a.2 - b.2).abs() <= 250,
                "{}: {a:?} vs {b:?}",
                text.display()
            );
        }
    }
    eprintln!("text vs JSON: {} runs agree", pairs.len());
}

#[test]
fn every_corpus_cupti_input_imports() {
    let files: Vec<PathBuf> = corpus_files("cupti")
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e != "folded"))
        .collect();
    for f in &files {
        let v: Value = serde_json::from_slice(&run_ok(&["info", "--json", s(f)]).stdout).unwrap();
        let errors: Vec<&Value> = v["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["severity"] == "error")
            .collect();
        assert!(errors.is_empty(), "{}: {errors:?}", f.display());
        if f.to_string_lossy().contains("excerpt") {
            // the published sample of the uprobe profiler's extended folded lines
            assert_eq!(v["format"], "folded");
            assert_eq!(v["events"]["sample"], 3);
        } else {
            assert_eq!(v["format"], "cupti", "{}", f.display());
            assert!(v["flows"].as_u64().unwrap() > 0, "{}", f.display());
        }
    }
    eprintln!("CUPTI corpus: {} inputs imported", files.len());
}

#[test]
fn merge_matches_the_reference_with_one_process() {
    let dir = tempfile::tempdir().unwrap();
    let cpu = own("app_cpu.txt");
    let expected = reference_merge(
        &std::fs::read_to_string(&cpu).unwrap(),
        &events_of(&own("app_gpu.json")),
        false,
    );
    let from_json = merge(&[&cpu, &own("app_gpu.json")], &[], dir.path());
    assert_eq!(counts(&from_json), expected);
    // the fixture exercises both kinds of unmatched stack and the clean-up
    assert_eq!(
        expected
            .keys()
            .filter(|k| k.ends_with("[GPU_Launch_Pending]"))
            .count(),
        1
    );
    assert_eq!(expected.values().sum::<i64>(), 6);
    assert!(expected
        .keys()
        .all(|k| k.starts_with("0x7f3a1c02a1ca;main;")));
    // the raw text of the same run (exact ns) gives the same lines; so does the CPU file second
    assert_eq!(
        merge(&[&cpu, &own("app_gpu.txt")], &[], dir.path()),
        from_json
    );
    assert_eq!(
        merge(&[&own("app_gpu.json"), &cpu], &[], dir.path()),
        from_json
    );

    let mut checked = 1;
    for suffix in ["gpu_final.gpuperf-convert.json", "xpu-perf-trace.json"] {
        let Some(gpu) = corpus_cupti(suffix) else {
            continue;
        };
        let events = events_of(&gpu);
        let cpu_text = synthesize_cpu(&events);
        let cpu = dir.path().join("cpu_results.txt");
        std::fs::write(&cpu, &cpu_text).unwrap();
        let expected = reference_merge(&cpu_text, &events, false);
        let got = counts(&merge(&[&cpu, &gpu], &[], dir.path()));
        assert_eq!(got, expected, "merge with {}", gpu.display());
        assert!(expected.keys().any(|k| k.ends_with("[GPU_Launch_Pending]")));
        checked += 1;
        if suffix.starts_with("gpu_final") {
            let text = corpus_cupti("gpu_final.txt").unwrap();
            assert_eq!(counts(&merge(&[&cpu, &text], &[], dir.path())), expected);
        }
    }
    eprintln!("merge parity with the reference: {checked} GPU inputs");
}

/// The reference matches each stack to the nearest launch of any process; tracex stays in the
/// stack's process. Here two processes launch within a microsecond of each other.
#[test]
fn merge_keeps_each_process_to_its_own_launches() {
    let dir = tempfile::tempdir().unwrap();
    let cpu = own("two_procs_cpu.txt");
    let cpu_text = std::fs::read_to_string(&cpu).unwrap();
    let mut events = events_of(&own("app_gpu.json"));
    events.extend(events_of(&own("worker_gpu.json")));
    let per_process = reference_merge(&cpu_text, &events, true);
    let mixed = reference_merge(&cpu_text, &events, false);
    assert_ne!(per_process, mixed, "the fixture must tell the two apart");
    let got = merge(
        &[&cpu, &own("app_gpu.json"), &own("worker_gpu.json")],
        &[],
        dir.path(),
    );
    assert_eq!(counts(&got), per_process);
    // process root frames keep the two apart in the flame graph too (with several inputs, a
    // process is named after the input it came from)
    let prefixed = merge(
        &[&cpu, &own("app_gpu.txt"), &own("worker_gpu.txt")],
        &["--prefix", "process"],
        dir.path(),
    );
    for l in prefixed.lines() {
        assert!(
            l.starts_with("[two_procs_cpu.txt] llm_infer (pid 4242);")
                || l.starts_with("[two_procs_cpu.txt] decode_worker (pid 5151);"),
            "{l}"
        );
    }
}

#[test]
fn merge_by_gpu_time_and_summary() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("gpu_ns.folded");
    let cpu = own("app_cpu.txt");
    let o = run_ok(&[
        "convert",
        "--weight",
        "gpu-ns",
        "--summary",
        s(&cpu),
        s(&own("app_gpu.txt")),
        s(&out),
    ]);
    check_flamegraph(&out);
    let text = std::fs::read_to_string(&out).unwrap();
    // matched kernels weigh their exact durations (from the text); pending stacks weigh nothing
    let expected: BTreeMap<String, i64> = [
        ("forward(Transformer*, int, int);accum(float*, float*, int);cudaLaunchKernel;[GPU_Kernel]_Z12accum_kernelPfS_i", 15_517),
        ("forward(Transformer*, int, int);matmul(float*, float*, float*, int, int);cudaLaunchKernel;[GPU_Kernel]_Z13matmul_kernelPfS_S_ii", 400_532),
        ("forward(Transformer*, int, int);softmax(float*, int);cudaLaunchKernel;[GPU_Kernel]_Z14softmax_kernelPfi", 118_642),
        ("prefetch_next(Batch*);accum(float*, float*, int);cudaLaunchKernel;[GPU_Kernel]_Z12accum_kernelPfS_i", 8_248),
    ]
    .into_iter()
    .map(|(k, v)| (format!("0x7f3a1c02a1ca;main;run_inference(Model*, Tokenizer*, char const*);{k}"), v))
    .collect();
    assert_eq!(counts(&text), expected);
    let stderr = String::from_utf8(o.stderr).unwrap();
    for fact in [
        "CPU stacks caught at a launch: 6 (matched to GPU work 4, unmatched 2: 1 with no launch within 10 ms in their process, 1 whose launch has no GPU work)",
        "calls joined to GPU work: 6 (0 with a backtrace); GPU work without a CPU stack: 2 (0.080 ms, not in the output)",
        "GPU kernels: 5, total kernel time 0.633 ms",
        "2         0.024 ms  _Z12accum_kernelPfS_i",
    ] {
        assert!(stderr.contains(fact), "missing {fact:?} in\n{stderr}");
    }
    // at 500 ns (exclusive) only the stacks 450 and 350 ns from their launch still match
    let tight = merge(
        &[&cpu, &own("app_gpu.txt")],
        &["--tolerance-ms", "0.0005"],
        dir.path(),
    );
    let pending: i64 = counts(&tight)
        .iter()
        .filter(|(k, _)| k.ends_with("[GPU_Launch_Pending]"))
        .map(|(_, v)| v)
        .sum();
    assert_eq!(pending, 4, "{tight}");
}

/// Generated inputs of a few thousand launches, in JSON and text: the same lines as the
/// reference's scan, whose quadratic cost is why tracex sorts and searches instead.
#[test]
fn generated_merge_matches_the_reference() {
    let dir = tempfile::tempdir().unwrap();
    let cpu = dir.path().join("cpu.txt");
    let mut outputs = Vec::new();
    for format in [
        tracex_gen::cupti::GpuFormat::Json,
        tracex_gen::cupti::GpuFormat::Text,
    ] {
        let gpu = dir.path().join(format!("gpu.{format:?}"));
        tracex_gen::cupti::run(&tracex_gen::cupti::Args {
            launches: 3_000,
            processes: 1,
            cpu: s(&cpu).into(),
            gpu: s(&gpu).into(),
            gpu_format: format,
        })
        .unwrap();
        outputs.push(merge(&[&cpu, &gpu], &[], dir.path()));
        if format == tracex_gen::cupti::GpuFormat::Json {
            let expected = reference_merge(
                &std::fs::read_to_string(&cpu).unwrap(),
                &events_of(&gpu),
                false,
            );
            assert_eq!(counts(&outputs[0]), expected);
            assert_eq!(expected.values().sum::<i64>(), 2_940);
        }
    }
    assert_eq!(outputs[0], outputs[1]);
}

/// `--weight gpu-us` gives the lines of the current upstream merge: on the fixtures (one
/// thread, as many stacks as launches: paired in order), on two processes, on generated inputs
/// and on the corpus's CUPTI JSON with stacks made from its launches (some missed: paired by
/// time after the clock offset).
#[test]
fn gpu_us_matches_the_current_upstream_merge() {
    let dir = tempfile::tempdir().unwrap();
    let gpu_us = &["--weight", "gpu-us"][..];
    let mut checked = Vec::new();
    let mut check = |cpu: &Path, gpu_inputs: &[&Path], events: &[PyEvent], what: &str| {
        let expected = upstream_merge(&std::fs::read_to_string(cpu).unwrap(), events);
        assert!(!expected.is_empty(), "{what}: nothing matched");
        let mut inputs = vec![cpu];
        inputs.extend_from_slice(gpu_inputs);
        let got = counts(&merge(&inputs, gpu_us, dir.path()));
        assert_eq!(got, expected, "{what}");
        checked.push(format!("{what} ({} lines)", expected.len()));
    };
    check(
        &own("app_cpu.txt"),
        &[&own("app_gpu.json")],
        &py_events_of(&own("app_gpu.json")),
        "fixture",
    );
    let mut events = py_events_of(&own("app_gpu.json"));
    events.extend(py_events_of(&own("worker_gpu.json")));
    check(
        &own("two_procs_cpu.txt"),
        &[&own("app_gpu.json"), &own("worker_gpu.json")],
        &events,
        "two processes",
    );
    let cpu = dir.path().join("cpu.txt");
    let gpu = dir.path().join("gpu.json");
    tracex_gen::cupti::run(&tracex_gen::cupti::Args {
        launches: 3_000,
        processes: 1,
        cpu: s(&cpu).into(),
        gpu: s(&gpu).into(),
        gpu_format: tracex_gen::cupti::GpuFormat::Json,
    })
    .unwrap();
    check(&cpu, &[&gpu], &py_events_of(&gpu), "generated");
    for suffix in ["gpu_final.gpuperf-convert.json", "xpu-perf-trace.json"] {
        let Some(gpu) = corpus_cupti(suffix) else {
            continue;
        };
        let cpu = dir.path().join("cpu_results.txt");
        std::fs::write(&cpu, synthesize_cpu(&events_of(&gpu))).unwrap();
        check(&cpu, &[&gpu], &py_events_of(&gpu), suffix);
    }
    // the default is still the original's count of stacks
    let counted = counts(&merge(
        &[&own("app_cpu.txt"), &own("app_gpu.json")],
        &[],
        dir.path(),
    ));
    assert_eq!(counted.values().sum::<i64>(), 6);
    eprintln!(
        "gpu-us parity with the upstream merge: {}",
        checked.join(", ")
    );
}

#[test]
fn bad_cupti_text_is_counted_or_fails_under_strict() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("bad_gpu.txt");
    let mut bytes = b"Enabling CUPTI_ACTIVITY_KIND_RUNTIME.\n\
        \tdeviceId 0, contextId 1, streamId 7\n\
        RUNTIME [ 1761700000000100000, 1761700000000100373 ] duration 373, \"cudaFree_v3020\", cbid 22, processId 1, threadId 2, correlationId 3\n\
        RUNTIME [ 17617000000x0200000, 1761700000000200373 ] duration 373, \"cudaFree_v3020\", cbid 22, processId 1, threadId 2, correlationId 4\n\
        SYNCHRONIZATION [ 1761700000000300000, 1761700000000300100 ] type STREAM_SYNCHRONIZE, streamId 7\n\
        RUNTIME [ 1761700000000400000, 1761700000000400100 ] duration 100, cbid 22, processId 1, threadId 2, correlationId 5\n"
        .to_vec();
    bytes.extend_from_slice(b"\xff\xfe binary\n");
    std::fs::write(&input, bytes).unwrap();
    let d = String::from_utf8(run_ok(&["dump", s(&input)]).stdout).unwrap();
    for fact in [
        "diag cupti_orphan_continuation count=1 first=line 2",
        "diag cupti_bad_record count=2 first=line 4",
        "diag cupti_unknown_record count=1 first=line 5 detail=\"SYNCHRONIZATION\"",
        "diag cupti_not_text count=1 first=line 7",
        "name=\"cudaFree_v3020\"",
    ] {
        assert!(d.contains(fact), "missing {fact:?} in\n{d}");
    }
    let out = dir.path().join("out.json");
    let err = run_err(&["convert", "--strict", s(&input), s(&out)]);
    assert!(
        err.contains("cupti_bad_record") && err.contains("--strict"),
        "{err}"
    );
    assert!(!out.exists());
}
