//! IR → Perfetto TrackEvent protobuf, streamed.
//!
//! Everything is written on one packet sequence: first a packet that clears the incremental
//! state and sets the defaults (timestamps on a sequence-scoped incremental clock), then the
//! clock snapshot, then packets in time order as events arrive: track descriptors on first use,
//! slices as `TYPE_SLICE_BEGIN` / `TYPE_SLICE_END` pairs (only the open ends are held, a heap of
//! depth × tracks), instants, counter values, flow ids on the slices they bind to, stack samples
//! with interned callstacks. Names, categories, argument keys, frames and callstacks are
//! interned. At the end: descriptors whose names changed, and tracex's trace-level record.
//!
//! The exporter expects the IR order (`docs/ir.md` O1–O2) with nested tracks (N1), which the
//! CLI's sorter and overlap router provide.

mod args;
mod event;
mod flows;
mod intern;
mod open;
mod queue;
mod tracks;

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use tracex_ir::io::OutputTarget;
use tracex_ir::trackmap::TrackMap;
use tracex_ir::{
    Defs, Diagnostics, Event, Instant, Location, Num, ProcessKind, Result, Sample, Sink, Slice,
    TrackId,
};

use crate::diag as d;
use crate::options::ExportOptions;
use crate::pb::clock_snapshot::Clock;
use crate::pb::trace_packet::Data;
use crate::pb::track_event::{CounterValueField, Type};
use crate::pb::{self, tracex as x, BuiltinClock, TracePacket};
use event::{Packet, TrackEvent};
use flows::Flows;
use intern::Interner;
use open::Open;
use queue::{Queue, DELTA_CLOCK, NEEDS_STATE, STATE_CLEARED};
use tracks::Tracks;

/// Packets of one timestamp held at most, waiting for flow points that attach to them.
const HOLD: usize = 4096;

pub struct Exporter {
    q: Queue,
    interner: Interner,
    tracks: Tracks,
    flows: Flows,
    started: bool,
    /// The sequence's default track (that of the first slice): its events name no track.
    default_track: Option<u64>,
    /// Perfetto time = IR time − offset; set by the first timed event.
    offset: Option<i64>,
    /// The time of the events being written (Perfetto time).
    now: i64,
    open: TrackMap<Vec<Open>>,
    ends: BinaryHeap<Reverse<(i64, Reverse<u64>, TrackId)>>,
    next_order: u64,
    /// Per track: the time and packet number of the first slice that began at that time.
    first_begin: TrackMap<(i64, u64)>,
    events: u64,
}

impl Exporter {
    pub fn create(target: &OutputTarget, opts: &ExportOptions) -> Result<Exporter> {
        let gzip = opts.gzip.unwrap_or_else(|| target.has_suffix(".gz"));
        Ok(Exporter {
            q: Queue::create(target, gzip, opts.gzip_level)?,
            interner: Interner::default(),
            tracks: Tracks::default(),
            flows: Flows::default(),
            started: false,
            default_track: None,
            offset: None,
            now: i64::MIN,
            open: TrackMap::default(),
            ends: BinaryHeap::new(),
            next_order: 0,
            first_begin: TrackMap::default(),
            events: 0,
        })
    }

    /// The first packet: the incremental state starts here, timestamps default to the delta
    /// clock and events to the track of the first slice (saving its uuid on each of them),
    /// stack samples name their source.
    fn start(&mut self, default_track: Option<u64>) {
        self.started = true;
        self.default_track = default_track;
        self.q.push(
            None,
            TracePacket {
                sequence_flags: Some(STATE_CLEARED),
                trace_packet_defaults: Some(Box::new(pb::TracePacketDefaults {
                    timestamp_clock_id: Some(DELTA_CLOCK),
                    track_event_defaults: default_track.map(|t| pb::TrackEventDefaults {
                        track_uuid: Some(t),
                        ..Default::default()
                    }),
                    stack_sample_defaults: Some(pb::StackSampleDefaults {
                        source: Some("tracex".into()),
                        primary_descriptor: None,
                    }),
                })),
                ..Default::default()
            },
        );
    }

    /// Perfetto time of IR time `ts`; the first timed event fixes the offset (so that no time
    /// is negative) and writes the clock snapshot.
    fn time(&mut self, defs: &Defs, diag: &mut Diagnostics, ts: i64) -> i64 {
        let offset = match self.offset {
            Some(o) => o,
            None => {
                let o = ts.min(0);
                self.offset = Some(o);
                let b = ts - o;
                let mut clocks = vec![
                    Clock {
                        clock_id: Some(BuiltinClock::Boottime as u32),
                        timestamp: Some(b as u64),
                        ..Default::default()
                    },
                    Clock {
                        clock_id: Some(DELTA_CLOCK),
                        timestamp: Some(b as u64),
                        is_incremental: Some(true),
                        ..Default::default()
                    },
                ];
                if let Some(origin) = defs.clock.origin_unix_ns {
                    let real = b as i128 + o as i128 + origin as i128;
                    if (0..=u64::MAX as i128).contains(&real) {
                        clocks.push(Clock {
                            clock_id: Some(BuiltinClock::Realtime as u32),
                            timestamp: Some(real as u64),
                            ..Default::default()
                        });
                    }
                }
                self.q.push(
                    None,
                    TracePacket {
                        data: Some(Data::ClockSnapshot(pb::ClockSnapshot {
                            clocks,
                            primary_trace_clock: None,
                        })),
                        ..Default::default()
                    },
                );
                self.q.start_clock(b);
                o
            }
        };
        let t = ts - offset;
        if t < 0 {
            diag.record(&d::EXPORT_TIME_BEFORE_START, Location::Event(self.events));
        }
        t
    }

    /// Moves to time `t`: what belongs to earlier times is encoded, and the slices that end by
    /// then are closed (those ending exactly at `t` only before a slice or instant, so that a
    /// flow point at a slice's end still binds to it).
    fn advance(&mut self, defs: &Defs, t: i64, inclusive: bool) -> Result<()> {
        if t > self.now {
            self.q.encode_all()?;
            self.now = t;
        }
        while let Some(&Reverse((end, _, track))) = self.ends.peek() {
            if end > t || (end == t && !inclusive) {
                break;
            }
            self.ends.pop();
            self.close(defs, track, end);
        }
        if self.q.len() > HOLD {
            self.q.encode(self.q.len() - HOLD / 2)?;
        }
        Ok(())
    }

    /// Writes the END of the innermost open slice of `track`.
    fn close(&mut self, defs: &Defs, track: TrackId, end: i64) {
        let Some(stack) = self.open.get_mut(track) else {
            return;
        };
        // an emptied stack stays: the track's next slice reuses its allocation
        let Some(o) = stack.pop() else {
            return;
        };
        let _ = defs;
        let mut ev = o.end_event;
        ev.r#type = Some(Type::SliceEnd as i32);
        self.q.push(
            Some(end),
            Packet::event(
                ev,
                TracePacket {
                    sequence_flags: o.end_needs_state.then_some(NEEDS_STATE),
                    tracex: o.end_extra.filter(|e| **e != x::Extra::default()),
                    ..Default::default()
                },
            ),
        );
    }

    /// The `track_uuid` of an event on track `k`: none for the default track.
    fn track_field(&self, k: u64) -> Option<u64> {
        (self.default_track != Some(k)).then_some(k)
    }

    /// A TrackEvent's name, category, arguments and callstack.
    fn common(
        &mut self,
        defs: &Defs,
        track: u64,
        name: tracex_ir::StrId,
        cat: Option<tracex_ir::StrId>,
        args: &tracex_ir::Args,
        stack: Option<tracex_ir::StackId>,
    ) -> TrackEvent {
        TrackEvent {
            track_uuid: self.track_field(track),
            name_iid: Some(self.interner.name(defs, name)),
            category_iid: cat.map(|c| self.interner.category(defs, c)),
            annotations: args::annotations(defs, &mut self.interner, args),
            callstack_iid: stack.map(|s| self.interner.callstack(defs, s)),
            ..Default::default()
        }
    }

    /// Queues a slice BEGIN or an instant at time `t` with the interned data it brought and
    /// tracex's extra fields; returns its packet number.
    fn push_event(&mut self, t: i64, ev: TrackEvent, extra: x::Extra) -> u64 {
        let interned = self.interner.take();
        self.q.push(
            Some(t),
            Packet::event(
                ev,
                TracePacket {
                    interned_data: interned,
                    sequence_flags: Some(NEEDS_STATE),
                    tracex: (extra != x::Extra::default()).then(|| Box::new(extra)),
                    ..Default::default()
                },
            ),
        )
    }

    /// The thread-time counter of `track` when slices there can carry one natively (tracks of
    /// threads of processes).
    fn thread_time_track(&mut self, defs: &Defs, track: TrackId) -> Option<u64> {
        let th = defs.track_thread(track)?;
        if !matches!(
            defs.process(defs.thread(th).process).kind,
            ProcessKind::Host
        ) {
            return None;
        }
        Some(self.tracks.thread_time(defs, &mut self.q, th))
    }

    fn slice(&mut self, defs: &Defs, diag: &mut Diagnostics, s: Slice) -> Result<()> {
        let k = self.tracks.track(defs, &mut self.q, s.track);
        if !self.started {
            self.start(Some(k));
        }
        let t = self.time(defs, diag, s.ts);
        self.advance(defs, t, true)?;
        let mut ev = self.common(defs, k, s.name, s.cat, &s.args, s.stack);
        ev.r#type = Some(Type::SliceBegin as i32);
        let mut extra = x::Extra {
            color: s.color.map(|c| defs.str(c).to_owned()),
            ..Default::default()
        };
        let mut end_event = TrackEvent {
            track_uuid: self.track_field(k),
            ..Default::default()
        };
        match (s.thread_ts, self.thread_time_track(defs, s.track)) {
            (Some(tts), Some(tt)) => {
                ev.extra_counter = Some((tt, tts));
                if let (Some(td), Some(_)) = (s.thread_dur, s.dur) {
                    end_event.extra_counter = Some((tt, tts + td));
                }
                if s.thread_dur.is_some() && s.dur.is_none() {
                    extra.thread_dur = s.thread_dur;
                }
            }
            _ => {
                extra.thread_ts = s.thread_ts;
                extra.thread_dur = s.thread_dur;
            }
        }
        let n = self.push_event(t, ev, extra);
        match self.first_begin.get(s.track) {
            Some(&(at, _)) if at == t => {}
            _ => self.first_begin.insert(s.track, (t, n)),
        }
        let order = self.next_order;
        self.next_order += 1;
        // flow points waiting for the next slice on this track bind here
        self.flows.bind_next(&mut self.q, s.track, n);
        if let Some(d) = s.dur {
            self.ends.push(Reverse((t + d, Reverse(order), s.track)));
        }
        self.open.get_or_default(s.track).push(Open {
            begin: t,
            begin_packet: n,
            end_event,
            end_extra: None,
            end_needs_state: false,
            end: s.dur.map(|d| t + d),
        });
        Ok(())
    }

    fn instant(&mut self, defs: &Defs, diag: &mut Diagnostics, i: Instant) -> Result<()> {
        let k = self.tracks.track(defs, &mut self.q, i.track);
        let t = self.time(defs, diag, i.ts);
        self.advance(defs, t, true)?;
        let mut ev = self.common(defs, k, i.name, i.cat, &i.args, i.stack);
        ev.r#type = Some(Type::Instant as i32);
        let extra = x::Extra {
            color: i.color.map(|c| defs.str(c).to_owned()),
            ..Default::default()
        };
        self.push_event(t, ev, extra);
        Ok(())
    }

    fn counter(
        &mut self,
        defs: &Defs,
        diag: &mut Diagnostics,
        c: tracex_ir::CounterValue,
    ) -> Result<()> {
        let k = self.tracks.counter(defs, &mut self.q, c.counter);
        let t = self.time(defs, diag, c.ts);
        self.advance(defs, t, false)?;
        let ev = TrackEvent {
            r#type: Some(Type::Counter as i32),
            track_uuid: Some(k),
            counter: Some(match c.value {
                Num::Int(v) => CounterValueField::CounterValue(v),
                Num::Float(v) => CounterValueField::DoubleCounterValue(v),
            }),
            ..Default::default()
        };
        self.q
            .push(Some(t), Packet::event(ev, TracePacket::default()));
        Ok(())
    }

    fn sample(&mut self, defs: &Defs, diag: &mut Diagnostics, s: Sample) -> Result<()> {
        let Some((pid, tid)) = self.tracks.sample_task(defs, &mut self.q, s.track) else {
            diag.record(
                &d::EXPORT_SAMPLE_WITHOUT_THREAD,
                Location::Event(self.events),
            );
            return Ok(());
        };
        let t = match s.ts {
            Some(ts) => {
                let t = self.time(defs, diag, ts);
                self.advance(defs, t, false)?;
                Some(t)
            }
            None => None,
        };
        let mut extra = x::Extra::default();
        let mut sample = pb::StackSample {
            task_context_field: Some(pb::stack_sample::TaskContextField::TaskContextIid(
                self.interner.task(pid, tid),
            )),
            execution_context_field: s.cpu.map(|c| {
                pb::stack_sample::ExecutionContextField::ExecutionContextIid(self.interner.cpu(c))
            }),
            callstack_field: s.stack.map(|st| {
                pb::stack_sample::CallstackField::CallstackIid(self.interner.callstack(defs, st))
            }),
            ..Default::default()
        };
        if s.weight != 1 || s.name.is_some() {
            sample.primary_descriptor_field = Some(
                pb::stack_sample::PrimaryDescriptorField::PrimaryDescriptorIid(
                    self.interner.sample_counter(defs, s.name),
                ),
            );
            match u64::try_from(s.weight) {
                Ok(w) => sample.primary_weight = Some(w),
                Err(_) => extra.weight = Some(s.weight),
            }
        }
        let packet = TracePacket {
            data: Some(Data::StackSample(Box::new(sample))),
            interned_data: self.interner.take(),
            sequence_flags: Some(NEEDS_STATE),
            ..Default::default()
        };
        match t {
            Some(t) => {
                self.q.push(
                    Some(t),
                    TracePacket {
                        tracex: (extra != x::Extra::default()).then(|| Box::new(extra)),
                        ..packet
                    },
                );
            }
            None => {
                diag.record(&d::EXPORT_UNTIMED_SAMPLE, Location::Event(self.events));
                extra.untimed = Some(true);
                self.q.push_absolute(
                    0,
                    TracePacket {
                        tracex: Some(Box::new(extra)),
                        ..packet
                    },
                );
            }
        }
        Ok(())
    }

    /// tracex's trace-level record: the time offset, clock and metadata; the metadata also as
    /// Perfetto trace attributes, which the UI shows in its overview.
    fn trace_info(&mut self, defs: &Defs) {
        let attributes = defs
            .meta
            .iter()
            .map(|a| pb::trace_attributes::Attribute {
                key: Some(defs.str(a.key).to_owned()),
                value: Some(args::attribute_value(defs, &a.value)),
            })
            .collect::<Vec<_>>();
        let info = x::TraceInfo {
            offset_ns: self.offset.filter(|&o| o != 0),
            origin_unix_ns: defs.clock.origin_unix_ns,
            clock_domain: defs.clock.domain.map(|c| defs.str(c).to_owned()),
            meta: args::typed(defs, &defs.meta),
            flow_default: self.flows.default_names(defs),
        };
        self.q.push(
            None,
            TracePacket {
                data: (!attributes.is_empty()).then_some(Data::TraceAttributes(
                    pb::TraceAttributes {
                        attribute: attributes,
                    },
                )),
                tracex: Some(Box::new(x::Extra {
                    trace: Some(info),
                    ..Default::default()
                })),
                ..Default::default()
            },
        );
    }
}

impl Sink for Exporter {
    fn event(&mut self, defs: &Defs, diag: &mut Diagnostics, event: Event) -> Result<()> {
        if !self.started && !matches!(event, Event::Slice(_)) {
            self.start(None);
        }
        self.events += 1;
        match event {
            Event::Slice(s) => self.slice(defs, diag, s),
            Event::Instant(i) => self.instant(defs, diag, i),
            Event::Counter(c) => self.counter(defs, diag, c),
            Event::Sample(s) => self.sample(defs, diag, s),
            Event::Flow(f) => {
                let k = self.tracks.track(defs, &mut self.q, f.track);
                let t = self.time(defs, diag, f.ts);
                self.advance(defs, t, false)?;
                let carrier = flows::Carriers {
                    open: self.open.get_mut(f.track),
                    first_begin: self.first_begin.get(f.track).copied(),
                };
                self.flows.point(
                    defs,
                    diag,
                    &mut self.interner,
                    &mut self.q,
                    &f,
                    k,
                    t,
                    carrier,
                    self.events,
                );
                Ok(())
            }
        }
    }

    fn finish(&mut self, defs: &Defs, diag: &mut Diagnostics) -> Result<()> {
        if !self.started {
            self.start(None);
        }
        self.advance(defs, i64::MAX, true)?;
        self.flows.finish(diag, &mut self.q);
        self.tracks.finish(defs, &mut self.q);
        self.trace_info(defs);
        self.q.finish()?;
        Ok(())
    }
}
