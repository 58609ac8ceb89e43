//! IR → Chrome JSON, streamed: events are written as they arrive; names, sort indexes, the stack
//! frame table and samples (which Chrome keeps in top-level keys) are written at `finish`.
//!
//! Output: always the object form, closed, one event per line; integer pids and tids ([`ids`]);
//! `ts`/`dur` in µs with exactly three decimals, shifted so that none is negative or too large
//! for the doubles viewers parse them into; slices as `X` (async ones as `b`/`e` with `id2`,
//! ends written so that a stable sort by time nests them), instants as `i`, counters as one `C`
//! per timestamp with every series, flows as `s`/`t`/`f` with their ids, samples as
//! `stackFrames` + `samples`.

mod events;
mod ids;
mod json;
mod kineto;
mod out;

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};

use rustc_hash::{FxHashMap, FxHashSet};
use tracex_ir::time::{NS_PER_SEC, UNIX_SCALE_NS};
use tracex_ir::{
    CounterId, Defs, Diagnostics, Event, FlowBind, FlowId, FlowPoint, FlowRole, Instant, Location,
    Num, ProcessId, Result, Sample, Sink, Slice, StackId, StrId, TrackId, TrackKind,
};

use crate::diag as d;
use crate::options::ExportOptions;
use events::Events;
pub use events::META_KEY;
use ids::Ids;
pub use ids::SYNTHETIC_BASE;
pub use json::MAX_SAFE_ID;
use json::{async_id, meta_args, push_id, push_int, push_str, write_args, write_value, Text};
use out::Out;

/// Name and category written on flow points that have none (catapult drops a flow without a
/// name); the importer reads them back as none.
pub const DEFAULT_FLOW_NAME: &str = "tracex_flow";
pub const DEFAULT_FLOW_CAT: &str = "tracex_flow";
/// Arg of the `e` tracex writes at the end of the trace for an async slice that never ended.
pub const OPEN_ARG: &str = "tracex_open";
/// The `sf` of a sample without a stack: catapult needs a frame for every sample.
pub const NO_STACK_SF: &str = "tracex:nostack";
/// Top-level key with the shift (ns) added to every time written; the importer subtracts it.
pub const TIME_SHIFT_KEY: &str = "tracexTimeShiftNs";
/// Top-level key for a `systemTraceEvents` that is not the string the format defines (Fuchsia
/// writes an object, which Perfetto refuses): kept here, where viewers ignore it.
pub const SYSTEM_EVENTS_OBJECT_KEY: &str = "tracexSystemTraceEvents";

/// The identity of a name tracex made up: the importer does not take it as a name.
const UNNAMED: &[u8] = b"{\"unnamed\":true}";

/// Splits metadata into records viewers read as `M` events and the others, gathered in one JSON
/// object for the args of a name record.
fn split_meta<'a>(
    defs: &Defs,
    meta: &'a tracex_ir::Args,
) -> (Vec<&'a tracex_ir::Arg>, Option<Vec<u8>>) {
    let is_known = |m: &tracex_ir::Arg| events::VIEWER_METADATA.contains(&defs.str(m.key));
    // Known records are written before the name record; when one follows another record in
    // the input, all ride in the name record, so that the importer reads them in input order.
    let in_order = meta
        .iter()
        .skip_while(|m| is_known(m))
        .all(|m| !is_known(m));
    let mut known = Vec::new();
    let mut extra: Option<Vec<u8>> = None;
    for m in meta {
        let key = defs.str(m.key);
        if in_order && is_known(m) {
            known.push(m);
            continue;
        }
        let e = extra.get_or_insert_with(|| b"{".to_vec());
        if e.len() > 1 {
            e.push(b',');
        }
        push_str(e, key);
        e.push(b':');
        e.extend_from_slice(&meta_args(defs, &m.value));
    }
    if let Some(e) = &mut extra {
        e.push(b'}');
    }
    (known, extra)
}

/// The `C` event being gathered: series of one counter group at one timestamp.
struct PendingCounter {
    key: (Option<ProcessId>, StrId, Option<StrId>, Option<StrId>),
    ts: i64,
    values: Vec<(Option<StrId>, Num)>,
}

/// The `e` of an async slice, held until the stream passes its time so that ends at one
/// time come innermost first (a stable sort by time then nests them). An open slice (no end in
/// the input) ends at the end of the trace, marked so that the importer keeps it open: viewers
/// report a `b` without `e` as an error.
struct PendingEnd {
    end: i64,
    seq: u64,
    track: TrackId,
    name: StrId,
    cat: Option<StrId>,
    /// The category `--kineto` writes instead of `cat`.
    kineto_cat: Option<&'static str>,
    ids: (i64, i64),
    tts: Option<i64>,
}

impl PartialEq for PendingEnd {
    fn eq(&self, o: &Self) -> bool {
        (self.end, self.seq) == (o.end, o.seq)
    }
}
impl Eq for PendingEnd {}
impl PartialOrd for PendingEnd {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for PendingEnd {
    /// A max-heap pops the earliest end first, and of equal ends the one begun last.
    fn cmp(&self, o: &Self) -> Ordering {
        o.end.cmp(&self.end).then(self.seq.cmp(&o.seq))
    }
}

pub struct Exporter {
    out: Option<Out>,
    kineto: bool,
    head_written: bool,
    ev: Events,
    ids: Ids,
    /// The time shift, fixed by the first timed event.
    shift: Option<i64>,
    counter: Option<PendingCounter>,
    stacks: FxHashSet<StackId>,
    stackless_samples: bool,
    samples: Option<BufWriter<std::fs::File>>,
    sample_count: u64,
    /// Threads with samples: declared by a name record so that viewers can place the samples.
    sampled: FxHashSet<TrackId>,
    async_ends: BinaryHeap<PendingEnd>,
    async_seq: u64,
    /// The latest time of the trace so far: where slices that never ended are closed.
    trace_end: i64,
    /// Name and category of open flows, written on every point of the flow.
    open_flows: FxHashMap<FlowId, (Option<StrId>, Option<StrId>)>,
}

impl Exporter {
    pub fn create(target: &tracex_ir::io::OutputTarget, opts: &ExportOptions) -> Result<Exporter> {
        Ok(Exporter {
            out: Some(Out::create(target, opts)?),
            kineto: opts.kineto,
            head_written: false,
            ev: Events::new(),
            ids: Ids::new(),
            shift: None,
            counter: None,
            stacks: FxHashSet::default(),
            stackless_samples: false,
            samples: None,
            sample_count: 0,
            sampled: FxHashSet::default(),
            async_ends: BinaryHeap::new(),
            async_seq: 0,
            trace_end: i64::MIN,
            open_flows: FxHashMap::default(),
        })
    }

    fn out(&mut self) -> Result<&mut Out> {
        let out = self.out.as_mut().expect("open");
        if !self.head_written {
            self.head_written = true;
            let shift = self.shift.unwrap_or(0);
            let mut head = b"{".to_vec();
            if shift != 0 {
                push_str(&mut head, TIME_SHIFT_KEY);
                head.push(b':');
                push_int(&mut head, shift);
                head.push(b',');
            }
            head.extend_from_slice(b"\"traceEvents\":[\n");
            out.write_all(&head)?;
        }
        Ok(out)
    }

    /// Hands the events written so far to the writer once they make a chunk of its own (no
    /// copy: copying 32 KiB pieces into the writer's chunks was a fifth of the exporter's time).
    fn flush_buf(&mut self) -> Result<()> {
        if self.ev.buf.len() >= 1 << 20 {
            let mut buf = std::mem::take(&mut self.ev.buf);
            self.out()?.hand_over(&mut buf)?;
            self.ev.buf = buf;
        }
        Ok(())
    }

    /// Writes the held async ends up to `ts`.
    fn flush_ends(&mut self, defs: &Defs, ts: i64) {
        while self.async_ends.peek().is_some_and(|e| e.end <= ts) {
            let e = self.async_ends.pop().expect("peeked");
            let open = e.end == i64::MAX;
            let at = if open { self.trace_end } else { e.end };
            self.ev.begin();
            let cat = e.kineto_cat.map(Text::Str).or(e.cat.map(Text::Id));
            (self.ev).head(defs, "e", (Some(Text::Id(e.name)), cat), e.ids, at);
            let id = async_id(defs, e.track);
            self.ev.buf.extend_from_slice(&id);
            if let Some(t) = e.tts {
                self.ev.buf.extend_from_slice(b",\"tts\":");
                tracex_ir::time::push_micros(&mut self.ev.buf, t);
            }
            if open {
                self.ev.buf.extend_from_slice(b",\"args\":{\"");
                self.ev.buf.extend_from_slice(OPEN_ARG.as_bytes());
                self.ev.buf.extend_from_slice(b"\":true}");
            }
            self.ev.buf.push(b'}');
        }
    }

    /// `,"cname":..,"sf":..,"args":{..}}` closing most events.
    fn tail(
        &mut self,
        defs: &Defs,
        diag: &mut Diagnostics,
        args: &tracex_ir::Args,
        extra: &[(&str, tracex_ir::Value)],
        stack: Option<StackId>,
        color: Option<StrId>,
    ) {
        let Events { buf: b, lits, .. } = &mut self.ev;
        if let Some(c) = color {
            b.extend_from_slice(b",\"cname\":");
            lits.push(b, defs, c);
        }
        if let Some(s) = stack {
            self.stacks.insert(s);
            b.extend_from_slice(b",\"sf\":\"");
            push_int(b, s.0);
            b.push(b'"');
        }
        if !args.is_empty() || !extra.is_empty() {
            b.extend_from_slice(b",\"args\":");
            write_args((b, lits), defs, diag, args, extra);
        }
        b.push(b'}');
    }

    fn slice(&mut self, defs: &Defs, diag: &mut Diagnostics, s: &Slice) {
        let kind = defs.track(s.track).kind;
        let ids = self.ids.ids(defs, &mut self.ev, s.track);
        let is_async = matches!(kind, TrackKind::Async)
            || matches!(kind, TrackKind::Overflow { of, .. } if defs.track(defs.root_track(of)).kind == TrackKind::Async);
        let kin = if self.kineto {
            kineto::slice(defs, kind, s.cat, &s.args)
        } else {
            None
        };
        let kineto_cat = kin.as_ref().and_then(|k| k.cat);
        let extra = kin.as_ref().map_or(&[][..], |k| &k.extra[..]);
        let name = Some(Text::Id(s.name));
        let cat = kineto_cat.map(Text::Str).or(s.cat.map(Text::Id));
        self.ev.begin();
        if is_async {
            let id = async_id(defs, s.track);
            self.ev.head(defs, "b", (name, cat), ids, s.ts);
            self.ev.buf.extend_from_slice(&id);
            if let Some(t) = s.thread_ts {
                self.ev.buf.extend_from_slice(b",\"tts\":");
                tracex_ir::time::push_micros(&mut self.ev.buf, t);
            }
            self.async_seq += 1;
            self.async_ends.push(PendingEnd {
                end: s.dur.map_or(i64::MAX, |d| s.ts + d),
                seq: self.async_seq,
                track: s.track,
                name: s.name,
                cat: s.cat,
                kineto_cat,
                ids,
                tts: s.thread_ts.zip(s.thread_dur).map(|(t, d)| t + d),
            });
            self.tail(defs, diag, &s.args, extra, s.stack, s.color);
            return;
        }
        match s.dur {
            Some(dur) => {
                self.ev.head(defs, "X", (name, cat), ids, s.ts);
                self.ev.buf.extend_from_slice(b",\"dur\":");
                tracex_ir::time::push_micros(&mut self.ev.buf, dur);
            }
            // An open slice stays a B without E, as viewers show "did not end".
            None => self.ev.head(defs, "B", (name, cat), ids, s.ts),
        }
        if let Some(t) = s.thread_ts {
            self.ev.buf.extend_from_slice(b",\"tts\":");
            tracex_ir::time::push_micros(&mut self.ev.buf, t);
        }
        if let (Some(td), Some(_)) = (s.thread_dur, s.dur) {
            self.ev.buf.extend_from_slice(b",\"tdur\":");
            tracex_ir::time::push_micros(&mut self.ev.buf, td);
        }
        self.tail(defs, diag, &s.args, extra, s.stack, s.color);
    }

    fn instant(&mut self, defs: &Defs, diag: &mut Diagnostics, i: &Instant) {
        let kind = defs.track(i.track).kind;
        let ids = self.ids.ids(defs, &mut self.ev, i.track);
        let name = Some(Text::Id(i.name));
        let cat = i.cat.map(Text::Id);
        self.ev.begin();
        match kind {
            TrackKind::Async => {
                self.ev.head(defs, "n", (name, cat), ids, i.ts);
                let id = async_id(defs, i.track);
                self.ev.buf.extend_from_slice(&id);
            }
            TrackKind::Process => {
                self.ev.head(defs, "i", (name, cat), ids, i.ts);
                self.ev.buf.extend_from_slice(b",\"s\":\"p\"");
            }
            TrackKind::Global => {
                self.ev.head(defs, "i", (name, cat), ids, i.ts);
                self.ev.buf.extend_from_slice(b",\"s\":\"g\"");
            }
            _ => {
                self.ev.head(defs, "i", (name, cat), ids, i.ts);
                self.ev.buf.extend_from_slice(b",\"s\":\"t\"");
            }
        }
        self.tail(defs, diag, &i.args, &[], i.stack, i.color);
    }

    fn flush_counter(&mut self, defs: &Defs, diag: &mut Diagnostics) {
        let Some(c) = self.counter.take() else {
            return;
        };
        let (process, name, label, cat) = c.key;
        let pid = match process {
            Some(p) => self.ids.pid(defs, &mut self.ev, p),
            None => self.ids.global_pid(&mut self.ev),
        };
        self.ev.begin();
        let text = (Some(Text::Id(name)), cat.map(Text::Id));
        self.ev.head(defs, "C", text, (pid, pid), c.ts);
        let b = &mut self.ev.buf;
        if let Some(l) = label {
            b.extend_from_slice(b",\"id\":");
            push_str(b, defs.str(l));
        }
        b.extend_from_slice(b",\"args\":{");
        for (i, (series, v)) in c.values.iter().enumerate() {
            if i > 0 {
                b.push(b',');
            }
            push_str(b, series.map_or("value", |s| defs.str(s)));
            b.push(b':');
            match *v {
                Num::Int(x) => push_int(b, x),
                Num::Float(f) if f.is_finite() => {
                    b.extend_from_slice(ryu::Buffer::new().format_finite(f).as_bytes())
                }
                Num::Float(_) => {
                    diag.record(&d::EXPORT_NON_FINITE, Location::Event(self.ev.count));
                    b.extend_from_slice(b"null");
                }
            }
        }
        b.extend_from_slice(b"}}");
    }

    fn counter(
        &mut self,
        defs: &Defs,
        diag: &mut Diagnostics,
        counter: CounterId,
        ts: i64,
        value: Num,
    ) {
        let def = defs.counter(counter);
        let key = (def.process, def.name, def.label, def.cat);
        let series = def.series;
        if let Some(c) = &mut self.counter {
            // one C event per group and timestamp, unless a series repeats
            if c.key == key && c.ts == ts && !c.values.iter().any(|(s, _)| *s == series) {
                c.values.push((series, value));
                return;
            }
        }
        self.flush_counter(defs, diag);
        self.counter = Some(PendingCounter {
            key,
            ts,
            values: vec![(series, value)],
        });
    }

    fn flow(&mut self, defs: &Defs, diag: &mut Diagnostics, f: &FlowPoint) {
        let ids = self.ids.ids(defs, &mut self.ev, f.track);
        let on_thread = matches!(
            defs.track(defs.root_track(f.track)).kind,
            TrackKind::Thread(_) | TrackKind::GpuStream { .. }
        );
        if !on_thread {
            // catapult and Perfetto bind `s`/`t`/`f` to the slices of the thread (pid, tid) only
            diag.record(&d::EXPORT_FLOW_OFF_THREAD, Location::Event(self.ev.count));
        }
        let ph = match f.role {
            FlowRole::Start => "s",
            FlowRole::Step => "t",
            FlowRole::End => "f",
        };
        // Every point of a flow carries its start's name and category: catapult matches the
        // points of a flow by (id, cat, name).
        let (name, cat) = match f.role {
            FlowRole::Start => {
                self.open_flows.insert(f.id, (f.name, f.cat));
                (f.name, f.cat)
            }
            FlowRole::Step => self
                .open_flows
                .get(&f.id)
                .copied()
                .unwrap_or((f.name, f.cat)),
            FlowRole::End => self.open_flows.remove(&f.id).unwrap_or((f.name, f.cat)),
        };
        let mut name = Text::id_or(name, DEFAULT_FLOW_NAME);
        let mut cat = Text::id_or(cat, DEFAULT_FLOW_CAT);
        if self.kineto && kineto::is_launch(Some(cat.str(defs))) {
            (name, cat) = (Text::Str(kineto::FLOW), Text::Str(kineto::FLOW));
        }
        self.ev.begin();
        self.ev.head(defs, ph, (Some(name), Some(cat)), ids, f.ts);
        let b = &mut self.ev.buf;
        b.extend_from_slice(b",\"id\":");
        push_id(b, f.id.0);
        if f.role == FlowRole::End && f.bind == FlowBind::Enclosing {
            b.extend_from_slice(b",\"bp\":\"e\"");
        }
        b.push(b'}');
    }

    fn sample(&mut self, defs: &Defs, diag: &mut Diagnostics, s: &Sample) -> Result<()> {
        let ids = self.ids.ids(defs, &mut self.ev, s.track);
        self.sampled.insert(s.track);
        if self.samples.is_none() {
            let file = tempfile::tempfile().map_err(|e| {
                tracex_ir::io::temp_file_error(e, "to hold samples until the end of the trace")
            })?;
            self.samples = Some(BufWriter::new(file));
        }
        let mut b = Vec::with_capacity(128);
        if self.sample_count > 0 {
            b.extend_from_slice(b",\n");
        }
        self.sample_count += 1;
        b.extend_from_slice(b"{\"pid\":");
        push_int(&mut b, ids.0);
        b.extend_from_slice(b",\"tid\":");
        push_int(&mut b, ids.1);
        b.extend_from_slice(b",\"ts\":");
        match s.ts {
            Some(ts) => tracex_ir::time::push_micros(&mut b, ts + self.ev.shift),
            None => {
                diag.record(&d::EXPORT_UNTIMED_SAMPLE, Location::Nowhere);
                b.push(b'0');
            }
        }
        match s.stack {
            Some(st) => {
                self.stacks.insert(st);
                b.extend_from_slice(b",\"sf\":\"");
                push_int(&mut b, st.0);
                b.push(b'"');
            }
            None => {
                self.stackless_samples = true;
                b.extend_from_slice(b",\"sf\":");
                push_str(&mut b, NO_STACK_SF);
            }
        }
        b.extend_from_slice(b",\"weight\":");
        push_int(&mut b, s.weight);
        if let Some(cpu) = s.cpu {
            b.extend_from_slice(b",\"cpu\":");
            push_int(&mut b, cpu);
        }
        if let Some(n) = s.name {
            b.extend_from_slice(b",\"name\":");
            push_str(&mut b, defs.str(n));
        }
        b.push(b'}');
        self.samples.as_mut().expect("spool").write_all(&b)?;
        Ok(())
    }

    /// Names, sort indexes and other metadata of every process, thread and track.
    fn write_names(&mut self, defs: &Defs) -> Result<()> {
        for i in 0..defs.processes.len() {
            let p = ProcessId(i as u32);
            let proc = defs.process(p);
            let wanted = proc.name.is_some() || proc.sort_index.is_some() || !proc.meta.is_empty();
            if !wanted && !self.ids.has_process(p) {
                continue;
            }
            let pid = self.ids.pid(defs, &mut self.ev, p);
            let proc = defs.process(p);
            let (meta, extra) = split_meta(defs, &proc.meta);
            let written = self.ids.process_named.get(&p).copied();
            // the records viewers know first, then the name record with the others: the
            // importer reads them back in that order
            for m in meta {
                self.ev
                    .meta(defs.str(m.key), pid, None, &meta_args(defs, &m.value));
            }
            match (proc.name, extra) {
                (Some(n), Some(extra)) => {
                    self.ev
                        .name_with(pid, None, defs.str(n), None, Some(&extra))
                }
                (Some(n), None) if written != Some(Some(n)) => {
                    self.ev.name(pid, None, defs.str(n), None)
                }
                (None, Some(extra)) => {
                    let shown = defs.process_display_name(p);
                    self.ev
                        .name_with(pid, None, &shown, Some(UNNAMED), Some(&extra));
                }
                _ => {}
            }
            if let Some(si) = proc.sort_index {
                let a = format!("{{\"sort_index\":{si}}}");
                self.ev.meta("process_sort_index", pid, None, a.as_bytes());
            }
            self.flush_buf()?;
        }
        for i in 0..defs.threads.len() {
            let th = &defs.threads[i];
            let track = th.track;
            let wanted = th.name.is_some() || th.sort_index.is_some() || !th.meta.is_empty();
            if !wanted && !self.ids.has_track(track) {
                continue;
            }
            let (pid, tid) = self.ids.ids(defs, &mut self.ev, track);
            let th = &defs.threads[i];
            let (meta, extra) = split_meta(defs, &th.meta);
            let written = self.ids.track_named.get(&track).copied();
            for m in meta {
                self.ev
                    .meta(defs.str(m.key), pid, Some(tid), &meta_args(defs, &m.value));
            }
            match (th.name, extra) {
                (Some(n), Some(extra)) => {
                    self.ev
                        .name_with(pid, Some(tid), defs.str(n), None, Some(&extra))
                }
                (Some(n), None) if written != Some(Some(n)) => {
                    self.ev.name(pid, Some(tid), defs.str(n), None)
                }
                // A thread with samples and nothing else must be declared, or catapult
                // cannot place its samples.
                (None, extra)
                    if extra.is_some() || (written.is_none() && self.sampled.contains(&track)) =>
                {
                    let shown = defs.track_display_name(track);
                    self.ev
                        .name_with(pid, Some(tid), &shown, Some(UNNAMED), extra.as_deref());
                }
                _ => {}
            }
            if let Some(si) = th.sort_index {
                let a = format!("{{\"sort_index\":{si}}}");
                self.ev
                    .meta("thread_sort_index", pid, Some(tid), a.as_bytes());
            }
            self.flush_buf()?;
        }
        // Tracks written as threads that are not threads: GPU streams and overflow lanes.
        for (t, (pid, tid)) in self.ids.other_tracks(defs) {
            let track = defs.track(t);
            if let Some(n) = track.name {
                if self.ids.track_named.get(&t) != Some(&Some(n)) {
                    self.ev.name(pid, Some(tid), defs.str(n), None);
                }
            }
            if let Some(si) = track.sort_index {
                let a = format!("{{\"sort_index\":{si}}}");
                self.ev
                    .meta("thread_sort_index", pid, Some(tid), a.as_bytes());
            }
        }
        Ok(())
    }

    /// `"stackFrames":{...}` with every referenced stack node and its ancestors.
    fn write_stack_frames(&mut self, defs: &Defs, out: &mut Vec<u8>) {
        let mut all: Vec<StackId> = Vec::new();
        let mut seen: FxHashSet<StackId> = FxHashSet::default();
        for &s in &self.stacks {
            let mut cur = Some(s);
            while let Some(c) = cur {
                if !seen.insert(c) {
                    break;
                }
                all.push(c);
                cur = defs.stacks.node(c).and_then(|n| n.parent);
            }
        }
        all.sort();
        out.extend_from_slice(b",\n\"stackFrames\":{");
        for (i, s) in all.iter().enumerate() {
            if i > 0 {
                out.extend_from_slice(b",\n");
            }
            out.push(b'"');
            push_int(out, s.0);
            out.extend_from_slice(b"\":{\"name\":");
            match defs.stacks.node(*s) {
                Some(n) => {
                    let f = defs.stacks.frame(n.frame);
                    push_str(out, defs.str(f.name));
                    if let Some(m) = f.module {
                        out.extend_from_slice(b",\"category\":");
                        push_str(out, defs.str(m));
                    }
                    if let Some(p) = n.parent {
                        out.extend_from_slice(b",\"parent\":\"");
                        push_int(out, p.0);
                        out.push(b'"');
                    }
                }
                None => push_str(out, "?"),
            }
            out.push(b'}');
        }
        if self.stackless_samples {
            if !all.is_empty() {
                out.extend_from_slice(b",\n");
            }
            push_str(out, NO_STACK_SF);
            out.extend_from_slice(b":{\"name\":\"(no stack)\"}");
        }
        out.push(b'}');
    }
}

impl Sink for Exporter {
    fn event(&mut self, defs: &Defs, diag: &mut Diagnostics, event: Event) -> Result<()> {
        let timed = !matches!(&event, Event::Sample(s) if s.ts.is_none());
        if timed {
            let ts = event.ts();
            if self.shift.is_none() {
                // by whole microseconds: the digits below a microsecond stay as they were, so
                // tools that cut times to microseconds (HTA) cut them as before
                let shift = if ts < 0 {
                    -ts.div_euclid(1000) * 1000
                } else if ts > UNIX_SCALE_NS && defs.clock.origin_unix_ns.is_some() {
                    // Unix times from a source with a known clock (CUPTI, eBPF stacks): µs with
                    // three decimals would need 19 digits, and Perfetto's and HTA's doubles
                    // round back-to-back slices onto each other; so times count from the whole
                    // second of the first, which `baseTimeNanoseconds` gives, as Kineto does
                    -(ts - ts.rem_euclid(NS_PER_SEC))
                } else {
                    0
                };
                self.shift = Some(shift);
                self.ev.shift = shift;
            }
            // an instant at the end of an async slice goes before its `e`, inside it, where the
            // input had it (Fuchsia's nestable `n` steps): viewers nest by file order there
            let passed = if matches!(event, Event::Instant(_)) {
                ts.saturating_sub(1)
            } else {
                ts
            };
            self.flush_ends(defs, passed);
            let end = match &event {
                Event::Slice(s) => s.end_or(ts),
                _ => ts,
            };
            self.trace_end = self.trace_end.max(end);
        }
        if !matches!(event, Event::Counter(_)) && self.counter.is_some() {
            self.flush_counter(defs, diag);
        }
        match &event {
            Event::Slice(s) => self.slice(defs, diag, s),
            Event::Instant(i) => self.instant(defs, diag, i),
            Event::Counter(c) => self.counter(defs, diag, c.counter, c.ts, c.value),
            Event::Flow(f) => self.flow(defs, diag, f),
            Event::Sample(s) => self.sample(defs, diag, s)?,
        }
        self.flush_buf()
    }

    fn finish(&mut self, defs: &Defs, diag: &mut Diagnostics) -> Result<()> {
        self.flush_counter(defs, diag);
        self.flush_ends(defs, i64::MAX);
        self.write_names(defs)?;
        let buf = std::mem::take(&mut self.ev.buf);
        self.out()?.write_all(&buf)?;
        let mut tail: Vec<u8> = b"\n]".to_vec();
        let reserved = [
            "traceEvents",
            "stackFrames",
            "samples",
            "baseTimeNanoseconds",
            TIME_SHIFT_KEY,
        ];
        for m in &defs.meta {
            let mut key = defs.str(m.key);
            if reserved.contains(&key) {
                continue;
            }
            // Perfetto refuses a trace whose systemTraceEvents is not a string
            if key == "systemTraceEvents" && !m.value.json(defs).is_some_and(|j| j.starts_with('"'))
            {
                key = SYSTEM_EVENTS_OBJECT_KEY;
            }
            tail.extend_from_slice(b",\n");
            push_str(&mut tail, key);
            tail.push(b':');
            write_value(&mut tail, defs, &m.value);
        }
        if let Some(o) = defs.clock.origin_unix_ns {
            tail.extend_from_slice(b",\n\"baseTimeNanoseconds\":");
            push_int(&mut tail, o - self.ev.shift);
        }
        if !self.stacks.is_empty() || self.stackless_samples {
            self.write_stack_frames(defs, &mut tail);
        }
        let mut out = self.out.take().expect("finish once");
        out.write_all(&tail)?;
        if let Some(spool) = self.samples.take() {
            let mut f = spool.into_inner().map_err(|e| e.into_error())?;
            f.seek(SeekFrom::Start(0))?;
            out.write_all(b",\n\"samples\":[\n")?;
            let mut chunk = vec![0u8; 1 << 20];
            loop {
                let n = f.read(&mut chunk)?;
                if n == 0 {
                    break;
                }
                out.write_all(&chunk[..n])?;
            }
            out.write_all(b"\n]")?;
        }
        out.write_all(b"}\n")?;
        out.commit()?;
        Ok(())
    }
}
