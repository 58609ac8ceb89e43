//! A stable text rendering of a trace: the golden format for importer tests and the form in
//! which round trips are compared.
//!
//! Nothing in the text depends on the order in which an importer defined things: processes,
//! threads, tracks and counters are numbered by sorting their descriptions, flows by their
//! points, stacks are printed as frame paths, and events are sorted by (track, time, text).

use std::fmt::Write;

use crate::defs::Defs;
use crate::diag::Diagnostics;
use crate::event::{Event, FlowBind, FlowPoint, Num};
use crate::model::{Args, ProcessKind, StackId, TrackKind, Value};
use crate::strings::StrId;

#[derive(Clone, Debug, Default)]
pub struct DumpOptions<'a> {
    /// The diagnostics to print as a table at the end.
    pub diagnostics: Option<&'a Diagnostics>,
}

pub fn dump(defs: &Defs, events: &[Event]) -> String {
    dump_with(defs, events, &DumpOptions::default())
}

/// Appends `s` as a JSON string literal.
pub fn quote(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

pub fn write_value(out: &mut String, defs: &Defs, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Value::UInt(u) => {
            let _ = write!(out, "{u}");
        }
        Value::Float(f) => out.push_str(ryu::Buffer::new().format(*f)),
        Value::Str(s) => quote(out, s),
        Value::Sym(s) => quote(out, defs.str(*s)),
        Value::Json(j) => out.push_str(j),
        Value::JsonSym(j) => out.push_str(defs.str(*j)),
    }
}

struct Ctx<'a> {
    defs: &'a Defs,
    proc_no: Vec<usize>,
    thread_no: Vec<usize>,
    track_no: Vec<usize>,
    counter_no: Vec<usize>,
}

impl Ctx<'_> {
    fn s(&self, id: StrId) -> &str {
        self.defs.str(id)
    }

    fn field(&self, out: &mut String, key: &str, v: Option<StrId>) {
        if let Some(v) = v {
            let _ = write!(out, " {key}=");
            quote(out, self.s(v));
        }
    }

    fn args(&self, out: &mut String, args: &Args) {
        if args.is_empty() {
            return;
        }
        out.push_str(" args={");
        for (i, a) in args.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            quote(out, self.s(a.key));
            out.push(':');
            write_value(out, self.defs, &a.value);
        }
        out.push('}');
    }

    fn stack(&self, out: &mut String, stack: Option<StackId>) {
        if let Some(st) = stack {
            out.push_str(" stack=[");
            for (i, f) in self.defs.stacks.path(st).into_iter().enumerate() {
                if i > 0 {
                    out.push_str("; ");
                }
                let fr = self.defs.stacks.frame(f);
                quote(out, self.s(fr.name));
                if let Some(m) = fr.module {
                    out.push('@');
                    quote(out, self.s(m));
                }
            }
            out.push(']');
        }
    }

    fn flow_point(&self, out: &mut String, p: &FlowPoint) {
        let _ = write!(
            out,
            " K{}@{}/{}",
            self.track_no[p.track.index()],
            p.ts,
            match p.bind {
                FlowBind::Enclosing => "enclosing",
                FlowBind::Next => "next",
            }
        );
    }
}

/// Sorts items by their description and returns each item's canonical number; items not `used`
/// (not printed) are numbered after all used ones so they do not shift the printed numbers.
fn number_by(descs: &[String], used: &[bool]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..descs.len()).collect();
    order.sort_by(|&a, &b| {
        (!used[a], &descs[a])
            .cmp(&(!used[b], &descs[b]))
            .then(a.cmp(&b))
    });
    let mut no = vec![0; descs.len()];
    for (n, &i) in order.iter().enumerate() {
        no[i] = n;
    }
    no
}

fn opt<T: std::fmt::Display>(out: &mut String, key: &str, v: Option<T>) {
    if let Some(v) = v {
        let _ = write!(out, " {key}={v}");
    }
}

pub fn dump_with(defs: &Defs, events: &[Event], opts: &DumpOptions) -> String {
    // Which definitions are in use: only those are printed, so that a definition an exporter
    // cannot write (an unnamed thread without events) does not count as a difference.
    let mut track_used = vec![false; defs.tracks.len()];
    let mut counter_used = vec![false; defs.counters.len()];
    for ev in events {
        match ev {
            Event::Counter(c) => counter_used[c.counter.index()] = true,
            _ => {
                if let Some(t) = ev.track() {
                    track_used[t.index()] = true;
                }
            }
        }
    }
    for i in 0..defs.tracks.len() {
        if track_used[i] {
            let mut t = crate::model::TrackId(i as u32);
            while let TrackKind::Overflow { of, .. } = defs.track(t).kind {
                track_used[of.index()] = true;
                t = of;
            }
        }
    }
    let thread_used: Vec<bool> = defs
        .threads
        .iter()
        .map(|t| {
            track_used[t.track.index()]
                || t.name.is_some()
                || t.sort_index.is_some()
                || !t.meta.is_empty()
        })
        .collect();
    let mut proc_used: Vec<bool> = defs
        .processes
        .iter()
        .map(|p| p.name.is_some() || p.sort_index.is_some() || !p.meta.is_empty())
        .collect();
    for (i, t) in defs.threads.iter().enumerate() {
        if thread_used[i] {
            proc_used[t.process.index()] = true;
        }
    }
    for (i, t) in defs.tracks.iter().enumerate() {
        if track_used[i] {
            if let Some(p) = t.process {
                proc_used[p.index()] = true;
            }
        }
    }
    for (i, c) in defs.counters.iter().enumerate() {
        if counter_used[i] {
            if let Some(p) = c.process {
                proc_used[p.index()] = true;
            }
        }
    }

    let mut ctx = Ctx {
        defs,
        proc_no: Vec::new(),
        thread_no: Vec::new(),
        track_no: Vec::new(),
        counter_no: Vec::new(),
    };

    // Processes.
    let proc_desc: Vec<String> = defs
        .processes
        .iter()
        .map(|p| {
            let mut d = String::new();
            match p.kind {
                ProcessKind::Host => d.push_str("host"),
                ProcessKind::Device { device } => {
                    let _ = write!(d, "device={device}");
                }
            }
            opt(&mut d, "pid", p.os_pid);
            ctx.field(&mut d, "label", p.label);
            ctx.field(&mut d, "name", p.name);
            opt(&mut d, "sort", p.sort_index);
            ctx.field(&mut d, "host", p.host);
            d
        })
        .collect();
    ctx.proc_no = number_by(&proc_desc, &proc_used);

    // Threads.
    let thread_desc: Vec<String> = defs
        .threads
        .iter()
        .map(|t| {
            let mut d = format!("P{}", ctx.proc_no[t.process.index()]);
            opt(&mut d, "tid", t.os_tid);
            ctx.field(&mut d, "label", t.label);
            ctx.field(&mut d, "name", t.name);
            opt(&mut d, "sort", t.sort_index);
            d
        })
        .collect();
    ctx.thread_no = number_by(&thread_desc, &thread_used);

    // Tracks: overflow lanes are described through the track they spill from, so describe the
    // others first.
    let mut track_desc: Vec<String> = vec![String::new(); defs.tracks.len()];
    let describe_base = |ctx: &Ctx, t: &crate::model::Track| -> String {
        let mut d = String::new();
        match t.kind {
            TrackKind::Thread(th) => {
                let _ = write!(d, "thread T{}", ctx.thread_no[th.index()]);
            }
            TrackKind::GpuStream { device, stream } => {
                let _ = write!(d, "gpu device={device} stream={stream}");
            }
            TrackKind::Async => d.push_str("async"),
            TrackKind::Process => d.push_str("process"),
            TrackKind::Global => d.push_str("global"),
            TrackKind::Overflow { .. } => unreachable!(),
        }
        if !matches!(t.kind, TrackKind::Thread(_)) {
            if let Some(p) = t.process {
                let _ = write!(d, " P{}", ctx.proc_no[p.index()]);
            }
            ctx.field(&mut d, "label", t.label);
            ctx.field(&mut d, "name", t.name);
            opt(&mut d, "sort", t.sort_index);
        }
        d
    };
    for (i, t) in defs.tracks.iter().enumerate() {
        if !matches!(t.kind, TrackKind::Overflow { .. }) {
            track_desc[i] = describe_base(&ctx, t);
        }
    }
    for i in 0..defs.tracks.len() {
        if let TrackKind::Overflow { .. } = defs.tracks[i].kind {
            let mut t = crate::model::TrackId(i as u32);
            let mut levels = Vec::new();
            while let TrackKind::Overflow { of, level } = defs.track(t).kind {
                levels.push(level);
                t = of;
            }
            let mut d = track_desc[t.index()].clone();
            for l in levels.iter().rev() {
                let _ = write!(d, " overflow={l}");
            }
            track_desc[i] = d;
        }
    }
    ctx.track_no = number_by(&track_desc, &track_used);

    let counter_desc: Vec<String> = defs
        .counters
        .iter()
        .map(|c| {
            let mut d = String::new();
            if let Some(p) = c.process {
                let _ = write!(d, "P{}", ctx.proc_no[p.index()]);
            } else {
                d.push_str("global");
            }
            ctx.field(&mut d, "name", Some(c.name));
            ctx.field(&mut d, "series", c.series);
            ctx.field(&mut d, "label", c.label);
            ctx.field(&mut d, "unit", c.unit);
            ctx.field(&mut d, "cat", c.cat);
            d
        })
        .collect();
    ctx.counter_no = number_by(&counter_desc, &counter_used);

    let mut out = String::new();
    out.push_str("tracex-dump 1\n");
    if let Some(o) = defs.clock.origin_unix_ns {
        let _ = writeln!(out, "clock origin_unix_ns={o}");
    }
    if let Some(d) = defs.clock.domain {
        out.push_str("clock domain=");
        quote(&mut out, defs.str(d));
        out.push('\n');
    }
    let mut meta: Vec<String> = defs
        .meta
        .iter()
        .map(|a| {
            let mut l = String::from("meta ");
            quote(&mut l, defs.str(a.key));
            l.push('=');
            write_value(&mut l, defs, &a.value);
            l
        })
        .collect();
    meta.sort();
    for l in meta {
        out.push_str(&l);
        out.push('\n');
    }

    let mut lines: Vec<(usize, String)> = Vec::new();
    let meta_lines = |head: &str, args: &Args, into: &mut Vec<String>| {
        for a in args {
            let mut l = format!("{head} meta ");
            quote(&mut l, defs.str(a.key));
            l.push('=');
            write_value(&mut l, defs, &a.value);
            into.push(l);
        }
    };
    for (i, p) in defs.processes.iter().enumerate() {
        if proc_used[i] {
            let mut l = vec![format!("process P{} {}", ctx.proc_no[i], proc_desc[i])];
            meta_lines(&format!("process P{}", ctx.proc_no[i]), &p.meta, &mut l);
            lines.push((ctx.proc_no[i], l.join("\n")));
        }
    }
    lines.sort();
    for (_, l) in lines.drain(..) {
        out.push_str(&l);
        out.push('\n');
    }
    for (i, t) in defs.threads.iter().enumerate() {
        if thread_used[i] {
            let mut l = vec![format!("thread T{} {}", ctx.thread_no[i], thread_desc[i])];
            meta_lines(&format!("thread T{}", ctx.thread_no[i]), &t.meta, &mut l);
            lines.push((ctx.thread_no[i], l.join("\n")));
        }
    }
    lines.sort();
    for (_, l) in lines.drain(..) {
        out.push_str(&l);
        out.push('\n');
    }
    for i in 0..defs.tracks.len() {
        if track_used[i] {
            lines.push((
                ctx.track_no[i],
                format!("track K{} {}", ctx.track_no[i], track_desc[i]),
            ));
        }
    }
    lines.sort();
    for (_, l) in lines.drain(..) {
        out.push_str(&l);
        out.push('\n');
    }
    for i in 0..defs.counters.len() {
        if counter_used[i] {
            lines.push((
                ctx.counter_no[i],
                format!("counter C{} {}", ctx.counter_no[i], counter_desc[i]),
            ));
        }
    }
    lines.sort();
    for (_, l) in lines.drain(..) {
        out.push_str(&l);
        out.push('\n');
    }

    // Events, and flows gathered by id.
    let mut ev_lines: Vec<(usize, i64, String)> = Vec::with_capacity(events.len());
    let mut flows: rustc_hash::FxHashMap<crate::event::FlowId, Vec<&FlowPoint>> =
        Default::default();
    let nc = defs.tracks.len();
    for ev in events {
        let mut l = String::new();
        match ev {
            Event::Slice(s) => {
                let _ = write!(l, "K{} slice ts={}", ctx.track_no[s.track.index()], s.ts);
                match s.dur {
                    Some(d) => {
                        let _ = write!(l, " dur={d}");
                    }
                    None => l.push_str(" dur=open"),
                }
                ctx.field(&mut l, "name", Some(s.name));
                ctx.field(&mut l, "cat", s.cat);
                ctx.field(&mut l, "color", s.color);
                opt(&mut l, "tts", s.thread_ts);
                opt(&mut l, "tdur", s.thread_dur);
                ctx.stack(&mut l, s.stack);
                ctx.args(&mut l, &s.args);
                ev_lines.push((ctx.track_no[s.track.index()], s.ts, l));
            }
            Event::Instant(i) => {
                let _ = write!(l, "K{} instant ts={}", ctx.track_no[i.track.index()], i.ts);
                ctx.field(&mut l, "name", Some(i.name));
                ctx.field(&mut l, "cat", i.cat);
                ctx.field(&mut l, "color", i.color);
                ctx.stack(&mut l, i.stack);
                ctx.args(&mut l, &i.args);
                ev_lines.push((ctx.track_no[i.track.index()], i.ts, l));
            }
            Event::Sample(s) => {
                let _ = write!(l, "K{} sample", ctx.track_no[s.track.index()]);
                match s.ts {
                    Some(ts) => {
                        let _ = write!(l, " ts={ts}");
                    }
                    None => l.push_str(" ts=none"),
                }
                let _ = write!(l, " weight={}", s.weight);
                opt(&mut l, "cpu", s.cpu);
                ctx.field(&mut l, "name", s.name);
                ctx.stack(&mut l, s.stack);
                ev_lines.push((ctx.track_no[s.track.index()], ev.ts(), l));
            }
            Event::Counter(c) => {
                let _ = write!(
                    l,
                    "C{} value ts={} value=",
                    ctx.counter_no[c.counter.index()],
                    c.ts
                );
                match c.value {
                    Num::Int(i) => {
                        let _ = write!(l, "{i}");
                    }
                    Num::Float(f) => l.push_str(ryu::Buffer::new().format(f)),
                }
                ev_lines.push((nc + ctx.counter_no[c.counter.index()], c.ts, l));
            }
            Event::Flow(f) => flows.entry(f.id).or_default().push(f),
        }
    }
    ev_lines.sort();
    for (_, _, l) in &ev_lines {
        out.push_str(l);
        out.push('\n');
    }
    let mut flow_lines: Vec<(i64, String)> = flows
        .into_values()
        .map(|mut pts| {
            pts.sort_by_key(|p| (p.role, p.ts));
            let mut l = String::from("flow");
            ctx.field(&mut l, "name", pts[0].name);
            ctx.field(&mut l, "cat", pts[0].cat);
            for (i, p) in pts.iter().enumerate() {
                if i > 0 {
                    l.push_str(" ->");
                }
                ctx.flow_point(&mut l, p);
            }
            (pts[0].ts, l)
        })
        .collect();
    flow_lines.sort();
    for (_, l) in &flow_lines {
        out.push_str(l);
        out.push('\n');
    }
    if let Some(diag) = opts.diagnostics {
        for d in diag.iter() {
            let _ = write!(
                out,
                "diag {} count={} first={}",
                d.kind.name, d.count, d.first
            );
            if let Some(detail) = &d.detail {
                out.push_str(" detail=");
                quote(&mut out, detail);
            }
            out.push('\n');
        }
    }
    out
}
