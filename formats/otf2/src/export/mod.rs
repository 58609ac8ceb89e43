//! IR → OTF2 archive, streamed through libotf2 (mapping: `docs/formats/otf2.md`).
//!
//! Events arrive in the IR total order with every track nested (the CLI puts the sorter and
//! `nest::OverlapRouter` in front). Each track is a location; slices become Enter now and Leave
//! when due ([`splitter`]), instants zero-length regions, counters Metric events, samples
//! CallingContextSample events, flows MPI messages ([`flows`]). libotf2 flushes each location's
//! buffer to disk when full, so memory is bounded by locations × chunk size + nesting depth
//! (+ events held back while a flow's receiver is not known yet). Definitions, which may change
//! until the end (names), are written at `finish`; strings as soon as they are needed.

mod contexts;
mod flows;
mod locations;
mod metrics;
pub mod output;
mod props;
mod regions;
mod splitter;
mod strings;

use std::collections::VecDeque;

use otf2_sys as sys;
use tracex_ir::io::OutputTarget;
use tracex_ir::{
    Defs, Diagnostics, Error, Event, FlowBind, FlowPoint, FlowRole, Instant, Location, Result,
    Sample, Sink, Slice,
};

use crate::diag as d;
use crate::ffi::{ArchiveWriter, AttrList, AttrValue};
use crate::identity::{self, Internal};
use crate::memprofile::MemoryProfile;
use crate::options::ExportOptions;
use contexts::Contexts;
use flows::FlowLinks;
use locations::Locations;
use metrics::Metrics;
use output::{Layout, Staging};
use regions::{Attributes, Regions};
use splitter::Pending;
use strings::Strings;

/// The communicator flows are sent on.
const FLOW_COMM: sys::OTF2_CommRef = sys::OTF2_CommRef(0);
/// Events held back (over all locations) while flow sends wait for their receivers, before the
/// oldest waiting send is written to its own location.
const MAX_HELD: usize = 1 << 18;

/// An event waiting on its location, or the part of a flow point still to write.
enum Queued {
    Event(Event),
    /// A flow point with its position in the flow and the rank its receive comes from.
    Point {
        p: FlowPoint,
        hop: u32,
        sender: Option<u32>,
    },
    /// The send of a flow hop, waiting for the location of the next point.
    Send {
        p: FlowPoint,
        hop: u32,
        with_point: bool,
    },
}

/// The fields of a slice or instant written with its Enter.
struct Entered<'a> {
    name: tracex_ir::StrId,
    cat: Option<tracex_ir::StrId>,
    instant: bool,
    args: &'a tracex_ir::Args,
    color: Option<tracex_ir::StrId>,
    stack: Option<tracex_ir::StackId>,
    thread_times: (Option<i64>, Option<i64>),
}

/// Writes an OTF2 archive. Implements [`Sink`]; the archive appears at its destination only
/// when `finish` succeeds.
pub struct Exporter {
    // Dropped in this order: libotf2's handle first, then the temporary directory.
    ar: Option<ArchiveWriter>,
    staging: Option<Staging>,
    strings: Strings,
    locs: Locations,
    held: Vec<VecDeque<Queued>>,
    held_total: usize,
    /// Most events held back at once (memory bound, checked by tests).
    max_held: usize,
    regions: Regions,
    attrs: Attributes,
    metrics: Metrics,
    contexts: Contexts,
    flows: FlowLinks,
    list: AttrList,
    /// IR time of tick 0, fixed by the first event (OTF2 timestamps are unsigned).
    base: Option<i64>,
    min_tick: u64,
    max_tick: u64,
    /// Latest time any event or slice end reaches: where open slices are closed.
    end: i64,
    has_flows: bool,
    memory_profile: Option<MemoryProfile>,
    untimed_samples: u64,
    open_slices: u64,
    flows_not_drawn: u64,
}

fn internal_error(msg: String) -> Error {
    Error::invalid(Location::Nowhere, format!("internal: {msg}"))
}

impl Exporter {
    /// Starts an archive at `target` (see [`output::Layout`]), written in a temporary
    /// directory beside it until `finish`. An archive is several files: standard output cannot
    /// take one.
    pub fn create(target: &OutputTarget, opts: &ExportOptions) -> Result<Exporter> {
        let out = match target {
            OutputTarget::Path(p) => p,
            OutputTarget::Stdout => {
                return Err(Error::Unsupported(
                    "an OTF2 archive is several files and cannot be written to standard output"
                        .into(),
                ))
            }
        };
        let memory_profile = match &opts.memory_profile {
            Some(p) => Some(MemoryProfile::load(p)?),
            None => None,
        };
        let staging = Staging::create(Layout::for_path(out))?;
        let chunk = opts.chunk_size.clamp(256 << 10, 16 << 20);
        let ar = ArchiveWriter::create(&staging.tmp, &staging.layout.name, chunk, 4 << 20)?;
        Ok(Exporter {
            staging: Some(staging),
            ar: Some(ar),
            strings: Strings::default(),
            locs: Locations::default(),
            held: Vec::new(),
            held_total: 0,
            max_held: 0,
            regions: Regions::default(),
            attrs: Attributes::default(),
            metrics: Metrics::default(),
            contexts: Contexts::default(),
            flows: FlowLinks::default(),
            list: AttrList::new()?,
            base: None,
            min_tick: u64::MAX,
            max_tick: 0,
            end: i64::MIN,
            has_flows: false,
            memory_profile,
            untimed_samples: 0,
            open_slices: 0,
            flows_not_drawn: 0,
        })
    }

    /// The anchor file the archive will have.
    pub fn anchor(&self) -> Option<std::path::PathBuf> {
        self.staging.as_ref().map(|s| s.layout.anchor())
    }

    fn ar(&mut self) -> &mut ArchiveWriter {
        self.ar.as_mut().expect("archive open until finish")
    }

    /// The OTF2 timestamp of IR time `ts`.
    fn tick(&mut self, ts: i64) -> Result<u64> {
        let base = *self.base.get_or_insert(ts.min(0));
        let t = ts
            .checked_sub(base)
            .filter(|t| *t >= 0)
            .ok_or_else(|| {
                internal_error(format!(
                    "event at {ts} ns before the first event at {base} ns: the OTF2 exporter needs its input in time order"
                ))
            })? as u64;
        self.min_tick = self.min_tick.min(t);
        self.max_tick = self.max_tick.max(t);
        Ok(t)
    }

    fn location_of(&mut self, defs: &Defs, track: tracex_ir::TrackId) -> Result<u32> {
        let l = self
            .locs
            .track(self.ar.as_mut().expect("open"), defs, track)?;
        if self.held.len() <= l as usize {
            self.held.resize_with(l as usize + 1, VecDeque::new);
        }
        Ok(l)
    }

    /// Moves `loc` to time `ts`: writes the Leaves due by then; returns the tick of `ts`.
    fn advance(&mut self, loc: u32, ts: i64) -> Result<u64> {
        self.flush(loc, ts)?;
        self.end = self.end.max(ts);
        self.tick(ts)
    }

    /// Writes the Leaves due on `loc` by time `t`.
    fn flush(&mut self, loc: u32, t: i64) -> Result<()> {
        while let Some(p) = self.locs.locs[loc as usize].open.pop_due(t) {
            self.leave(loc, p, p.end)?;
        }
        Ok(())
    }

    fn leave(&mut self, loc: u32, p: Pending, at: i64) -> Result<()> {
        let t = self.tick(at)?;
        if p.is_open() {
            self.open_slices += 1;
        }
        let Exporter {
            ar,
            strings,
            attrs,
            list,
            ..
        } = self;
        let ar = ar.as_mut().expect("open");
        if p.is_open() {
            let a = attrs.internal(ar, strings, Internal::Open)?;
            list.add(a, AttrValue::U8(1))?;
        }
        ar.evt_writer(loc as u64)?
            .leave(list, t, sys::OTF2_RegionRef(p.region))?;
        Ok(())
    }

    /// Adds a slice's or instant's own fields (besides args) to the attribute list.
    fn extras(
        &mut self,
        defs: &Defs,
        color: Option<tracex_ir::StrId>,
        stack: Option<tracex_ir::StackId>,
        thread_times: (Option<i64>, Option<i64>),
    ) -> Result<()> {
        let Exporter {
            ar,
            strings,
            attrs,
            list,
            regions,
            contexts,
            ..
        } = self;
        let ar = ar.as_mut().expect("open");
        if let Some(c) = color {
            let a = attrs.internal(ar, strings, Internal::Color)?;
            let v = strings.id(ar, defs.str(c), c)?;
            list.add(a, AttrValue::String(v))?;
        }
        if let Some(t) = thread_times.0 {
            let a = attrs.internal(ar, strings, Internal::ThreadTs)?;
            list.add(a, AttrValue::I64(t))?;
        }
        if let Some(t) = thread_times.1 {
            let a = attrs.internal(ar, strings, Internal::ThreadDur)?;
            list.add(a, AttrValue::I64(t))?;
        }
        if let Some(s) = stack {
            let cc = contexts.get(ar, strings, regions, defs, s)?;
            let a = attrs.internal(ar, strings, Internal::Stack)?;
            list.add(
                a,
                AttrValue::Ref {
                    ty: sys::OTF2_TYPE_CALLING_CONTEXT as u8,
                    id: cc.0 as u64,
                },
            )?;
        }
        Ok(())
    }

    /// Writes the Enter of a slice or instant at `ts` (after the Leaves due by then), with its
    /// arguments and own fields as attributes. Returns its tick and region.
    fn enter(
        &mut self,
        defs: &Defs,
        loc: u32,
        ts: i64,
        e: Entered,
    ) -> Result<(u64, sys::OTF2_RegionRef)> {
        let t = self.advance(loc, ts)?;
        let region = {
            let Exporter {
                ar,
                strings,
                regions,
                attrs,
                list,
                ..
            } = self;
            let ar = ar.as_mut().expect("open");
            let region = regions.get(ar, strings, defs, e.name, e.cat, e.instant)?;
            attrs.add_args(ar, strings, defs, e.args, list)?;
            region
        };
        self.extras(defs, e.color, e.stack, e.thread_times)?;
        let Exporter { ar, list, .. } = self;
        ar.as_mut()
            .expect("open")
            .evt_writer(loc as u64)?
            .enter(list, t, region)?;
        Ok((t, region))
    }

    fn slice(&mut self, defs: &Defs, loc: u32, s: &Slice) -> Result<()> {
        let e = Entered {
            name: s.name,
            cat: s.cat,
            instant: false,
            args: &s.args,
            color: s.color,
            stack: s.stack,
            thread_times: (s.thread_ts, s.thread_dur),
        };
        let (_, region) = self.enter(defs, loc, s.ts, e)?;
        let end = match s.dur {
            Some(d) => {
                let end = s.ts.saturating_add(d);
                self.end = self.end.max(end);
                end
            }
            None => i64::MAX,
        };
        self.locs.locs[loc as usize]
            .open
            .push(Pending {
                end,
                region: region.0,
            })
            .map_err(|e| {
                internal_error(format!(
                    "a slice ending at {} ns starts inside one ending at {} ns on {}: put nest::OverlapRouter before the OTF2 exporter",
                    e.end,
                    e.enclosing_end,
                    defs.track_display_name(s.track)
                ))
            })
    }

    fn instant(&mut self, defs: &Defs, loc: u32, i: &Instant) -> Result<()> {
        let e = Entered {
            name: i.name,
            cat: i.cat,
            instant: true,
            args: &i.args,
            color: i.color,
            stack: i.stack,
            thread_times: (None, None),
        };
        let (t, region) = self.enter(defs, loc, i.ts, e)?;
        let Exporter { ar, list, .. } = self;
        ar.as_mut()
            .expect("open")
            .evt_writer(loc as u64)?
            .leave(list, t, region)?;
        Ok(())
    }

    fn sample(&mut self, defs: &Defs, loc: u32, s: &Sample, ts: i64) -> Result<()> {
        let t = self.advance(loc, ts)?;
        let Exporter {
            ar,
            strings,
            regions,
            attrs,
            list,
            contexts,
            ..
        } = self;
        let ar = ar.as_mut().expect("open");
        let cc = match s.stack {
            Some(st) => contexts.get(ar, strings, regions, defs, st)?,
            None => sys::OTF2_UNDEFINED_CALLING_CONTEXT,
        };
        contexts.sampled = true;
        if s.weight != 1 {
            let a = attrs.internal(ar, strings, Internal::Weight)?;
            list.add(a, AttrValue::I64(s.weight))?;
        }
        if let Some(cpu) = s.cpu {
            let a = attrs.internal(ar, strings, Internal::Cpu)?;
            list.add(a, AttrValue::U32(cpu))?;
        }
        if let Some(n) = s.name {
            let a = attrs.internal(ar, strings, Internal::SampleName)?;
            let v = strings.id(ar, defs.str(n), n)?;
            list.add(a, AttrValue::String(v))?;
        }
        ar.evt_writer(loc as u64)?.calling_context_sample(
            list,
            t,
            cc,
            sys::OTF2_InterruptGeneratorRef(0),
        )?;
        Ok(())
    }

    /// The attributes that carry a flow point through OTF2: its id on every message record,
    /// and on the record that stands for the point its role, binding, name and category.
    fn flow_attrs(&mut self, defs: &Defs, p: &FlowPoint, with_point: bool) -> Result<()> {
        let Exporter {
            ar,
            strings,
            attrs,
            list,
            ..
        } = self;
        let ar = ar.as_mut().expect("open");
        let a = attrs.internal(ar, strings, Internal::Flow)?;
        list.add(a, AttrValue::U64(p.id.0))?;
        if !with_point {
            return Ok(());
        }
        let role = match p.role {
            FlowRole::Start => 0,
            FlowRole::Step => 1,
            FlowRole::End => 2,
        };
        let a = attrs.internal(ar, strings, Internal::FlowRole)?;
        list.add(a, AttrValue::U8(role))?;
        if p.bind == FlowBind::Next {
            let a = attrs.internal(ar, strings, Internal::FlowBind)?;
            list.add(a, AttrValue::U8(1))?;
        }
        for (field, v) in [(Internal::FlowName, p.name), (Internal::FlowCat, p.cat)] {
            if let Some(v) = v {
                let a = attrs.internal(ar, strings, field)?;
                let s = strings.id(ar, defs.str(v), v)?;
                list.add(a, AttrValue::String(s))?;
            }
        }
        Ok(())
    }

    fn write_send(
        &mut self,
        defs: &Defs,
        loc: u32,
        p: &FlowPoint,
        receiver: u32,
        with_point: bool,
    ) -> Result<()> {
        let t = self.tick(p.ts)?;
        self.flow_attrs(defs, p, with_point)?;
        self.has_flows = true;
        let Exporter { ar, list, .. } = self;
        ar.as_mut()
            .expect("open")
            .evt_writer(loc as u64)?
            .mpi_send(list, t, receiver, FLOW_COMM, p.id.0 as u32, 0)?;
        Ok(())
    }

    /// The send of hop `hop`, or the send held back if its receiver is not known yet.
    fn send(
        &mut self,
        defs: &Defs,
        loc: u32,
        p: &FlowPoint,
        hop: u32,
        with_point: bool,
    ) -> Result<Option<Queued>> {
        match self.flows.take_receiver(p.id, hop) {
            Some(r) => self.write_send(defs, loc, p, r, with_point).map(|_| None),
            None => {
                self.flows.wait(p.id, hop, loc);
                Ok(Some(Queued::Send {
                    p: *p,
                    hop,
                    with_point,
                }))
            }
        }
    }

    fn recv(&mut self, defs: &Defs, loc: u32, p: &FlowPoint, sender: Option<u32>) -> Result<()> {
        let t = self.tick(p.ts)?;
        self.flow_attrs(defs, p, true)?;
        self.has_flows = true;
        let Exporter { ar, list, .. } = self;
        ar.as_mut()
            .expect("open")
            .evt_writer(loc as u64)?
            .mpi_recv(list, t, sender.unwrap_or(loc), FLOW_COMM, p.id.0 as u32, 0)?;
        Ok(())
    }

    /// Writes one held or new item on `loc`; returns what must wait (a send without receiver).
    fn process(&mut self, defs: &Defs, loc: u32, item: Queued) -> Result<Option<Queued>> {
        match item {
            Queued::Event(Event::Slice(s)) => self.slice(defs, loc, &s).map(|_| None),
            Queued::Event(Event::Instant(i)) => self.instant(defs, loc, &i).map(|_| None),
            Queued::Event(Event::Sample(s)) => {
                let ts = s.ts.expect("untimed samples are dropped before");
                self.sample(defs, loc, &s, ts).map(|_| None)
            }
            Queued::Event(Event::Counter(c)) => {
                self.flush(loc, c.ts)?;
                self.counter(defs, &c).map(|_| None)
            }
            Queued::Event(Event::Flow(_)) => Err(internal_error("flow queued as an event".into())),
            Queued::Point { p, hop, sender } => {
                self.flush(loc, p.ts)?;
                self.end = self.end.max(p.ts);
                match p.role {
                    FlowRole::Start => self.send(defs, loc, &p, hop, true),
                    FlowRole::Step => {
                        self.recv(defs, loc, &p, sender)?;
                        self.send(defs, loc, &p, hop, false)
                    }
                    FlowRole::End => self.recv(defs, loc, &p, sender).map(|_| None),
                }
            }
            Queued::Send { p, hop, with_point } => self.send(defs, loc, &p, hop, with_point),
        }
    }

    fn counter(&mut self, defs: &Defs, c: &tracex_ir::CounterValue) -> Result<()> {
        let t = self.tick(c.ts)?;
        self.end = self.end.max(c.ts);
        let Exporter {
            ar,
            locs,
            metrics,
            list,
            held,
            ..
        } = self;
        let loc = metrics.value(ar.as_mut().expect("open"), locs, defs, list, c, t)?;
        if held.len() <= loc as usize {
            held.resize_with(loc as usize + 1, VecDeque::new);
        }
        Ok(())
    }

    /// Writes `item` on `loc` now, or holds it behind a waiting send.
    fn route(&mut self, defs: &Defs, loc: u32, item: Queued) -> Result<()> {
        if !self.held[loc as usize].is_empty() {
            self.held[loc as usize].push_back(item);
            self.held_total += 1;
            self.max_held = self.max_held.max(self.held_total);
            while self.held_total > MAX_HELD {
                let longest = (0..self.held.len())
                    .max_by_key(|&l| self.held[l].len())
                    .expect("something is held") as u32;
                self.give_up_waiting(defs, longest)?;
            }
            return Ok(());
        }
        if let Some(wait) = self.process(defs, loc, item)? {
            self.held[loc as usize].push_front(wait);
            self.held_total += 1;
            self.max_held = self.max_held.max(self.held_total);
        }
        Ok(())
    }

    /// Writes what `loc` holds, up to the next send that must wait.
    fn drain(&mut self, defs: &Defs, loc: u32) -> Result<()> {
        while let Some(item) = self.held[loc as usize].pop_front() {
            self.held_total -= 1;
            if let Some(wait) = self.process(defs, loc, item)? {
                self.held[loc as usize].push_front(wait);
                self.held_total += 1;
                self.max_held = self.max_held.max(self.held_total);
                self.max_held = self.max_held.max(self.held_total);
                break;
            }
        }
        Ok(())
    }

    /// Writes the waiting send at the head of `loc` to `loc` itself, then what follows it.
    fn give_up_waiting(&mut self, defs: &Defs, loc: u32) -> Result<()> {
        if let Some(Queued::Send { p, hop, with_point }) = self.held[loc as usize].pop_front() {
            self.held_total -= 1;
            self.flows.abandon(p.id, hop);
            self.flows_not_drawn += 1;
            self.write_send(defs, loc, &p, loc, with_point)?;
        }
        self.drain(defs, loc)
    }

    fn flow_point(&mut self, defs: &Defs, p: FlowPoint) -> Result<()> {
        let loc = self.location_of(defs, p.track)?;
        let a = self.flows.arrive(p.id, p.role, loc);
        self.route(
            defs,
            loc,
            Queued::Point {
                p,
                hop: a.hop,
                sender: a.sender,
            },
        )?;
        if let Some(l) = a.unblocked {
            self.drain(defs, l)?;
        }
        Ok(())
    }

    /// Writes the memory profile's allocators (their own locations, in their own time order).
    /// Their process, threads and counters are added to a copy of the trace's definitions,
    /// which the rest of the archive is then written from.
    fn write_memory_profile(
        &mut self,
        mp: &MemoryProfile,
        defs: &Defs,
        diag: &mut Diagnostics,
    ) -> Result<Defs> {
        let mut defs = defs.clone();
        let (events, placement) = mp.emit(&mut defs);
        self.metrics.on_track.extend(placement);
        for e in events {
            match e {
                Event::Counter(c) => {
                    let track = self.metrics.on_track[&c.counter];
                    let loc = self.location_of(&defs, track)?;
                    self.route(&defs, loc, Queued::Event(Event::Counter(c)))?;
                }
                other => self.event(&defs, diag, other)?,
            }
        }
        Ok(defs)
    }

    /// Locations and groups for named threads and processes that had no events, so that a
    /// reader sees every thread and process the input named.
    fn named_but_empty(&mut self, defs: &Defs) -> Result<()> {
        for t in &defs.threads {
            if t.name.is_some() || t.sort_index.is_some() || !t.meta.is_empty() {
                self.location_of(defs, t.track)?;
            }
        }
        for (i, p) in defs.processes.iter().enumerate() {
            if p.name.is_some() || p.sort_index.is_some() || !p.meta.is_empty() {
                self.locs.group(Some(tracex_ir::ProcessId(i as u32)));
            }
        }
        Ok(())
    }

    fn write_definitions(&mut self, defs: &Defs, events: &[u64]) -> Result<()> {
        let (offset, length) = if self.min_tick == u64::MAX {
            (0, 0)
        } else {
            (self.min_tick, self.max_tick - self.min_tick)
        };
        let base = self.base.unwrap_or(0);
        let realtime = defs
            .clock
            .origin_unix_ns
            .and_then(|o| o.checked_add(base)?.checked_add(offset as i64))
            .filter(|r| *r >= 0)
            .map_or(sys::OTF2_UNDEFINED_TIMESTAMP, |r| r as u64);
        let Exporter {
            ar,
            strings,
            locs,
            regions,
            attrs,
            metrics,
            contexts,
            has_flows,
            ..
        } = self;
        let ar = ar.as_mut().expect("open");
        ar.global_defs()?
            .clock_properties(1_000_000_000, offset, length, realtime)?;
        locs.write_defs(ar, strings, defs, events)?;
        // The system tree's root (node 0) carries the trace-level fields.
        let trace = identity::trace_json(defs, base);
        props::write(
            ar,
            strings,
            props::Owner::Node(0),
            identity::TRACE_PROPERTY,
            &trace,
        )?;
        let next_group = regions.write_defs(ar, strings, defs, 0)?;
        if *has_flows {
            // A communicator over every location: a location's rank is its ref.
            let n = locs.len();
            let members: Vec<u64> = (0..n).collect();
            let empty = strings.name(ar, "")?;
            let name = strings.name(ar, "tracex flows")?;
            let g = ar.global_defs()?;
            g.group(
                sys::OTF2_GroupRef(next_group),
                empty,
                sys::OTF2_GROUP_TYPE_COMM_LOCATIONS,
                sys::OTF2_PARADIGM_MPI,
                &members,
            )?;
            g.group(
                sys::OTF2_GroupRef(next_group + 1),
                empty,
                sys::OTF2_GROUP_TYPE_COMM_GROUP,
                sys::OTF2_PARADIGM_MPI,
                &members,
            )?;
            g.comm(FLOW_COMM, name, sys::OTF2_GroupRef(next_group + 1))?;
        }
        attrs.write_defs(ar.global_defs()?)?;
        metrics.write_defs(ar, strings, defs)?;
        contexts.write_defs(ar, strings)?;
        ar.set_creator(&format!("tracex {}", env!("CARGO_PKG_VERSION")))?;
        // Only short values: libotf2 silently truncates an anchor file that outgrows its buffer.
        ar.set_property(identity::FORMAT_PROPERTY, "1")?;
        if let Some(o) = defs.clock.origin_unix_ns {
            ar.set_property(identity::ORIGIN_PROPERTY, &o.to_string())?;
        }
        Ok(())
    }

    fn record_diagnostics(&self, diag: &mut Diagnostics) {
        let none = None::<String>;
        diag.record_n(
            &d::EXPORT_UNTIMED_SAMPLE,
            self.untimed_samples,
            Location::Nowhere,
            none.clone(),
        );
        diag.record_n(
            &d::EXPORT_NUL_REPLACED,
            self.strings.nul_replaced,
            Location::Nowhere,
            none.clone(),
        );
        diag.record_n(
            &d::EXPORT_OPEN_SLICE,
            self.open_slices,
            Location::Nowhere,
            none.clone(),
        );
        diag.record_n(
            &d::EXPORT_FLOW_NOT_DRAWN,
            self.flows_not_drawn,
            Location::Nowhere,
            none,
        );
    }
}

impl Sink for Exporter {
    fn event(&mut self, defs: &Defs, _: &mut Diagnostics, event: Event) -> Result<()> {
        match event {
            Event::Counter(c) => match self.metrics.on_track.get(&c.counter) {
                Some(&track) => {
                    let loc = self.location_of(defs, track)?;
                    self.route(defs, loc, Queued::Event(Event::Counter(c)))
                }
                None => self.counter(defs, &c),
            },
            Event::Flow(p) => self.flow_point(defs, p),
            Event::Sample(s) if s.ts.is_none() => {
                self.untimed_samples += 1;
                Ok(())
            }
            ev => {
                let track = ev
                    .track()
                    .expect("slices, instants and samples have a track");
                let loc = self.location_of(defs, track)?;
                self.route(defs, loc, Queued::Event(ev))
            }
        }
    }

    fn finish(&mut self, defs: &Defs, diag: &mut Diagnostics) -> Result<()> {
        if self.ar.is_none() {
            return Err(internal_error("OTF2 exporter finished twice".into()));
        }
        let with_profile;
        let defs = match self.memory_profile.take() {
            Some(mp) => {
                with_profile = self.write_memory_profile(&mp, defs, diag)?;
                &with_profile
            }
            None => defs,
        };
        // Sends still waiting had a flow whose next point never came (E2 says it always does).
        for l in 0..self.held.len() as u32 {
            while !self.held[l as usize].is_empty() {
                self.give_up_waiting(defs, l)?;
            }
        }
        self.named_but_empty(defs)?;
        for l in 0..self.locs.len() as u32 {
            while let Some(p) = self.locs.locs[l as usize].open.pop() {
                // `end` is at least the start of every slice written, open ones included.
                let at = if p.is_open() { self.end } else { p.end };
                self.leave(l, p, at)?;
            }
        }
        let n = self.locs.len();
        let events = self.ar().close_events(n)?.to_vec();
        self.write_definitions(defs, &events)?;
        self.ar.take().expect("open").close()?;
        self.staging.take().expect("staged").commit()?;
        self.record_diagnostics(diag);
        Ok(())
    }
}

#[cfg(test)]
mod tests;
