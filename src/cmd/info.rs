//! `tracex info`: what is in a trace.

use std::collections::BTreeMap;
use std::io::Write;

use rustc_hash::FxHashMap;
use serde_json::json;
use tracex_ir::format::Options;
use tracex_ir::kind::classify;
use tracex_ir::{Defs, Diagnostics, Event, Sink, StrId, TrackKind};

use crate::cli::InfoArgs;
use crate::formats;

#[derive(Default)]
struct Counts {
    /// Events by kind, by [`Event::kind_index`] (a map per event was 2% of an import).
    events: [u64; 5],
    by_kind: BTreeMap<&'static str, u64>,
    /// Filled from `slices_by_cat` at the end: classifying one category per slice was 4%.
    slices_by_kind: BTreeMap<&'static str, u64>,
    /// Slices and instants by their exact category, for per-table checks (named at the end).
    slices_by_cat: FxHashMap<Option<StrId>, u64>,
    instants_by_cat: FxHashMap<Option<StrId>, u64>,
    open_slices: u64,
    /// Flows, counted by their start points (each flow has exactly one).
    flows: u64,
    untimed_samples: u64,
    first: Option<i64>,
    last: Option<i64>,
}

impl Counts {
    /// The counts by kind, once every event is in.
    fn tally(&mut self, defs: &Defs) {
        for (name, n) in Event::KIND_NAMES.iter().zip(self.events) {
            if n > 0 {
                self.by_kind.insert(name, n);
            }
        }
        for (cat, n) in &self.slices_by_cat {
            let k = classify(defs.opt_str(*cat)).name();
            *self.slices_by_kind.entry(k).or_default() += n;
        }
    }
}

impl Sink for Counts {
    fn event(&mut self, _: &Defs, _: &mut Diagnostics, e: Event) -> tracex_ir::Result<()> {
        let c = self;
        c.events[e.kind_index()] += 1;
        let mut span = |start: i64, end: i64| {
            c.first = Some(c.first.map_or(start, |f| f.min(start)));
            c.last = Some(c.last.map_or(end, |l| l.max(end)));
        };
        match &e {
            Event::Slice(s) => {
                span(s.ts, s.end_or(s.ts));
                if s.dur.is_none() {
                    c.open_slices += 1;
                }
                *c.slices_by_cat.entry(s.cat).or_default() += 1;
            }
            Event::Sample(s) => match s.ts {
                Some(t) => span(t, t),
                None => c.untimed_samples += 1,
            },
            Event::Instant(i) => {
                span(i.ts, i.ts);
                *c.instants_by_cat.entry(i.cat).or_default() += 1;
            }
            Event::Flow(f) => {
                span(f.ts, f.ts);
                if f.role == tracex_ir::FlowRole::Start {
                    c.flows += 1;
                }
            }
            other => {
                let t = other.ts();
                span(t, t);
            }
        }
        Ok(())
    }
    fn finish(&mut self, _: &Defs, _: &mut Diagnostics) -> tracex_ir::Result<()> {
        Ok(())
    }
}

pub fn run(args: &InfoArgs, quiet: bool) -> anyhow::Result<()> {
    let mut sources = super::open_sources(std::slice::from_ref(&args.input), args.from.as_deref())?;
    let sniffed: Vec<(String, String)> = formats::sniff::sniff_all(&sources[0].input.probe())
        .into_iter()
        .map(|(f, c)| (f.name.to_string(), formats::sniff::describe(c)))
        .collect();
    let format = sources[0].format.name;
    let compressed = sources[0].input.compressed;
    let mut c = Counts::default();
    let (defs, diag) = super::run(
        &mut sources,
        Options::default(),
        &args.common,
        crate::pipeline::Align::Clock,
        &mut c,
        quiet,
    )?;
    c.tally(&defs);
    let mut out = std::io::stdout().lock();
    let mut tracks: BTreeMap<&str, u64> = BTreeMap::new();
    for t in &defs.tracks {
        let k = match t.kind {
            TrackKind::Thread(_) => "thread",
            TrackKind::GpuStream { .. } => "gpu_stream",
            TrackKind::Async => "async",
            TrackKind::Process => "process",
            TrackKind::Global => "global",
            TrackKind::Overflow { .. } => "overflow",
        };
        *tracks.entry(k).or_default() += 1;
    }
    let diags: Vec<_> = diag
        .iter()
        .map(|d| {
            json!({"name": d.kind.name, "severity": d.kind.severity.to_string(), "count": d.count,
                   "first": d.first.to_string(), "help": d.kind.help})
        })
        .collect();
    let processes: Vec<_> = (0..defs.processes.len())
        .map(|i| {
            let id = tracex_ir::ProcessId(i as u32);
            let p = defs.process(id);
            let threads = defs.threads.iter().filter(|t| t.process == id).count();
            json!({"name": defs.process_display_name(id), "pid": p.os_pid, "threads": threads})
        })
        .collect();
    let report = json!({
        "input": args.input,
        "format": format,
        "compressed": compressed,
        "sniffers": sniffed.iter().map(|(f, c)| json!({"format": f, "answer": c})).collect::<Vec<_>>(),
        "events": c.by_kind,
        "slices_by_kind": c.slices_by_kind,
        "slices_by_cat": by_cat_name(&defs, &c.slices_by_cat),
        "instants_by_cat": by_cat_name(&defs, &c.instants_by_cat),
        "open_slices": c.open_slices,
        "flows": c.flows,
        "untimed_samples": c.untimed_samples,
        "processes": defs.processes.len(),
        "threads": defs.threads.len(),
        "tracks": tracks,
        "counter_series": defs.counters.len(),
        "stack_nodes": defs.stacks.len(),
        "time": {"first_ns": c.first, "last_ns": c.last, "span_ns": c.first.zip(c.last).map(|(a, b)| b - a),
                 "clock_origin_unix_ns": defs.clock.origin_unix_ns},
        "process_list": processes,
        "diagnostics": diags,
    });
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
        return Ok(());
    }
    writeln!(
        out,
        "input:      {}{}",
        args.input,
        if compressed { " (gzip)" } else { "" }
    )?;
    writeln!(
        out,
        "format:     {format}   (sniffers: {})",
        sniffed
            .iter()
            .map(|(f, c)| format!("{f} {c}"))
            .collect::<Vec<_>>()
            .join(", ")
    )?;
    let total: u64 = c.by_kind.values().sum();
    writeln!(out, "events:     {total}")?;
    for (k, n) in &c.by_kind {
        writeln!(out, "  {k:<10} {n}")?;
    }
    if !c.slices_by_kind.is_empty() {
        writeln!(out, "slices by kind:")?;
        for (k, n) in &c.slices_by_kind {
            writeln!(out, "  {k:<10} {n}")?;
        }
    }
    if c.open_slices > 0 {
        writeln!(out, "open slices (never ended): {}", c.open_slices)?;
    }
    writeln!(out, "flows:      {}", c.flows)?;
    writeln!(out, "processes:  {}", defs.processes.len())?;
    writeln!(out, "threads:    {}", defs.threads.len())?;
    writeln!(
        out,
        "tracks:     {}",
        tracks
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    )?;
    writeln!(out, "counters:   {} series", defs.counters.len())?;
    if let (Some(a), Some(b)) = (c.first, c.last) {
        writeln!(
            out,
            "time:       {a} .. {b} ns (span {} = {:.6} s)",
            b - a,
            (b - a) as f64 / 1e9
        )?;
    }
    if let Some(o) = defs.clock.origin_unix_ns {
        writeln!(out, "clock:      ts 0 = unix {o} ns")?;
    }
    if diag.is_empty() {
        writeln!(out, "diagnostics: none")?;
    } else {
        writeln!(out, "diagnostics:")?;
        for d in diag.iter() {
            writeln!(
                out,
                "  {:<7} {} ×{} (first at {})",
                d.kind.severity, d.kind.name, d.count, d.first
            )?;
        }
    }
    Ok(())
}

/// Counts by category name ("" when none), sorted.
fn by_cat_name(defs: &Defs, counts: &FxHashMap<Option<StrId>, u64>) -> BTreeMap<String, u64> {
    let mut named = BTreeMap::new();
    for (cat, n) in counts {
        *named
            .entry(defs.opt_str(*cat).unwrap_or_default().to_string())
            .or_default() += n;
    }
    named
}
