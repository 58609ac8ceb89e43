//! Throughput benchmarks (criterion, bytes/s): Chrome import against plain serde_json typed
//! parsing of the same bytes, import through the sorter and overlap router, Chrome export, and
//! the sorter alone in memory and spilling. Large end-to-end runs with peak RSS are in
//! `scripts/bench.sh`.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use tracex_ir::mem::MemSink;
use tracex_ir::nest::OverlapRouter;
use tracex_ir::order::Sorter;
use tracex_ir::{Defs, Diagnostics, ImportCtx, NullSink, Progress, Sink, Stage};

fn chrome_bytes(events: u64) -> Vec<u8> {
    let mut v = Vec::new();
    tracex_gen::chrome::write(&mut v, events).expect("generate");
    v
}

fn import_into(bytes: &[u8], sink: &mut dyn Stage) -> Defs {
    let mut defs = Defs::new();
    let mut diag = Diagnostics::default();
    let progress = Progress::new();
    let mut ctx = ImportCtx::new(&mut defs, &mut diag, sink, &progress);
    tracex_chrome::import(bytes, &Default::default(), &mut ctx).expect("import");
    sink.end(&mut defs, &mut diag).expect("finish");
    defs
}

fn chrome(c: &mut Criterion) {
    let data = chrome_bytes(200_000);
    let mut g = c.benchmark_group("chrome_import");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(data.len() as u64));
    g.bench_function("serde_json_typed_baseline", |b| {
        b.iter(|| tracex_gen::baseline::parse(&data).expect("parse"))
    });
    g.bench_function("tracex_import", |b| {
        b.iter(|| import_into(&data, &mut NullSink))
    });
    g.bench_function("tracex_import_sorted_routed", |b| {
        b.iter(|| import_into(&data, &mut Sorter::new(OverlapRouter::new(NullSink))))
    });
    g.finish();

    // export: the same trace, already in order, written to a temporary file
    let mut sorted = Sorter::new(OverlapRouter::new(MemSink::default()));
    let defs = import_into(&data, &mut sorted);
    let events = sorted.into_inner().into_inner().events;
    let mut g = c.benchmark_group("chrome_export");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(data.len() as u64));
    let dir = tempfile::tempdir().expect("tempdir");
    let out = tracex_ir::io::OutputTarget::Path(dir.path().join("out.json"));
    g.bench_function("tracex_export", |b| {
        b.iter_batched(
            || (defs.clone(), events.clone()),
            |(defs, events)| {
                let mut diag = Diagnostics::default();
                let mut e =
                    tracex_chrome::Exporter::create(&out, &Default::default()).expect("create");
                for ev in events {
                    e.event(&defs, &mut diag, ev).expect("event");
                }
                e.finish(&defs, &mut diag).expect("finish");
            },
            criterion::BatchSize::LargeInput,
        )
    });
    g.finish();

    let mut g = c.benchmark_group("sorter");
    g.sample_size(10);
    g.throughput(Throughput::Elements(events.len() as u64));
    for (name, budget) in [("in_memory", usize::MAX), ("spilling_8MiB", 8 << 20)] {
        g.bench_function(name, |b| {
            b.iter_batched(
                || {
                    (
                        defs.clone(),
                        events.iter().rev().cloned().collect::<Vec<_>>(),
                    )
                },
                |(mut defs, events)| {
                    let mut diag = Diagnostics::default();
                    let mut s = Sorter::with_budget(NullSink, budget);
                    for ev in events {
                        s.push(&mut defs, &mut diag, ev).expect("event");
                    }
                    s.end(&mut defs, &mut diag).expect("finish");
                },
                criterion::BatchSize::LargeInput,
            )
        });
    }
    g.finish();
}

criterion_group!(benches, chrome);
criterion_main!(benches);
