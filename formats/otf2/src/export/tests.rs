//! The exporter on a small trace built in code: every kind of event, equal timestamps, open
//! slices, overflow lanes, flows across locations; read back with libotf2.

use tracex_ir::builder::TraceBuilder;
use tracex_ir::mem::{MemSink, Trace};
use tracex_ir::nest::OverlapRouter;
use tracex_ir::order::Sorter;
use tracex_ir::{Num, Value};

use std::path::Path;

use super::*;

/// A trace with threads, a GPU stream, an async track with overlaps, instants, counters,
/// flows, samples and an open slice.
pub(crate) fn sample_trace() -> Trace {
    let mut b = TraceBuilder::new();
    let p = b.process(100, "trainer");
    let main = b.thread(p, 101, "main");
    let worker = b.thread(p, 102, "worker");
    let gpu = b.device(0, "GPU 0");
    let stream = b.gpu_stream(gpu, 0, 7);
    let asy = b.async_track(p, "requests");
    b.slice(main, 1_000, 10_000, "step");
    b.cat("user_annotation");
    b.slice(main, 1_000, 10_000, "forward");
    b.slice(main, 1_000, 0, "zero");
    b.slice(main, 2_000, 1_000, "cudaLaunchKernel");
    b.cat("cuda_runtime").arg("correlation", Value::Int(7));
    b.slice(stream, 5_000, 3_000, "gemm");
    b.cat("kernel").arg("grid", Value::Json("[1,2,3]".into()));
    b.flow((main, 2_500), (stream, 5_000), "ac2g");
    b.slice(asy, 1_500, 4_000, "req a");
    b.slice(asy, 2_500, 4_000, "req b");
    b.instant(main, 11_000, "marker");
    b.instant(worker, 3_000, "tick");
    b.slice(worker, 4_000, 100, "open one").dur = None;
    let c = b.counter(p, "memory", "allocated");
    b.count(c, 1_000, Num::Int(10));
    b.count(c, 6_000, Num::Float(10.5));
    b.sample(worker, Some(5_000), &["main", "compute"], 3);
    b.finish()
}

/// Sorts and routes `t` as the CLI does, then exports it to `out`.
pub(crate) fn export(mut t: Trace, out: &Path, opts: &ExportOptions) -> Result<Trace> {
    let mut routed = Sorter::new(OverlapRouter::new(MemSink::default()));
    t.replay(&mut routed)?;
    let events = routed.into_inner().into_inner().events;
    let mut exp = Exporter::create(&OutputTarget::Path(out.to_path_buf()), opts)?;
    for e in events {
        exp.event(&t.defs, &mut t.diag, e)?;
    }
    exp.finish(&t.defs, &mut t.diag)?;
    Ok(t)
}

#[test]
fn writes_a_readable_archive() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.otf2");
    let t = export(sample_trace(), &out, &ExportOptions::default()).unwrap();
    assert_eq!(t.diag.count("otf2_open_slice_closed_at_end"), 1);
    for p in ["t.otf2", "t.def", "t/0.evt"] {
        assert!(dir.path().join(p).exists(), "{p}");
    }
    // nothing but the archive is left in the directory
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 3);
    if std::env::var_os("TRACEX_KEEP_OTF2").is_some() {
        let keep = Path::new("/tmp/tracex-otf2-unit");
        let _ = std::fs::remove_dir_all(keep);
        std::fs::create_dir_all(keep).unwrap();
        export(
            sample_trace(),
            &keep.join("t.otf2"),
            &ExportOptions::default(),
        )
        .unwrap();
    }
}

/// A long sorted stream (as the nsys importer pushes it): kernels launched from a thread run
/// later on a stream, linked by flows. What the exporter holds stays bounded by the launch
/// latency, not by the length of the trace.
#[test]
fn memory_does_not_grow_with_the_trace() {
    let dir = tempfile::tempdir().unwrap();
    let mut held = Vec::new();
    for steps in [1_000i64, 20_000] {
        let mut b = TraceBuilder::new();
        let p = b.process(1, "app");
        let cpu = b.thread(p, 1, "main");
        let gpu = b.device(0, "GPU 0");
        let stream = b.gpu_stream(gpu, 0, 1);
        for i in 0..steps {
            let t = i * 1_000;
            b.slice(cpu, t, 100, "cudaLaunchKernel");
            b.cat("cuda_runtime");
            // the kernel starts 5 launches later
            b.slice(stream, t + 5_050, 900, "kernel");
            b.cat("kernel");
            b.flow((cpu, t + 50), (stream, t + 5_050), "launch");
        }
        let mut t = b.finish();
        // already in order, as a sorted importer delivers
        let mut exp = Exporter::create(
            &OutputTarget::Path(dir.path().join(format!("m{steps}.otf2"))),
            &ExportOptions::default(),
        )
        .unwrap();
        let mut events = std::mem::take(&mut t.events);
        events.sort_by_key(|e| tracex_ir::order::OrderKey::of(e, 0));
        for e in events {
            exp.event(&t.defs, &mut t.diag, e).unwrap();
        }
        held.push(exp.max_held);
        assert_eq!(exp.flows.in_flight(), 0);
        exp.finish(&t.defs, &mut t.diag).unwrap();
    }
    assert_eq!(
        held[0], held[1],
        "held back events grew with the trace: {held:?}"
    );
    assert!(held[1] < 40, "{held:?}");
}

#[test]
fn dropped_without_finish_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = sample_trace();
    {
        let mut exp = Exporter::create(
            &OutputTarget::Path(dir.path().join("x.otf2")),
            &ExportOptions::default(),
        )
        .unwrap();
        for e in t.events.clone().into_iter().take(3) {
            exp.event(&t.defs, &mut t.diag, e).unwrap();
        }
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}
