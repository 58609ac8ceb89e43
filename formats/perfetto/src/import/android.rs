//! Android system data: atrace markers (ftrace `print` events) as slices, instants and counters
//! of their threads and processes, as trace processor reads them; the process tree's names; GPU
//! counters. Other ftrace events are counted by kind.

use std::io;

use rustc_hash::FxHashMap;
use tracex_ir::codec::{self, Decoder};
use tracex_ir::{
    CounterDef, CounterId, CounterValue, Event, ImportCtx, Instant, Location, NamePriority, Num,
    Process, ProcessId, ProcessKind, Result, Slice, StrId, ThreadId, Track, TrackId, TrackKind,
    Value,
};

use super::clock::BOOTTIME;
use super::ordered::{End, Rec, TimeOrdered};
use super::runs::{Fields, Record, Runs, RUN_BYTES};
use super::sequence::Sequence;
use super::tally::Tally;
use super::tracks::TrackMap;
use crate::diag as d;
use crate::pb::gpu_counter_descriptor::GpuCounterSpec;
use crate::pb::gpu_counter_event::gpu_counter::Value as GpuValue;
use crate::pb::{FtraceEventBundle, GpuCounterEvent, ProcessTree};

/// `BUILTIN_CLOCK_MONOTONIC_RAW`, the clock of ftrace's `mono_raw`.
const MONOTONIC_RAW: u32 = 5;

/// Names of ftrace event kinds (`FtraceEvent` payload field numbers) for the tally of skipped
/// ones; others are named by number.
const FTRACE_KINDS: &[(u32, &str)] = &[
    (4, "sched_switch"),
    (11, "cpu_frequency"),
    (13, "cpu_idle"),
    (17, "sched_wakeup"),
    (18, "sched_blocked_reason"),
    (20, "sched_waking"),
    (35, "lowmemory_kill"),
    (36, "irq_handler_entry"),
    (50, "binder_transaction"),
    (51, "binder_transaction_received"),
    (57, "workqueue_execute_end"),
    (58, "workqueue_execute_start"),
    (113, "suspend_resume"),
    (235, "task_newtask"),
    (236, "task_rename"),
    (238, "sched_process_exit"),
    (239, "sched_process_fork"),
    (240, "sched_process_free"),
    (313, "rss_stat"),
    (326, "oom_score_adj_update"),
    (329, "sys_enter"),
    (330, "sys_exit"),
    (331, "zero"),
    (332, "gpu_frequency"),
    (333, "sde_tracing_mark_write"),
    (348, "dpu_tracing_mark_write"),
    (349, "g2d_tracing_mark_write"),
    (350, "mali_tracing_mark_write"),
    (488, "gpu_work_period"),
];

fn ftrace_kind(field: u32) -> String {
    match FTRACE_KINDS.iter().find(|(f, _)| *f == field) {
        Some((_, name)) => format!("ftrace {name}"),
        None => format!("ftrace field {field}"),
    }
}

/// What tracex reads of one `FtraceEvent`: its time, thread and payload.
#[derive(Debug, Default, PartialEq)]
struct FtraceEvent<'a> {
    ts: Option<u64>,
    tid: Option<u32>,
    /// The payload's field number (the event kind) and bytes.
    payload: Option<(u32, &'a [u8])>,
}

/// Reads an `FtraceEvent` (or `None` where it does not decode): its payload is one of hundreds
/// of kinds, kept undecoded so that skipped kinds can be named by number.
fn ftrace_event(mut b: &[u8]) -> Option<FtraceEvent<'_>> {
    use prost::encoding::{decode_key, decode_varint, skip_field, DecodeContext, WireType};
    let mut e = FtraceEvent::default();
    while !b.is_empty() {
        let (field, wire) = decode_key(&mut b).ok()?;
        match (field, wire) {
            (1, WireType::Varint) => e.ts = Some(decode_varint(&mut b).ok()?),
            (2, WireType::Varint) => e.tid = Some(decode_varint(&mut b).ok()? as u32),
            (f, WireType::LengthDelimited) if f >= 3 => {
                let len = usize::try_from(decode_varint(&mut b).ok()?).ok()?;
                let body = b.get(..len)?;
                e.payload = Some((f, body));
                b = &b[len..];
            }
            _ => skip_field(wire, field, &mut b, DecodeContext::default()).ok()?,
        }
    }
    Some(e)
}

/// One atrace marker (the text of a `print` event), as trace processor parses it.
#[derive(Debug, PartialEq)]
enum Marker<'a> {
    /// `B|tgid|name`: a slice of the writing thread begins.
    Begin { tgid: i64, name: &'a str },
    /// `E` or `E|tgid`: the thread's innermost slice ends.
    End { tgid: i64 },
    /// `S|tgid|name|cookie` / `F|...`: an async slice of the process on the track of its name;
    /// `G|tgid|track|name|cookie` / `H|tgid|track|cookie`: the same on a named track.
    AsyncBegin {
        tgid: i64,
        track: &'a str,
        name: &'a str,
        cookie: i64,
    },
    AsyncEnd {
        tgid: i64,
        track: &'a str,
        cookie: i64,
    },
    /// `I|tgid|name`: an instant on the thread; `N|tgid|track|name`: on a named track.
    Instant {
        tgid: i64,
        track: Option<&'a str>,
        name: &'a str,
    },
    /// `C|tgid|name|value`: a counter of the process.
    Counter {
        tgid: i64,
        name: &'a str,
        value: i64,
    },
    /// Chrome's clock-sync marker: about the recording.
    ClockSync,
}

/// Parses atrace's `print` text; `None`: not an atrace marker.
fn marker(text: &str) -> Option<Marker<'_>> {
    let text = text.trim_end_matches(['\n', '\0']);
    if text.starts_with("trace_event_clock_sync:") {
        return Some(Marker::ClockSync);
    }
    let f: Vec<&str> = text.split('|').collect();
    let at = |i: usize| f.get(i).copied().unwrap_or("");
    let named = |i: usize| Some(at(i)).filter(|s| !s.is_empty());
    let tgid = at(1).parse::<u32>().ok().map(i64::from);
    let m = match at(0).chars().next()? {
        'B' => Marker::Begin {
            tgid: tgid?,
            // the rest, separators and all (names may hold '|')
            name: Some(text.splitn(3, '|').nth(2).unwrap_or(""))
                .filter(|s| !s.is_empty())
                .unwrap_or("[empty slice name]"),
        },
        'E' => Marker::End {
            tgid: tgid.unwrap_or(0),
        },
        'S' => Marker::AsyncBegin {
            tgid: tgid?,
            track: named(2)?,
            name: named(2)?,
            cookie: at(3).parse().ok()?,
        },
        'F' => Marker::AsyncEnd {
            tgid: tgid?,
            track: named(2)?,
            cookie: at(3).parse().ok()?,
        },
        'I' => Marker::Instant {
            tgid: tgid?,
            track: None,
            name: named(2)?,
        },
        'N' => Marker::Instant {
            tgid: tgid?,
            track: Some(named(2)?),
            name: named(3)?,
        },
        'C' => Marker::Counter {
            tgid: tgid?,
            name: named(2)?,
            value: at(3).parse().ok()?,
        },
        'G' => Marker::AsyncBegin {
            tgid: tgid?,
            track: named(2)?,
            name: named(3)?,
            cookie: at(4).parse().ok()?,
        },
        // `H|tgid|track|cookie`, or with the slice's name before the cookie
        'H' => Marker::AsyncEnd {
            tgid: tgid?,
            track: named(2)?,
            cookie: named(4).unwrap_or(at(3)).parse().ok()?,
        },
        _ => return None,
    };
    Some(m)
}

/// How a GPU counter's samples are placed.
#[derive(Clone, Copy)]
struct GpuCounter {
    counter: CounterId,
    /// The value covers the time until the next sample (placed at its own time); otherwise
    /// it covers the time since the previous one, and is placed at that one's time.
    forwards: bool,
}

/// What the Android payloads need across packets.
#[derive(Default)]
pub struct Android {
    /// tid → tgid, from the process tree and from atrace markers.
    pub tgid: FxHashMap<i64, i64>,
    /// The thread of each tid seen in ftrace.
    threads: FxHashMap<i64, ThreadId>,
    /// Async tracks by process and track name.
    async_tracks: FxHashMap<(i64, StrId), TrackId>,
    /// Async begins and ends, matched by cookie in time order at the end.
    async_points: AsyncPoints,
    /// Atrace counters by process and name.
    counters: FxHashMap<(i64, StrId), CounterId>,
    /// GPU devices, and their counters by name.
    gpus: FxHashMap<i32, ProcessId>,
    gpu_counters: FxHashMap<(i32, String), CounterId>,
    /// Counters described inline: their ids are global to the trace.
    inline_gpu: FxHashMap<u32, GpuCounter>,
    /// Backwards-looking counters: the time of the last sample, which the next value belongs to.
    pending: FxHashMap<CounterId, i64>,
    /// Backwards-looking first readings, which cover time before the first sample.
    first_readings: u64,
    undescribed: u64,
    /// ftrace events of kinds not mapped.
    ftrace_unmapped: Tally,
}

/// What the Android payloads write to besides their own state: the importer's tracks, its
/// begins and ends matched in time order, and its tallies of skipped packets.
pub struct Out<'a> {
    pub tracks: &'a mut TrackMap,
    pub ordered: &'a mut TimeOrdered,
    pub unmapped: &'a mut Tally,
    pub bookkeeping: &'a mut Tally,
}

/// A GPU counter's unit as trace processor writes it: numerator units joined by `:`, then
/// `/` and the denominator's.
fn gpu_unit(spec: &GpuCounterSpec) -> Option<String> {
    fn symbol(u: i32) -> &'static str {
        match u {
            1 => "bit",
            2 => "Kb",
            3 => "Mb",
            4 => "Gb",
            5 => "Tb",
            6 => "Pb",
            7 => "B",
            8 => "KB",
            9 => "MB",
            10 => "GB",
            11 => "TB",
            12 => "PB",
            13 => "Hz",
            14 => "KHz",
            15 => "MHz",
            16 => "GHz",
            17 => "THz",
            18 => "PHz",
            19 => "ns",
            20 => "us",
            21 => "ms",
            22 => "s",
            23 => "min",
            24 => "h",
            25 => "Vertex",
            26 => "Pixel",
            27 => "Triangle",
            38 => "Primitive",
            39 => "Fragment",
            28 => "mW",
            29 => "W",
            30 => "kW",
            31 => "J",
            32 => "V",
            33 => "A",
            34 => "C",
            35 => "F",
            36 => "K",
            37 => "%",
            40 => "Instruction",
            0 => "",
            _ => "Unknown",
        }
    }
    if spec.numerator_units.is_empty() && spec.denominator_units.is_empty() {
        return None;
    }
    let mut unit = spec
        .numerator_units
        .iter()
        .map(|&u| symbol(u))
        .collect::<Vec<_>>()
        .join(":");
    let mut sep = '/';
    for s in spec.denominator_units.iter().map(|&u| symbol(u)) {
        if !s.is_empty() {
            unit.push(sep);
            unit.push_str(s);
            sep = ':';
        }
    }
    Some(unit)
}

impl Android {
    /// Names every process and thread of a process tree, and learns which process each thread
    /// belongs to.
    pub fn process_tree(&mut self, ctx: &mut ImportCtx, out: &mut Out, tree: &ProcessTree) {
        for p in &tree.processes {
            let Some(pid) = p.pid.map(i64::from) else {
                continue;
            };
            let id = out.tracks.process_by_pid(ctx.defs, pid);
            if let Some(first) = p.cmdline.first().filter(|c| !c.is_empty()) {
                let n = ctx.defs.intern(first);
                ctx.defs.set_process_name(id, n, NamePriority::Explicit);
                let key = ctx.defs.intern("cmdline");
                tracex_ir::defs::set_arg(
                    &mut ctx.defs.process_mut(id).meta,
                    key,
                    Value::str(p.cmdline.join(" ")),
                );
            }
            // a process's main thread has its pid
            self.tgid.entry(pid).or_insert(pid);
        }
        for t in &tree.threads {
            let Some(tid) = t.tid.map(i64::from) else {
                continue;
            };
            if let Some(tgid) = t.tgid.map(i64::from) {
                self.tgid.insert(tid, tgid);
            }
            let th = self.ftrace_thread(ctx, out.tracks, tid, None);
            if let Some(n) = t.name.as_deref().filter(|n| !n.is_empty()) {
                let n = ctx.defs.intern(n);
                ctx.defs.set_thread_name(th, n, NamePriority::Explicit);
            }
        }
    }

    /// The thread of an ftrace event's tid, in process `tgid` when a marker names it, else in
    /// the process the process tree gives, else in a process of its own tid.
    fn ftrace_thread(
        &mut self,
        ctx: &mut ImportCtx,
        tracks: &mut TrackMap,
        tid: i64,
        tgid: Option<i64>,
    ) -> ThreadId {
        if let Some(&t) = self.threads.get(&tid) {
            return t;
        }
        let pid = tgid
            .filter(|&g| g != 0)
            .or_else(|| self.tgid.get(&tid).copied())
            .unwrap_or(tid);
        self.tgid.entry(tid).or_insert(pid);
        let t = tracks.thread_by_tid(ctx.defs, pid, tid);
        self.threads.insert(tid, t);
        t
    }

    /// The track of thread `tid`.
    fn thread_track(
        &mut self,
        ctx: &mut ImportCtx,
        tracks: &mut TrackMap,
        tid: i64,
        tgid: i64,
    ) -> TrackId {
        let th = self.ftrace_thread(ctx, tracks, tid, Some(tgid));
        ctx.defs.thread(th).track
    }

    /// The ftrace events of one CPU: atrace markers mapped, other kinds counted. `time` gives
    /// the IR time of a timestamp on a clock.
    pub fn ftrace(
        &mut self,
        ctx: &mut ImportCtx,
        out: &mut Out,
        time: &mut impl FnMut(u32, u64) -> Option<i64>,
        at: u64,
        bundle: &FtraceEventBundle,
    ) -> Result<()> {
        if bundle.compact_sched.is_some() {
            out.unmapped.add("ftrace compact_sched", Location::Byte(at));
        }
        // the clock: BOOTTIME unless the bundle says otherwise; the ftrace global and local
        // clocks through the bundle's pair of readings
        let (clock, shift) = match bundle.ftrace_clock.unwrap_or(0) {
            0 => (BOOTTIME, 0),
            4 => (MONOTONIC_RAW, 0),
            _ => match (bundle.ftrace_timestamp, bundle.boot_timestamp) {
                (Some(f), Some(b)) => (BOOTTIME, b as i128 - f as i128),
                _ => {
                    ctx.diag
                        .record(&d::IMPORT_UNKNOWN_CLOCK, Location::Byte(at));
                    return Ok(());
                }
            },
        };
        for raw in &bundle.event {
            let Some(e) = ftrace_event(raw) else {
                ctx.diag.record_detail(
                    &d::IMPORT_BAD_PACKET,
                    Location::Byte(at),
                    "an ftrace event does not decode",
                );
                continue;
            };
            let Some((kind, payload)) = e.payload else {
                continue;
            };
            if kind != 3 {
                self.ftrace_unmapped
                    .add(ftrace_kind(kind), Location::Byte(at));
                continue;
            }
            let Some(ts) = e.ts.and_then(|ts| {
                let shifted = u64::try_from(ts as i128 + shift).ok()?;
                time(clock, shifted)
            }) else {
                ctx.diag
                    .record(&d::IMPORT_BAD_TIMESTAMP, Location::Byte(at));
                continue;
            };
            let buf = <crate::pb::PrintFtraceEvent as prost::Message>::decode(payload)
                .ok()
                .and_then(|p| p.buf)
                .unwrap_or_default();
            let tid = i64::from(e.tid.unwrap_or(0));
            match marker(&buf) {
                Some(m) => self.marker(ctx, out, at, ts, tid, m)?,
                None => ctx
                    .diag
                    .record_detail(&d::IMPORT_ATRACE_UNPARSED, Location::Byte(at), buf),
            }
        }
        Ok(())
    }

    /// The process track of `tgid` named `name`, for async slices and instants.
    fn named_track(
        &mut self,
        ctx: &mut ImportCtx,
        tracks: &mut TrackMap,
        tgid: i64,
        name: &str,
    ) -> TrackId {
        let name = ctx.defs.intern(name);
        if let Some(&t) = self.async_tracks.get(&(tgid, name)) {
            return t;
        }
        let process = tracks.process_by_pid(ctx.defs, tgid);
        let t = ctx.defs.add_track(Track {
            kind: TrackKind::Async,
            process: Some(process),
            name: Some(name),
            label: None,
            sort_index: None,
        });
        self.async_tracks.insert((tgid, name), t);
        t
    }

    fn marker(
        &mut self,
        ctx: &mut ImportCtx,
        out: &mut Out,
        at: u64,
        ts: i64,
        tid: i64,
        m: Marker<'_>,
    ) -> Result<()> {
        match m {
            // begins and ends in time order at the end: a thread's end may come first in the
            // file, its CPU's buffer read before the one that holds the begin
            Marker::Begin { tgid, name } => {
                let track = self.thread_track(ctx, out.tracks, tid, tgid);
                let name = ctx.defs.intern(name);
                let begin = Rec::Begin(Slice::new(track, ts, 0, name));
                out.ordered.keep(track, begin)?;
            }
            Marker::End { tgid } => {
                let track = self.thread_track(ctx, out.tracks, tid, tgid);
                out.ordered.keep(track, Rec::End(End::plain(ts, at)))?;
            }
            Marker::AsyncBegin {
                tgid,
                track,
                name,
                cookie,
            } => {
                let track = self.named_track(ctx, out.tracks, tgid, track);
                let mut s = Slice::new(track, ts, 0, ctx.defs.intern(name));
                let key = ctx.defs.intern("cookie");
                tracex_ir::defs::set_arg(&mut s.args, key, Value::Int(cookie));
                self.async_points.push(ts, track, cookie, Some(s))?;
            }
            Marker::AsyncEnd {
                tgid,
                track,
                cookie,
            } => {
                let track = self.named_track(ctx, out.tracks, tgid, track);
                self.async_points.push(ts, track, cookie, None)?;
            }
            Marker::Instant { tgid, track, name } => {
                let track = match track {
                    Some(t) => self.named_track(ctx, out.tracks, tgid, t),
                    None => self.thread_track(ctx, out.tracks, tid, tgid),
                };
                let name = ctx.defs.intern(name);
                ctx.emit(Event::Instant(Instant::new(track, ts, name)))?;
            }
            Marker::Counter { tgid, name, value } => {
                let name = ctx.defs.intern(name);
                let counter = match self.counters.get(&(tgid, name)) {
                    Some(&c) => c,
                    None => {
                        let process = out.tracks.process_by_pid(ctx.defs, tgid);
                        let c = ctx.defs.add_counter(CounterDef {
                            process: Some(process),
                            name,
                            series: None,
                            label: None,
                            unit: None,
                            cat: None,
                        });
                        self.counters.insert((tgid, name), c);
                        c
                    }
                };
                ctx.emit(Event::Counter(CounterValue {
                    counter,
                    ts,
                    value: Num::Int(value),
                }))?;
            }
            Marker::ClockSync => out.bookkeeping.add("atrace clock sync", Location::Byte(at)),
        }
        Ok(())
    }

    /// The counter `spec` describes on GPU `gpu`; one per GPU and name, as trace processor
    /// makes them.
    fn gpu_counter(&mut self, ctx: &mut ImportCtx, gpu: i32, spec: &GpuCounterSpec) -> GpuCounter {
        let name = spec.name.clone().unwrap_or_default();
        let forwards = spec.value_direction == Some(2);
        if let Some(&counter) = self.gpu_counters.get(&(gpu, name.clone())) {
            return GpuCounter { counter, forwards };
        }
        let process = *self.gpus.entry(gpu).or_insert_with(|| {
            let name = ctx.defs.intern(&format!("GPU {gpu}"));
            ctx.defs.add_process(Process {
                kind: ProcessKind::Device {
                    device: gpu.max(0) as u32,
                },
                name: Some(name),
                name_priority: NamePriority::Inferred,
                ..Default::default()
            })
        });
        let unit = gpu_unit(spec).map(|u| ctx.defs.intern(&u));
        let interned = ctx.defs.intern(&name);
        let counter = ctx.defs.add_counter(CounterDef {
            process: Some(process),
            name: interned,
            series: None,
            label: None,
            unit,
            cat: None,
        });
        self.gpu_counters.insert((gpu, name), counter);
        GpuCounter { counter, forwards }
    }

    /// GPU counter samples at the packet's time `ts`, and the descriptors that come with them.
    pub fn gpu_counters(
        &mut self,
        ctx: &mut ImportCtx,
        seq: &mut Sequence,
        ts: Option<i64>,
        e: &GpuCounterEvent,
    ) -> Result<()> {
        let gpu = e.gpu_id.unwrap_or(0);
        // counters described inline: the first description of an id holds
        if let Some(desc) = &e.counter_descriptor {
            for spec in &desc.specs {
                let (Some(id), Some(_)) = (spec.counter_id, &spec.name) else {
                    continue;
                };
                if !self.inline_gpu.contains_key(&id) {
                    let c = self.gpu_counter(ctx, gpu, spec);
                    self.inline_gpu.insert(id, c);
                }
            }
        }
        // counters described by a descriptor interned on the sequence: ids are its own
        let interned = e.counter_descriptor_iid;
        if let Some(iid) = interned.filter(|i| !seq.gpu_resolved.contains_key(i)) {
            let mut map = FxHashMap::default();
            if let Some(d) = seq.gpu_counters.get(&iid).cloned() {
                let gpu = d.gpu_id.unwrap_or(0);
                for spec in d.counter_descriptor.iter().flat_map(|c| &c.specs) {
                    if let (Some(id), Some(_)) = (spec.counter_id, &spec.name) {
                        let c = self.gpu_counter(ctx, gpu, spec);
                        map.entry(id).or_insert((c.counter, c.forwards));
                    }
                }
            }
            seq.gpu_resolved.insert(iid, map);
        }
        if e.counters.is_empty() {
            return Ok(());
        }
        let Some(ts) = ts else {
            ctx.diag
                .record(&d::IMPORT_MISSING_TIMESTAMP, Location::Nowhere);
            return Ok(());
        };
        for c in &e.counters {
            let (Some(id), Some(v)) = (c.counter_id, c.value) else {
                continue;
            };
            let found = match interned {
                Some(iid) => seq.gpu_resolved[&iid].get(&id).copied(),
                None => self.inline_gpu.get(&id).map(|c| (c.counter, c.forwards)),
            };
            let Some((counter, forwards)) = found else {
                self.undescribed += 1;
                continue;
            };
            let value = match v {
                GpuValue::IntValue(i) => Num::Int(i),
                GpuValue::DoubleValue(f) => Num::Float(f),
            };
            // a backwards-looking value belongs to the previous sample's time, as trace
            // processor places it (the last sample then reads 0)
            let at = if forwards {
                Some(ts)
            } else {
                let prev = self.pending.insert(counter, ts);
                if prev.is_none() {
                    self.first_readings += 1;
                }
                prev
            };
            if let Some(at) = at {
                ctx.emit(Event::Counter(CounterValue {
                    counter,
                    ts: at,
                    value,
                }))?;
            }
        }
        Ok(())
    }

    /// Pairs the async begins and ends by cookie, in time order (file order among equal
    /// times: the sort is stable), and pushes the completed slices; the ones left open.
    fn pair_async(&mut self, ctx: &mut ImportCtx) -> Result<Vec<Slice>> {
        let mut points = std::mem::take(&mut self.async_points).runs.sorted()?;
        let mut open: FxHashMap<(TrackId, i64), Slice> = FxHashMap::default();
        while let Some(AsyncPoint {
            ts,
            track,
            cookie,
            begin,
            ..
        }) = points.next()?
        {
            match begin {
                // a begin while one with its cookie is open is ignored, as trace processor
                // does (Android's wakelocks send several)
                Some(s) => {
                    open.entry((track, cookie)).or_insert(s);
                }
                None => match open.remove(&(track, cookie)) {
                    Some(mut s) => {
                        s.dur = Some(ts - s.ts);
                        ctx.emit(Event::Slice(s))?;
                    }
                    None => ctx.diag.record(&d::IMPORT_UNMATCHED_END, Location::Nowhere),
                },
            }
        }
        Ok(open.into_values().collect())
    }

    /// Ends what is left: async slices still open, the last samples of backwards-looking GPU
    /// counters; reports what was skipped.
    pub fn finish(&mut self, ctx: &mut ImportCtx) -> Result<()> {
        let mut left = self.pair_async(ctx)?;
        left.sort_by_key(|s| (s.ts, s.track));
        ctx.diag.record_n(
            &tracex_ir::diag::kinds::OPEN_SLICE,
            left.len() as u64,
            Location::Nowhere,
            None::<String>,
        );
        for mut s in left {
            s.dur = None;
            ctx.emit(Event::Slice(s))?;
        }
        let mut pending: Vec<(CounterId, i64)> = self.pending.drain().collect();
        pending.sort();
        for (counter, ts) in pending {
            ctx.emit(Event::Counter(CounterValue {
                counter,
                ts,
                value: Num::Int(0),
            }))?;
        }
        ctx.diag.record_n(
            &d::IMPORT_GPU_FIRST_READING,
            self.first_readings,
            Location::Nowhere,
            None::<String>,
        );
        ctx.diag.record_n(
            &d::IMPORT_GPU_UNDESCRIBED,
            self.undescribed,
            Location::Nowhere,
            None::<String>,
        );
        std::mem::take(&mut self.ftrace_unmapped).record(ctx.diag, &d::IMPORT_FTRACE_UNMAPPED);
        Ok(())
    }
}

/// Async begins and ends of atrace markers in file order, sorted by time with bounded memory
/// ([`Runs`]) at the end.
struct AsyncPoints {
    runs: Runs<AsyncPoint>,
    order: u64,
}

impl Default for AsyncPoints {
    fn default() -> Self {
        AsyncPoints {
            runs: Runs::new(RUN_BYTES, "to pair async begins and ends"),
            order: 0,
        }
    }
}

impl AsyncPoints {
    fn push(&mut self, ts: i64, track: TrackId, cookie: i64, begin: Option<Slice>) -> Result<()> {
        self.order += 1;
        let p = AsyncPoint {
            ts,
            order: self.order,
            track,
            cookie,
            begin,
        };
        Ok(self.runs.push(&p)?)
    }
}

/// An async begin (its slice) or end, by cookie on its track; in time order, then file order.
struct AsyncPoint {
    ts: i64,
    order: u64,
    track: TrackId,
    cookie: i64,
    begin: Option<Slice>,
}

impl Record for AsyncPoint {
    type Key = (i64, u64);

    fn key(&self) -> (i64, u64) {
        (self.ts, self.order)
    }

    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.ts.to_le_bytes());
        out.extend_from_slice(&self.order.to_le_bytes());
        out.extend_from_slice(&self.track.0.to_le_bytes());
        out.extend_from_slice(&self.cookie.to_le_bytes());
        if let Some(s) = &self.begin {
            codec::encode_slice(s, 0, out);
        }
    }

    fn decode(b: &[u8]) -> io::Result<AsyncPoint> {
        let damaged = || io::Error::other("an async begin or end read back is damaged");
        let mut f = Fields::new(b);
        let (Some(ts), Some(order), Some(track), Some(cookie)) =
            (f.i64(), f.u64(), f.u32(), f.i64())
        else {
            return Err(damaged());
        };
        let begin = match f.rest() {
            [] => None,
            slice => Some(Decoder::new(slice).slice().map_err(|_| damaged())?),
        };
        Ok(AsyncPoint {
            ts,
            order,
            track: TrackId(track),
            cookie,
            begin,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn async_points_come_back_from_disk_in_time_then_file_order() {
        let mut begin = Slice::new(TrackId(3), 50, 0, StrId(2));
        tracex_ir::defs::set_arg(&mut begin.args, StrId(1), Value::Int(-7));
        let mut points = AsyncPoints {
            runs: Runs::new(1, "to test"),
            order: 0,
        };
        points
            .push(50, TrackId(3), -7, Some(begin.clone()))
            .unwrap();
        points.push(10, TrackId(3), -7, None).unwrap();
        points.push(50, TrackId(4), i64::MIN, None).unwrap();
        let mut sorted = points.runs.sorted().unwrap();
        let mut got = Vec::new();
        while let Some(p) = sorted.next().unwrap() {
            got.push((p.ts, p.order, p.track, p.cookie, p.begin));
        }
        assert_eq!(
            got,
            vec![
                (10, 2, TrackId(3), -7, None),
                (50, 1, TrackId(3), -7, Some(begin)),
                (50, 3, TrackId(4), i64::MIN, None),
            ]
        );
        assert!(AsyncPoint::decode(&[0; 27]).is_err());
        assert!(AsyncPoint::decode(&[9; 29]).is_err());
    }

    #[test]
    fn atrace_markers_parse_as_trace_processor_reads_them() {
        assert_eq!(
            marker("B|123|draw|frame 7\n"),
            Some(Marker::Begin {
                tgid: 123,
                name: "draw|frame 7"
            })
        );
        assert_eq!(
            marker("B|123|"),
            Some(Marker::Begin {
                tgid: 123,
                name: "[empty slice name]"
            })
        );
        assert_eq!(marker("E"), Some(Marker::End { tgid: 0 }));
        assert_eq!(marker("E|123\0"), Some(Marker::End { tgid: 123 }));
        assert_eq!(
            marker("S|5|launch|-42"),
            Some(Marker::AsyncBegin {
                tgid: 5,
                track: "launch",
                name: "launch",
                cookie: -42
            })
        );
        assert_eq!(
            marker("H|5|jobs|run|9"),
            Some(Marker::AsyncEnd {
                tgid: 5,
                track: "jobs",
                cookie: 9
            })
        );
        assert_eq!(
            marker("H|5|jobs|9"),
            Some(Marker::AsyncEnd {
                tgid: 5,
                track: "jobs",
                cookie: 9
            })
        );
        assert_eq!(
            marker("C|5|queued|-3"),
            Some(Marker::Counter {
                tgid: 5,
                name: "queued",
                value: -3
            })
        );
        assert_eq!(
            marker("N|5|events|tap"),
            Some(Marker::Instant {
                tgid: 5,
                track: Some("events"),
                name: "tap"
            })
        );
        assert_eq!(
            marker("trace_event_clock_sync: parent_ts=1"),
            Some(Marker::ClockSync)
        );
        // malformed: no tgid on a begin, a counter without a number, free text
        assert_eq!(marker("B|x|name"), None);
        assert_eq!(marker("C|5|queued|many"), None);
        assert_eq!(marker("hello from the kernel"), None);
        assert_eq!(marker(""), None);
    }

    #[test]
    fn ftrace_events_are_read_with_their_payload_kind() {
        // timestamp 1000, pid 7, payload field 3 (print) holding 2 bytes
        let b = [0x08, 0xe8, 0x07, 0x10, 0x07, 0x1a, 0x02, 0xaa, 0xbb];
        let e = ftrace_event(&b).unwrap();
        assert_eq!(e.ts, Some(1000));
        assert_eq!(e.tid, Some(7));
        assert_eq!(e.payload, Some((3, &[0xaa, 0xbb][..])));
        // a payload longer than the bytes left
        assert_eq!(ftrace_event(&[0x1a, 0x05, 0x01]), None);
        assert_eq!(ftrace_kind(4), "ftrace sched_switch");
        assert_eq!(ftrace_kind(9999), "ftrace field 9999");
    }

    #[test]
    fn gpu_units_join_as_trace_processor_writes_them() {
        let spec = |num: Vec<i32>, den: Vec<i32>| GpuCounterSpec {
            numerator_units: num,
            denominator_units: den,
            ..Default::default()
        };
        assert_eq!(gpu_unit(&spec(vec![], vec![])), None);
        assert_eq!(gpu_unit(&spec(vec![37], vec![])).as_deref(), Some("%"));
        assert_eq!(gpu_unit(&spec(vec![7], vec![22])).as_deref(), Some("B/s"));
        assert_eq!(
            gpu_unit(&spec(vec![25, 26], vec![0, 22, 19])).as_deref(),
            Some("Vertex:Pixel/s:ns")
        );
    }
}
