//! The GPU flame graph worked out from events in arrival order (`tracex_folded`'s `unordered`
//! module) against the ordered pipeline (`TRACEX_UNORDERED=0`): the same output bytes, the
//! same diagnostics and the same `--json` report, on every fixture with a GPU view and on
//! random CUPTI traces made to collide (calls and kernels starting together, slices of no
//! length, overlapping kernels, open slices, orphan and duplicate correlation ids), where some
//! conversions need the order and run again with it. `TRACEX_UNORDERED=only` tells which went
//! unordered: it fails where the order is needed instead of running again.

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::common::*;

/// How a conversion went in both modes.
#[derive(Debug, PartialEq, Eq)]
enum Went {
    /// Both wrote the same output, and the unordered mode needed no second run.
    Unordered,
    /// Both wrote the same output; the unordered mode needed the order after all.
    Ordered,
    /// Both failed the same way.
    Failed,
}

/// A report without its timings.
fn report(out: &Output) -> Value {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(m) => {
                m.remove("seconds");
                m.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    strip(&mut v);
    v
}

/// Stderr without the line that gives the conversion's time.
fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| !(l.starts_with("tracex: ") && l.contains(" -> ") && l.ends_with(" s")))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Converts `args` (inputs and options) to folded stacks ordered and unordered, each in a
/// directory of its own under `dir` (so that the reports name the same output), and checks
/// that both give the same.
fn compare(dir: &Path, args: &[&str]) -> Went {
    let run = |mode: &str, sub: &str| -> (Output, Vec<u8>) {
        let at = dir.join(sub);
        std::fs::create_dir_all(&at).unwrap();
        let out = tracex_loud()
            .current_dir(&at)
            .env("TRACEX_UNORDERED", mode)
            .args(["convert", "-f", "--json"])
            .args(args)
            .arg("out.folded")
            .output()
            .expect("run tracex");
        let folded = std::fs::read(at.join("out.folded")).unwrap_or_default();
        let _ = std::fs::remove_file(at.join("out.folded"));
        (out, folded)
    };
    let (ordered, of) = run("0", "ordered");
    let (unordered, uf) = run("1", "unordered");
    assert_eq!(
        ordered.status.code(),
        unordered.status.code(),
        "{args:?}: exit codes differ; unordered stderr:\n{}",
        stderr(&unordered)
    );
    assert_eq!(stderr(&ordered), stderr(&unordered), "{args:?}: stderr");
    if !ordered.status.success() {
        return Went::Failed;
    }
    assert_eq!(
        report(&ordered),
        report(&unordered),
        "{args:?}: --json report"
    );
    assert!(!of.is_empty(), "{args:?}: no output");
    assert!(of == uf, "{args:?}: the folded outputs differ");
    let (only, _) = run("only", "only");
    match only.status.success() {
        true => Went::Unordered,
        false => {
            assert!(
                stderr(&only).contains("needs its events in order"),
                "{args:?}: {}",
                stderr(&only)
            );
            Went::Ordered
        }
    }
}

/// Counts of how conversions went.
#[derive(Default, Debug)]
struct Tally {
    unordered: usize,
    ordered: usize,
    failed: usize,
}

impl Tally {
    fn add(&mut self, w: Went) {
        match w {
            Went::Unordered => self.unordered += 1,
            Went::Ordered => self.ordered += 1,
            Went::Failed => self.failed += 1,
        }
    }
}

const WEIGHTS: [&[&str]; 3] = [&[], &["--weight", "gpu-us"], &["--weight", "gpu-ns"]];

#[test]
fn own_cupti_fixtures_and_generated_merges_go_unordered_with_the_same_output() {
    let dir = tempfile::tempdir().unwrap();
    let own = root().join("fixtures/cupti");
    let gen_dir = dir.path().join("gen");
    std::fs::create_dir_all(&gen_dir).unwrap();
    let mut pairs: Vec<(String, String)> = Vec::new();
    for (cpu, gpus) in [
        ("app_cpu.txt", ["app_gpu.json", "app_gpu.txt"]),
        ("two_procs_cpu.txt", ["worker_gpu.json", "worker_gpu.txt"]),
    ] {
        for g in gpus {
            let p = |n: &str| own.join(n).to_string_lossy().into_owned();
            pairs.push((p(cpu), p(g)));
        }
    }
    // two processes, both CUPTI forms
    use tracex_gen::cupti::{Args, GpuFormat};
    for (form, gpu_format) in [("json", GpuFormat::Json), ("txt", GpuFormat::Text)] {
        let cpu = gen_dir.join(format!("cpu-{form}.txt"));
        let gpu = gen_dir.join(format!("gpu.{form}"));
        tracex_gen::cupti::run(&Args {
            launches: 3_000,
            processes: 2,
            cpu: cpu.to_string_lossy().into(),
            gpu: gpu.to_string_lossy().into(),
            gpu_format,
        })
        .unwrap();
        pairs.push((
            cpu.to_string_lossy().into_owned(),
            gpu.to_string_lossy().into_owned(),
        ));
    }
    let mut tally = Tally::default();
    for (cpu, gpu) in &pairs {
        for w in WEIGHTS {
            for inputs in [[cpu, gpu], [gpu, cpu]] {
                let mut args: Vec<&str> = w.to_vec();
                args.extend(inputs.iter().map(|s| s.as_str()));
                tally.add(compare(dir.path(), &args));
            }
        }
    }
    eprintln!("own and generated GPU merges: {tally:?}");
    // every one of these has what the unordered join needs
    assert_eq!(tally.unordered, pairs.len() * 6, "{tally:?}");
}

#[test]
fn corpus_gpu_views_are_the_same_unordered() {
    let Some(corpus) = corpus() else {
        eprintln!("skipped: no corpus (../shared/fixtures or $TRACEX_CORPUS)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut tally = Tally::default();
    for f in corpus_files("nsys") {
        let f = f.to_string_lossy().into_owned();
        for w in [&["--fold", "gpu"][..], &["--weight", "gpu-us"]] {
            let mut args = w.to_vec();
            args.push(&f);
            tally.add(compare(dir.path(), &args));
        }
    }
    let cupti = corpus.join("cupti");
    let files = corpus_files("cupti");
    let cpus: Vec<_> = files
        .iter()
        .filter(|p| p.to_string_lossy().contains("cpu"))
        .collect();
    for gpu in files.iter().filter(|p| {
        let n = p.to_string_lossy();
        !n.contains("cpu") && (n.ends_with(".json") || n.ends_with(".txt"))
    }) {
        let gpu = gpu.to_string_lossy().into_owned();
        tally.add(compare(dir.path(), &["--fold", "gpu", &gpu]));
        for cpu in &cpus {
            let cpu = cpu.to_string_lossy().into_owned();
            for w in WEIGHTS {
                for inputs in [[&cpu, &gpu], [&gpu, &cpu]] {
                    let mut args: Vec<&str> = w.to_vec();
                    args.extend(inputs.iter().map(|s| s.as_str()));
                    tally.add(compare(dir.path(), &args));
                }
            }
        }
    }
    eprintln!(
        "corpus GPU views (nsys, CUPTI in {}): {tally:?}",
        cupti.display()
    );
    assert!(tally.unordered >= 10, "{tally:?}");
}

/// A small xorshift generator: the same cases on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// CUPTI Chrome JSON and uprobe CPU stacks of a made-up run whose records collide: times on a
/// grid of half µs, so that calls and kernels often start together; kernels of no length or
/// overlapping on the one stream the JSON has; calls without work; work without a call or
/// before it; a reused correlation id; a call that never ends.
fn colliding_trace(rng: &mut Rng, open_slice: bool) -> (String, String) {
    const BASE_US: u64 = 1_761_700_000_000_000;
    let mut events = Vec::new();
    let mut cpu = String::new();
    let kernels = ["_Z6matmulPf", "_Z7softmaxPf", "_Z5accumPf"];
    let calls = 10 + rng.below(60);
    let mut corr = 0;
    for _ in 0..calls {
        let tid = 100 + rng.below(2);
        let at = rng.below(120);
        let ts = format!("{}.{}", BASE_US + at / 2, 5 * (at % 2));
        let dur = [0.0, 0.5, 1.0, 2.0, 4.5][rng.below(5) as usize];
        let (name, launch) = match rng.below(10) {
            0 => ("Runtime: cudaGetLastError_v3020", false),
            1 => ("Runtime: cudaMemcpy_v3020", false),
            2 => ("Driver: cuLaunchKernel", false),
            _ => ("Runtime: cudaLaunchKernel_v7000", true),
        };
        if !rng.chance(5) {
            corr += 1;
        }
        let cat = if name.starts_with("Driver") {
            "CUDA_Driver"
        } else {
            "CUDA_Runtime"
        };
        events.push(serde_json::json!({
            "name": name, "ph": "X", "ts": ts.parse::<f64>().unwrap(), "dur": dur, "tid": tid,
            "pid": 4242, "cat": cat, "args": {"cbid": "211", "correlationId": corr}
        }));
        let work_at = at as i64 + rng.below(12) as i64 - 2;
        let work_ts = BASE_US as f64 + work_at as f64 / 2.0;
        if launch || name.starts_with("Driver") {
            if rng.chance(90) {
                let k = kernels[rng.below(3) as usize];
                let dur = [0.0, 1.0, 3.0, 7.5][rng.below(4) as usize];
                events.push(serde_json::json!({
                    "name": format!("Kernel: {k}"), "ph": "X", "ts": work_ts,
                    "dur": dur, "cat": "GPU_Kernel", "args": {"correlationId": corr}
                }));
            }
        } else if name.contains("Memcpy") {
            events.push(serde_json::json!({
                "name": "MemCopy: HtoD", "ph": "X", "ts": work_ts, "dur": 2.0,
                "cat": "MemCopy", "args": {"correlationId": corr}
            }));
        }
        if launch && rng.chance(80) {
            let ns = (BASE_US * 1000) as u128 + at as u128 * 500 + rng.below(3000) as u128;
            let frame = ["forward", "attention", "generate"][rng.below(3) as usize];
            cpu.push_str(&format!(
                "{ns} app 4242 {tid} {} _start;main;{frame};cudaLaunchKernel\n",
                1 + rng.below(4)
            ));
        }
    }
    // a kernel whose call is not in the trace
    events.push(serde_json::json!({
        "name": "Kernel: orphan", "ph": "X", "ts": (BASE_US + 30) as f64, "dur": 1.0,
        "cat": "GPU_Kernel", "args": {"correlationId": 99999}
    }));
    if open_slice {
        events.push(serde_json::json!({
            "name": "Runtime: cudaDeviceSynchronize", "ph": "B", "ts": (BASE_US + 10) as f64,
            "tid": 100, "pid": 4242, "cat": "CUDA_Runtime"
        }));
    }
    // CPU stacks come in time order, as the profiler writes them
    let mut lines: Vec<&str> = cpu.lines().collect();
    lines.sort_by_key(|l| l.split(' ').next().unwrap().parse::<u128>().unwrap());
    let gpu = serde_json::json!({ "traceEvents": events }).to_string();
    (gpu, lines.join("\n") + "\n")
}

#[test]
fn colliding_cupti_traces_give_the_ordered_output() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut tally = Tally::default();
    for case in 0..60 {
        let (gpu, cpu) = colliding_trace(&mut rng, case % 15 == 7);
        let g = dir.path().join(format!("gpu-{case}.json"));
        let c = dir.path().join(format!("cpu-{case}.txt"));
        std::fs::write(&g, gpu).unwrap();
        std::fs::write(&c, cpu).unwrap();
        let (g, c) = (g.to_string_lossy(), c.to_string_lossy());
        let w = WEIGHTS[case % 3];
        let mut args: Vec<&str> = w.to_vec();
        match case % 2 {
            0 => args.extend([&*c, &*g]),
            _ => args.extend([&*g, &*c]),
        }
        tally.add(compare(dir.path(), &args));
    }
    eprintln!("colliding CUPTI traces: {tally:?}");
    // both ways are exercised: most go unordered, those with an open call or slices of no
    // length starting together where a flow binds need the order
    assert!(tally.unordered >= 20, "{tally:?}");
    assert!(tally.ordered >= 4, "{tally:?}");
}
