//! Chrome JSON → IR. See `docs/formats/chrome.md` for the mapping of every phase.
//!
//! The input is streamed: on a read-ahead thread ([`ahead`]), [`tokenizer`] cuts it into events
//! and the [`fast`] path reads each event's fields; on the caller's thread, [`raw`] (serde) reads
//! the events the fast path left, and [`Importer`] maps phases to IR events as they come. Only
//! what cannot be resolved before the end is held back: open `B`/`b`/`N` slices, flow points
//! (paired in time order at the end, as viewers do), and the top-level `samples`.

mod ahead;
mod args;
pub mod fast;
mod ids;
pub mod raw;
mod rocprof;
mod samples;
pub mod tokenizer;

use std::io::Read;

use rustc_hash::FxHashMap;
use tracex_ir::diag::kinds as ir_kinds;
use tracex_ir::event::{CounterValue, FlowBind, FlowRole, Instant, Sample, Slice};
use tracex_ir::track::{Ends, FlowPairer, PendingFlowPoint, SliceStacks};
use tracex_ir::{
    CounterDef, CounterId, DiagKind, Error, Event, ImportCtx, Location, NamePriority, ProcessId,
    Result, StrId, Track, TrackId, TrackKind, Value,
};

use crate::diag as d;
use crate::number::{micros_to_ns, parse_i64};
use crate::options::ImportOptions;
use ahead::Piece;
pub use ids::IDENTITY;
use ids::{Identities, MetaTarget};
use raw::{Raw, RawEvent, Text};
use tokenizer::TokError;

/// Reads a Chrome trace from `reader` (already decompressed) into `ctx`.
pub fn import<R: Read + Send>(reader: R, _opts: &ImportOptions, ctx: &mut ImportCtx) -> Result<()> {
    let mut imp = Importer::default();
    let l = ahead::pieces(reader, |piece| -> Result<()> {
        match piece {
            Piece::Event {
                bytes,
                offset,
                index,
                parsed,
            } => {
                imp.index = index;
                let serde;
                let raw = match parsed {
                    Some(r) => r,
                    None => match raw::parse_event_serde(bytes) {
                        Ok(r) => {
                            serde = r;
                            &serde
                        }
                        Err(_) if bytes.first() != Some(&b'{') => {
                            ctx.diag.record(&d::NOT_AN_OBJECT, Location::Event(index));
                            return Ok(());
                        }
                        Err(e) => {
                            return Err(Error::invalid(
                                Location::Byte(offset + e.column().saturating_sub(1) as u64),
                                format!("event #{index} is not valid JSON: {e}"),
                            ));
                        }
                    },
                };
                imp.event(ctx, raw)
            }
            Piece::Meta { key, raw, offset } => imp.meta(ctx, key, raw, offset),
        }
    })?;
    let diag = &mut ctx.diag;
    if let Some(at) = l.unterminated {
        diag.record(&d::UNTERMINATED, Location::Byte(at));
    }
    if let Some(at) = l.torn {
        diag.record(&d::TORN_EVENT, Location::Byte(at));
    }
    if let Some(at) = l.trailing {
        diag.record(&d::TRAILING_DATA, Location::Byte(at));
    }
    diag.record_n(
        &d::STRAY_COMMA,
        l.stray_commas,
        Location::Nowhere,
        None::<String>,
    );
    imp.finish(ctx)
}

impl From<TokError> for Error {
    fn from(e: TokError) -> Self {
        match e {
            TokError::Io(e) => e.into(),
            TokError::Syntax(e) => Error::invalid(Location::Byte(e.offset), e.message),
        }
    }
}

/// Parses one event object: by the [`fast`] path where it can, else by serde.
pub fn parse_event(bytes: &[u8]) -> std::result::Result<RawEvent<'_>, serde_json::Error> {
    match fast::parse_event(bytes) {
        Some(e) => Ok(e),
        None => raw::parse_event_serde(bytes),
    }
}

/// Keys of begin/end matching.
#[derive(Hash, PartialEq, Eq, Clone, Copy)]
enum OpenKey {
    /// `B`/`E` on a thread track.
    Thread(TrackId),
    /// `b`/`e`, `S`/`F`, `N`/`D`, `(`/`)` on an async track.
    Async(TrackId),
}

#[derive(Default)]
struct Importer {
    index: u64,
    /// tracex's time shift (`tracexTimeShiftNs`), taken back off every time.
    shift: i64,
    ids: Identities,
    open: SliceStacks<OpenKey>,
    async_tracks: FxHashMap<(ProcessId, u8, Box<str>), TrackId>,
    process_tracks: FxHashMap<ProcessId, TrackId>,
    counters: FxHashMap<(ProcessId, StrId, Option<StrId>, StrId), CounterId>,
    flows_v1: FlowPairer<(Option<StrId>, Option<StrId>, u32)>,
    flows_v2: FlowPairer<u32>,
    /// Flow ids (their text, scope included) as small numbers: the pairers hold every flow
    /// point until the end, and the two ends of a flow share one id.
    flow_ids: FxHashMap<Box<str>, u32>,
    stacks: samples::Stacks,
    profiles: samples::V8Profiles,
    top_samples: Vec<samples::TopSample>,
    /// Slices whose start rocprof's exact nanoseconds moved: (track, start in µs) → exact start.
    /// Flow points at the µs start move with it, or they would fall before their slice.
    rocprof_starts: FxHashMap<(TrackId, i64), i64>,
}

/// The args this importer reads itself: tracex's mark of a slice it closed at the end of a
/// trace, and rocprof's exact times.
const READ_HERE: &[&str] = &[crate::export::OPEN_ARG, "BeginNs", "EndNs"];

/// The namespaces of async-like tracks: ids of different kinds never share a track.
const NS_NESTABLE: u8 = 0;
const NS_LEGACY: u8 = 1;
const NS_OBJECT: u8 = 2;
const NS_CONTEXT: u8 = 3;

fn text<'a>(t: &'a Option<Text<'_>>) -> Option<&'a str> {
    t.as_ref().map(|t| t.as_str())
}

impl Importer {
    fn flow_key(&mut self, id: &str) -> u32 {
        if let Some(&k) = self.flow_ids.get(id) {
            return k;
        }
        let k = self.flow_ids.len() as u32;
        self.flow_ids.insert(id.into(), k);
        k
    }

    fn loc(&self) -> Location {
        Location::Event(self.index)
    }

    fn note(&self, ctx: &mut ImportCtx, kind: &'static DiagKind) {
        ctx.diag.record(kind, self.loc());
    }

    /// Parses a time field; records a diagnostic when the text is not a number in range.
    fn time(
        &self,
        ctx: &mut ImportCtx,
        raw: Option<Raw<'_>>,
    ) -> Option<std::result::Result<i64, ()>> {
        self.time_read(ctx, raw, None)
    }

    /// [`Self::time`], given the value where the read-ahead thread already parsed it.
    fn time_read(
        &self,
        ctx: &mut ImportCtx,
        raw: Option<Raw<'_>>,
        read: Option<tracex_ir::time::Decimal>,
    ) -> Option<std::result::Result<i64, ()>> {
        let raw = raw?;
        Some(match read.or_else(|| micros_to_ns(raw.get())) {
            Some(m) => {
                if m.rounded {
                    self.note(ctx, &d::SUB_NS_ROUNDED);
                }
                Ok(m.value)
            }
            None => {
                ctx.diag.record_detail(
                    &d::BAD_TS,
                    self.loc(),
                    format!("not a time: {}", raw.get()),
                );
                Err(())
            }
        })
    }

    fn opt_time(&self, ctx: &mut ImportCtx, raw: Option<Raw<'_>>) -> Option<i64> {
        self.time(ctx, raw).and_then(|r| r.ok())
    }

    fn intern_opt(ctx: &mut ImportCtx, t: &Option<Text<'_>>) -> Option<StrId> {
        t.as_ref().map(|t| ctx.defs.intern(t.as_str()))
    }

    /// The event's category. On nestable async events (`b`, `e`, `n`) an empty one is none:
    /// Catapult requires a `cat` there, so the exporter writes `""` for events without one.
    fn category(ctx: &mut ImportCtx, e: &RawEvent<'_>) -> Option<StrId> {
        let cat = Self::intern_opt(ctx, &e.cat);
        cat.filter(|&c| c != StrId::EMPTY || !matches!(text(&e.ph), Some("b" | "e" | "n")))
    }

    fn event(&mut self, ctx: &mut ImportCtx, e: &RawEvent<'_>) -> Result<()> {
        if e.fields == 0 {
            self.note(ctx, &d::EMPTY_EVENT);
            return Ok(());
        }
        if e.unknown > 0 {
            let detail = e.first_unknown.clone().unwrap_or_default();
            ctx.diag.record_n(
                &d::UNKNOWN_FIELD,
                e.unknown as u64,
                self.loc(),
                Some(format!("field {detail:?}")),
            );
        }
        let Some(ph) = e.ph.as_ref().and_then(|p| p.as_str().chars().next()) else {
            self.note(ctx, &d::MISSING_PHASE);
            return Ok(());
        };
        if ph == 'M' {
            if e.ts.is_some() {
                self.note(ctx, &d::METADATA_TS_IGNORED);
            }
            return self.metadata(ctx, e);
        }
        let ts = match self.time_read(ctx, e.ts, e.times.ts) {
            Some(Ok(ts)) => ts - self.shift,
            Some(Err(())) => return Ok(()),
            None => {
                self.note(ctx, &d::MISSING_TS);
                return Ok(());
            }
        };
        if e.esf.is_some() || e.estack.is_some() {
            self.note(ctx, &d::END_STACK_DROPPED);
        }
        match ph {
            'X' => self.complete(ctx, e, ts),
            'B' => {
                let track = self.thread_track(ctx, e);
                let slice = self.slice(ctx, e, track, ts)?;
                self.bind_v2(ctx, e, track, ts);
                self.open.begin(OpenKey::Thread(track), slice);
                Ok(())
            }
            'E' => {
                let track = self.thread_track(ctx, e);
                self.end(ctx, e, OpenKey::Thread(track), ts, &d::UNMATCHED_END)
            }
            'i' | 'I' | 'R' => {
                let track = match text(&e.s) {
                    Some("g") => ctx.defs.global_track(),
                    Some("p") => self.process_track(ctx, e),
                    _ => self.thread_track(ctx, e),
                };
                self.instant(ctx, e, track, ts, None)
            }
            'C' => self.counter(ctx, e, ts),
            'b' | 'S' | 'N' | '(' => {
                let ns = match ph {
                    'b' => NS_NESTABLE,
                    'S' => NS_LEGACY,
                    'N' => NS_OBJECT,
                    _ => NS_CONTEXT,
                };
                let track = self.async_track(ctx, e, ns);
                let slice = self.slice(ctx, e, track, ts)?;
                if ph == 'b' {
                    self.bind_v2(ctx, e, track, ts);
                }
                self.open.begin(OpenKey::Async(track), slice);
                Ok(())
            }
            'e' | 'F' | 'D' | ')' => {
                let ns = match ph {
                    'e' => NS_NESTABLE,
                    'F' => NS_LEGACY,
                    'D' => NS_OBJECT,
                    _ => NS_CONTEXT,
                };
                let track = self.async_track(ctx, e, ns);
                self.end(ctx, e, OpenKey::Async(track), ts, &d::UNMATCHED_ASYNC_END)
            }
            'n' | 'T' | 'p' | 'O' => {
                let ns = match ph {
                    'n' => NS_NESTABLE,
                    'O' => NS_OBJECT,
                    _ => NS_LEGACY,
                };
                let track = self.async_track(ctx, e, ns);
                if ph == 'n' {
                    self.bind_v2(ctx, e, track, ts);
                }
                // Legacy steps carry their step name in args.step; the IR keeps args as they are.
                self.instant(ctx, e, track, ts, None)
            }
            's' | 't' | 'f' => {
                let track = self.thread_track(ctx, e);
                self.flow_v1(ctx, e, ph, track, ts);
                Ok(())
            }
            'P' => self.sample(ctx, e, ts),
            'V' | 'v' => {
                self.note(ctx, &d::MEMORY_DUMP_AS_INSTANT);
                let track = if ph == 'V' {
                    ctx.defs.global_track()
                } else {
                    self.process_track(ctx, e)
                };
                let name = if e.name.is_some() {
                    None
                } else {
                    Some("memory_dump")
                };
                self.instant(ctx, e, track, ts, name)
            }
            'c' => {
                self.note(ctx, &d::CLOCK_SYNC_AS_INSTANT);
                let track = ctx.defs.global_track();
                self.instant(ctx, e, track, ts, Some("clock_sync"))
            }
            '=' => {
                self.note(ctx, &d::LINKED_IDS_DROPPED);
                Ok(())
            }
            _ => {
                ctx.diag
                    .record_detail(&d::UNKNOWN_PHASE, self.loc(), format!("ph {ph:?}"));
                Ok(())
            }
        }
    }

    fn thread_track(&mut self, ctx: &mut ImportCtx, e: &RawEvent) -> TrackId {
        self.ids
            .thread_track(ctx.defs, ctx.diag, e.pid, e.tid, self.index)
    }

    fn process_track(&mut self, ctx: &mut ImportCtx, e: &RawEvent) -> TrackId {
        let p = self.ids.process(ctx.defs, ctx.diag, e.pid, self.index);
        *self.process_tracks.entry(p).or_insert_with(|| {
            ctx.defs.add_track(Track {
                kind: TrackKind::Process,
                process: Some(p),
                name: None,
                label: None,
                sort_index: None,
            })
        })
    }

    /// The async track of an id, per process and namespace and category (as catapult keys them).
    fn async_track(&mut self, ctx: &mut ImportCtx, e: &RawEvent, ns: u8) -> TrackId {
        let p = self.ids.process(ctx.defs, ctx.diag, e.pid, self.index);
        let label = ids::scoped_id(e.scope.as_ref().map(|s| s.as_str()), e.id, e.id2);
        let cat = text(&e.cat).unwrap_or("");
        // Objects are also keyed by name: two kinds of object may share an id space.
        let key_text = match ns {
            NS_OBJECT => format!("{cat}\u{0}{}\u{0}{label}", text(&e.name).unwrap_or("")),
            _ => format!("{cat}\u{0}{label}"),
        };
        let key = (p, ns, key_text.into_boxed_str());
        if let Some(&t) = self.async_tracks.get(&key) {
            return t;
        }
        let label_id = ctx.defs.intern(&label);
        let t = ctx.defs.add_track(Track {
            kind: TrackKind::Async,
            process: Some(p),
            name: None,
            label: Some(label_id),
            sort_index: None,
        });
        self.async_tracks.insert(key, t);
        t
    }

    /// The slice an event describes, without its duration.
    fn slice(
        &mut self,
        ctx: &mut ImportCtx,
        e: &RawEvent,
        track: TrackId,
        ts: i64,
    ) -> Result<Slice> {
        let name = ctx.defs.intern(text(&e.name).unwrap_or(""));
        let mut s = Slice::new(track, ts, 0, name);
        s.cat = Self::category(ctx, e);
        s.color = Self::intern_opt(ctx, &e.cname);
        s.thread_ts = self.opt_time(ctx, e.tts);
        s.args = self.args(ctx, e);
        s.stack = self.stack_of(ctx, e);
        Ok(s)
    }

    /// The args of an event: those the output reads and those this importer reads itself (the
    /// others would be dropped as the event is emitted; a folded flame graph reads none of a
    /// Kineto trace's, and making them was a fifteenth of a conversion to it).
    fn args(&self, ctx: &mut ImportCtx, e: &RawEvent) -> tracex_ir::Args {
        let read = ctx.args_read();
        let keep = |key: &str| read.reads(key) || READ_HERE.contains(&key);
        match e.args {
            None => Vec::new(),
            Some(r) => match args::parse_args(ctx.defs, r, e.members, keep) {
                Some(a) => a,
                None => {
                    self.note(ctx, &d::ARGS_NOT_OBJECT);
                    let key = ctx.defs.intern("args");
                    vec![tracex_ir::Arg {
                        key,
                        value: Value::Json(r.get().into()),
                    }]
                }
            },
        }
    }

    fn stack_of(&mut self, ctx: &mut ImportCtx, e: &RawEvent) -> Option<tracex_ir::StackId> {
        if let Some(sf) = e.sf {
            return Some(self.stacks.sf(ctx.defs, sf.get()));
        }
        e.stack
            .and_then(|st| self.stacks.inline(ctx.defs, st.get()))
    }

    fn complete(&mut self, ctx: &mut ImportCtx, e: &RawEvent, ts: i64) -> Result<()> {
        let track = self.thread_track(ctx, e);
        let mut s = self.slice(ctx, e, track, ts)?;
        match self.time_read(ctx, e.dur, e.times.dur) {
            Some(Ok(dur)) if dur >= 0 => s.dur = Some(dur),
            Some(Ok(dur)) => {
                self.note(ctx, &ir_kinds::SLICE_NEGATIVE_DURATION);
                let k = ctx.defs.intern("tracex_original_dur_ns");
                s.args.push(tracex_ir::Arg {
                    key: k,
                    value: Value::Int(dur),
                });
                s.dur = Some(0);
            }
            Some(Err(())) => return Ok(()),
            None => {
                self.note(ctx, &d::COMPLETE_WITHOUT_DUR);
                s.dur = Some(0);
            }
        }
        s.thread_dur = self.opt_time(ctx, e.tdur);
        let us = s.ts;
        if rocprof::exact_times(ctx.defs, &mut s) {
            self.note(ctx, &d::ROCPROF_EXACT_NS);
            self.rocprof_starts.insert((track, us), s.ts);
        }
        self.bind_v2(ctx, e, track, s.ts);
        ctx.emit(Event::Slice(s))
    }

    fn end(
        &mut self,
        ctx: &mut ImportCtx,
        e: &RawEvent,
        key: OpenKey,
        ts: i64,
        unmatched: &'static DiagKind,
    ) -> Result<()> {
        let Some(mut s) = self.open.end(&key, ts) else {
            self.note(ctx, unmatched);
            return Ok(());
        };
        if s.dur.unwrap_or(0) < 0 {
            self.note(ctx, &ir_kinds::SLICE_NEGATIVE_DURATION);
            let k = ctx.defs.intern("tracex_original_dur_ns");
            let dur = s.dur.unwrap_or(0);
            s.args.push(tracex_ir::Arg {
                key: k,
                value: Value::Int(dur),
            });
            s.dur = Some(0);
        }
        if let Some(end_tts) = self.opt_time(ctx, e.tts) {
            if let Some(start) = s.thread_ts {
                s.thread_dur = Some(end_tts - start);
            }
        }
        // End args are merged into the slice, as viewers do; tracex's mark of a slice it
        // closed at the end of the trace makes it open again.
        for a in self.args(ctx, e) {
            if ctx.defs.str(a.key) == crate::export::OPEN_ARG && a.value == Value::Bool(true) {
                s.dur = None;
                s.thread_dur = None;
                continue;
            }
            tracex_ir::defs::set_arg(&mut s.args, a.key, a.value);
        }
        ctx.emit(Event::Slice(s))
    }

    fn instant(
        &mut self,
        ctx: &mut ImportCtx,
        e: &RawEvent,
        track: TrackId,
        ts: i64,
        default_name: Option<&str>,
    ) -> Result<()> {
        let name = ctx
            .defs
            .intern(text(&e.name).or(default_name).unwrap_or(""));
        let inst = Instant {
            track,
            ts,
            name,
            cat: Self::category(ctx, e),
            args: self.args(ctx, e),
            stack: self.stack_of(ctx, e),
            color: Self::intern_opt(ctx, &e.cname),
        };
        ctx.emit(Event::Instant(inst))
    }

    fn counter(&mut self, ctx: &mut ImportCtx, e: &RawEvent, ts: i64) -> Result<()> {
        let p = self.ids.process(ctx.defs, ctx.diag, e.pid, self.index);
        let name = ctx.defs.intern(text(&e.name).unwrap_or(""));
        let label = e.id.map(|id| ctx.defs.intern(&ids::id_text(id)));
        let Some(args) = e.args else {
            return Ok(());
        };
        let Some(series) = args::raw_object(args.get()) else {
            self.note(ctx, &d::ARGS_NOT_OBJECT);
            return Ok(());
        };
        for (key, raw) in series {
            let Some(value) = args::counter_value(raw.get()) else {
                self.note(ctx, &d::COUNTER_NOT_NUMERIC);
                continue;
            };
            let key = ctx.defs.intern(key.as_str());
            let cat = Self::intern_opt(ctx, &e.cat);
            let process = (!self.ids.is_global(p)).then_some(p);
            let id = *self
                .counters
                .entry((p, name, label, key))
                .or_insert_with(|| {
                    ctx.defs.add_counter(CounterDef {
                        process,
                        name,
                        series: Some(key),
                        label,
                        unit: None,
                        cat,
                    })
                });
            ctx.emit(Event::Counter(CounterValue {
                counter: id,
                ts,
                value,
            }))?;
        }
        Ok(())
    }

    /// Flow v2: `bind_id` with `flow_out` (start), `flow_in` (end) or both (step) on a slice.
    fn bind_v2(&mut self, ctx: &mut ImportCtx, e: &RawEvent, track: TrackId, ts: i64) {
        let Some(bind) = e.bind_id else {
            return;
        };
        let is_true = |r: Option<Raw<'_>>| r.is_some_and(|r| r.get() == "true");
        let role = match (is_true(e.flow_out), is_true(e.flow_in)) {
            (true, false) => FlowRole::Start,
            (false, true) => FlowRole::End,
            (true, true) => FlowRole::Step,
            (false, false) => {
                self.note(ctx, &d::FLOW_WITHOUT_DIRECTION);
                return;
            }
        };
        let key = self.flow_key(&ids::id_text(bind));
        self.flows_v2.push_with_id(
            key,
            ids::numeric_id(bind),
            PendingFlowPoint {
                role,
                track,
                ts,
                bind: FlowBind::Enclosing,
                name: None,
                cat: None,
                event: self.index,
            },
        );
    }

    fn flow_v1(&mut self, ctx: &mut ImportCtx, e: &RawEvent, ph: char, track: TrackId, ts: i64) {
        let role = match ph {
            's' => FlowRole::Start,
            't' => FlowRole::Step,
            _ => FlowRole::End,
        };
        // `f` binds to the next slice unless bp:"e"; `s` and `t` to the enclosing one.
        let bind = if ph == 'f' && text(&e.bp) != Some("e") {
            FlowBind::Next
        } else {
            FlowBind::Enclosing
        };
        // tracex writes a name and category on flows that had none; they are none again
        let name = Self::intern_opt(ctx, &e.name)
            .filter(|&n| ctx.defs.str(n) != crate::export::DEFAULT_FLOW_NAME);
        let cat = Self::intern_opt(ctx, &e.cat)
            .filter(|&c| ctx.defs.str(c) != crate::export::DEFAULT_FLOW_CAT);
        let id = ids::scoped_id(e.scope.as_ref().map(|s| s.as_str()), e.id, e.id2);
        let key = self.flow_key(&id);
        let source = e.id.and_then(ids::numeric_id);
        self.flows_v1.push_with_id(
            (cat, name, key),
            source,
            PendingFlowPoint {
                role,
                track,
                ts,
                bind,
                name,
                cat,
                event: self.index,
            },
        );
    }

    fn sample(&mut self, ctx: &mut ImportCtx, e: &RawEvent, ts: i64) -> Result<()> {
        let track = self.thread_track(ctx, e);
        let name = text(&e.name).unwrap_or("");
        if (name == "Profile" || name == "ProfileChunk") && e.sf.is_none() && e.stack.is_none() {
            let key = (
                self.ids.process(ctx.defs, ctx.diag, e.pid, self.index),
                e.id.map(|id| ids::id_text(id).into_owned())
                    .unwrap_or_default(),
            );
            let out = self.profiles.event(ctx.defs, key, track, ts, e.args);
            match out {
                Ok(samples) => {
                    for s in samples {
                        ctx.emit(Event::Sample(s))?;
                    }
                }
                Err(why) => {
                    ctx.diag
                        .record_detail(&d::V8_PROFILE_UNPARSED, self.loc(), why);
                }
            }
            return Ok(());
        }
        let stack = self.stack_of(ctx, e);
        let name = Self::intern_opt(ctx, &e.name);
        ctx.emit(Event::Sample(Sample {
            track,
            ts: Some(ts),
            stack,
            weight: 1,
            cpu: None,
            name,
        }))
    }

    fn metadata(&mut self, ctx: &mut ImportCtx, e: &RawEvent) -> Result<()> {
        let name = text(&e.name).unwrap_or("");
        let fields = e
            .args
            .and_then(|a| args::raw_object(a.get()))
            .unwrap_or_default();
        let field = |k: &str| {
            fields
                .iter()
                .find(|(key, _)| key.as_str() == k)
                .map(|(_, v)| *v)
        };
        let str_field =
            |k: &str| field(k).and_then(|v| serde_json::from_str::<String>(v.get()).ok());
        // an empty name rides in the identity record (see the exporter's `name_with`)
        let name_field = || {
            str_field("name")
                .or_else(|| field(ids::IDENTITY).and_then(|v| ids::identity_name(v.get())))
        };
        let int_field = |k: &str| {
            field(k).and_then(|v| {
                parse_i64(v.get()).or_else(|| v.get().parse::<f64>().ok().map(|f| f as i64))
            })
        };
        // tracex's own identity of a remapped process or thread rides in the args of its name
        // record (viewers read only args.name); `unnamed` marks a name tracex made up.
        let mut made_up = false;
        if let (Some(identity), "process_name" | "thread_name") = (field(ids::IDENTITY), name) {
            let tid = if name == "thread_name" { e.tid } else { None };
            let identity = ids::Identity::InNameRecord(identity.get());
            made_up = self
                .ids
                .apply_identity(ctx.defs, ctx.diag, e.pid, tid, identity, self.index);
        }
        // metadata records of names viewers do not know, written by tracex into the args of a
        // name record
        if let (Some(extra), "process_name" | "thread_name") =
            (field(crate::export::META_KEY), name)
        {
            let target = match name {
                "thread_name" => self
                    .ids
                    .meta_target(ctx.defs, ctx.diag, e.pid, e.tid, self.index),
                _ => MetaTarget::Ignore,
            };
            let p = self.ids.process(ctx.defs, ctx.diag, e.pid, self.index);
            for (key, value) in args::raw_object(extra.get()).unwrap_or_default() {
                let arg = tracex_ir::Arg {
                    key: ctx.defs.intern(key.as_str()),
                    value: Value::Json(value.get().into()),
                };
                match &target {
                    MetaTarget::Thread(t) => ctx.defs.thread_mut(*t).meta.push(arg),
                    _ if name == "process_name" => ctx.defs.process_mut(p).meta.push(arg),
                    _ => {}
                }
            }
        }
        match name {
            "process_name" => {
                let p = self.ids.process(ctx.defs, ctx.diag, e.pid, self.index);
                match name_field() {
                    Some(_) if made_up => {}
                    Some(n) if !self.ids.is_unnamed_process(p) => {
                        let n = ctx.defs.intern(&n);
                        ctx.defs.set_process_name(p, n, NamePriority::Explicit);
                    }
                    Some(_) => {}
                    None => self.note(ctx, &d::METADATA_WITHOUT_ARGS),
                }
            }
            "thread_name" => {
                let Some(n) = name_field() else {
                    self.note(ctx, &d::METADATA_WITHOUT_ARGS);
                    return Ok(());
                };
                if made_up {
                    return Ok(());
                }
                match self
                    .ids
                    .meta_target(ctx.defs, ctx.diag, e.pid, e.tid, self.index)
                {
                    MetaTarget::Thread(t) if !self.ids.is_unnamed_thread(t) => {
                        let n = ctx.defs.intern(&n);
                        ctx.defs.set_thread_name(t, n, NamePriority::Explicit);
                    }
                    MetaTarget::Track(t) if !self.ids.is_unnamed_track(t) => {
                        let n = ctx.defs.intern(&n);
                        ctx.defs.track_mut(t).name = Some(n);
                    }
                    _ => {}
                }
            }
            "process_sort_index" => {
                let p = self.ids.process(ctx.defs, ctx.diag, e.pid, self.index);
                match int_field("sort_index") {
                    Some(i) => ctx.defs.process_mut(p).sort_index = Some(i),
                    None => self.note(ctx, &d::METADATA_WITHOUT_ARGS),
                }
            }
            "thread_sort_index" => {
                let Some(i) = int_field("sort_index") else {
                    self.note(ctx, &d::METADATA_WITHOUT_ARGS);
                    return Ok(());
                };
                match self
                    .ids
                    .meta_target(ctx.defs, ctx.diag, e.pid, e.tid, self.index)
                {
                    MetaTarget::Thread(t) => ctx.defs.thread_mut(t).sort_index = Some(i),
                    MetaTarget::Track(t) => ctx.defs.track_mut(t).sort_index = Some(i),
                    MetaTarget::Ignore => {}
                }
            }
            ids::IDENTITY => {
                let args = e.args.map(|a| a.get()).unwrap_or("{}");
                // written by tracex before 0.2 as a record of its own
                self.ids.apply_identity(
                    ctx.defs,
                    ctx.diag,
                    e.pid,
                    e.tid,
                    ids::Identity::OwnRecord(args),
                    self.index,
                );
            }
            _ => {
                // Any other metadata record is kept whole, on the thread if it names one.
                let key = ctx.defs.intern(name);
                let value = Value::Json(e.args.map(|a| a.get()).unwrap_or("{}").into());
                if e.tid.is_some() {
                    if let MetaTarget::Thread(t) = self
                        .ids
                        .meta_target(ctx.defs, ctx.diag, e.pid, e.tid, self.index)
                    {
                        ctx.defs
                            .thread_mut(t)
                            .meta
                            .push(tracex_ir::Arg { key, value });
                        return Ok(());
                    }
                }
                let p = self.ids.process(ctx.defs, ctx.diag, e.pid, self.index);
                ctx.defs
                    .process_mut(p)
                    .meta
                    .push(tracex_ir::Arg { key, value });
            }
        }
        Ok(())
    }

    fn meta(&mut self, ctx: &mut ImportCtx, key: &str, raw: &[u8], offset: u64) -> Result<()> {
        let text = std::str::from_utf8(raw).map_err(|_| {
            Error::invalid(
                Location::Byte(offset),
                format!("value of {key:?} is not UTF-8"),
            )
        })?;
        match key {
            "baseTimeNanoseconds" if parse_i64(text).is_some() => {
                ctx.defs.clock.origin_unix_ns = parse_i64(text).map(|b| b + self.shift);
            }
            crate::export::TIME_SHIFT_KEY if parse_i64(text).is_some() => {
                self.shift = parse_i64(text).unwrap_or(0);
            }
            "stackFrames" => {
                self.stacks.define_frames(ctx.defs, text).map_err(|e| {
                    Error::invalid(Location::Byte(offset), format!("stackFrames: {e}"))
                })?;
            }
            "samples" => {
                let parsed = samples::parse_top_samples(text)
                    .map_err(|e| Error::invalid(Location::Byte(offset), format!("samples: {e}")))?;
                self.top_samples.extend(parsed);
            }
            _ => {
                let key = match key {
                    crate::export::SYSTEM_EVENTS_OBJECT_KEY => "systemTraceEvents",
                    k => k,
                };
                let k = ctx.defs.intern(key);
                tracex_ir::defs::set_arg(&mut ctx.defs.meta, k, Value::Json(text.trim().into()));
            }
        }
        Ok(())
    }

    fn finish(mut self, ctx: &mut ImportCtx) -> Result<()> {
        // Slices begun and never ended stay open.
        for s in self.open.drain() {
            let detail = format!("{:?} at ts {} ns", ctx.defs.str(s.name), s.ts);
            ctx.diag
                .record_detail(&ir_kinds::OPEN_SLICE, Location::Nowhere, detail);
            ctx.emit(Event::Slice(s))?;
        }
        for pairer in [
            // an `f` does not close its id's flow either: Kineto writes one `s` on a CUDA graph
            // launch and an `f` on each of its kernels, and Perfetto draws an arrow to each
            std::mem::take(&mut self.flows_v1).pair_as(ctx.defs, ctx.diag, Ends::KeepOpen),
            std::mem::take(&mut self.flows_v2).pair_as(ctx.defs, ctx.diag, Ends::KeepOpen),
        ] {
            let diag = &mut ctx.diag;
            if let Some(at) = pairer.end_without_start.1.clone() {
                diag.record_n(
                    &d::FLOW_END_WITHOUT_START,
                    pairer.end_without_start.0,
                    at,
                    None::<String>,
                );
            }
            if let Some(at) = pairer.start_without_end.1.clone() {
                diag.record_n(
                    &d::FLOW_START_WITHOUT_END,
                    pairer.start_without_end.0,
                    at,
                    None::<String>,
                );
            }
            for mut p in pairer.points {
                if p.bind == FlowBind::Enclosing {
                    if let Some(&exact) = self.rocprof_starts.get(&(p.track, p.ts)) {
                        p.ts = exact;
                    }
                }
                ctx.emit(Event::Flow(p))?;
            }
        }
        for s in std::mem::take(&mut self.top_samples) {
            match s.resolve(ctx.defs, &mut self.ids, &mut self.stacks) {
                Ok(mut sample) => {
                    sample.ts = sample.ts.map(|t| t - self.shift);
                    if s.rounded {
                        ctx.diag
                            .record(&d::SAMPLE_WEIGHT_ROUNDED, Location::Nowhere);
                    }
                    ctx.emit(Event::Sample(sample))?;
                }
                Err(why) => ctx
                    .diag
                    .record_detail(&d::BAD_SAMPLE, Location::Nowhere, why),
            }
        }
        self.stacks.close(ctx.defs, ctx.diag);
        self.profiles.close(ctx.defs, ctx.diag);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracex_ir::mem::Trace;
    use tracex_ir::ArgsRead;

    /// Each slice `json` becomes, as (start, duration, arg keys), when the output reads `args`.
    fn slices(json: &str, args: ArgsRead) -> Vec<(i64, Option<i64>, Vec<String>)> {
        let opts = ImportOptions::default();
        let t = Trace::imported(args, |ctx| import(json.as_bytes(), &opts, ctx)).unwrap();
        (t.events.iter())
            .filter_map(|e| match e {
                Event::Slice(s) => {
                    let keys = s.args.iter().map(|a| t.defs.str(a.key).into()).collect();
                    Some((s.ts, s.dur, keys))
                }
                _ => None,
            })
            .collect()
    }

    #[test]
    fn args_the_output_does_not_read_are_not_made_but_those_read_here_are_used() {
        // rocprof's exact times, and tracex's mark of a slice it closed at the end of a trace
        let json = r#"[
            {"ph": "X", "name": "hip", "pid": 1, "tid": 1, "ts": 2678276061325, "dur": 1,
             "args": {"BeginNs": "2678276061325820", "EndNs": "2678276061326780", "x": 1, "y": 2}},
            {"ph": "B", "name": "open", "pid": 1, "tid": 2, "ts": 2678276061330, "args": {"y": 3}},
            {"ph": "E", "pid": 1, "tid": 2, "ts": 2678276061340, "args": {"tracex_open": true, "x": 4}}
        ]"#;
        let all = slices(json, ArgsRead::All);
        assert_eq!(
            all,
            [
                (
                    2678276061325820,
                    Some(960),
                    vec!["BeginNs", "EndNs", "x", "y"]
                        .into_iter()
                        .map(String::from)
                        .collect()
                ),
                (
                    2678276061330000,
                    None,
                    vec!["y".to_string(), "x".to_string()]
                ),
            ]
        );
        let only_x = slices(json, ArgsRead::Only(&["x"]));
        assert_eq!(
            only_x,
            [
                (2678276061325820, Some(960), vec!["x".to_string()]),
                (2678276061330000, None, vec!["x".to_string()]),
            ]
        );
    }
}
