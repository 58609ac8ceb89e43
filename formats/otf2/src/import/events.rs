//! OTF2 events → IR events. Enters are held per location until their Leave, which emits the
//! slice (so slices come in end order: the importer declares `EventOrder::Unsorted`).
//! Parameters, and the details of messages, collectives and I/O ([`Detail`]), become arguments
//! of the innermost open slice; metrics counter values; MPI and RMA messages, tracex's flow
//! attributes and Score-P's `callsite id` parameters flows; measurement off and buffer flushes
//! slices; forks and joins instants.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;
use tracex_ir::event::{CounterValue, FlowBind, FlowRole, Instant, Sample, Slice};
use tracex_ir::track::{FlowPairer, PendingFlowPoint};
use tracex_ir::{Arg, Args, Event, ImportCtx, Location, Num, StackId, StrId, TrackId, Value};

use super::defs::Otf2Defs;
use super::details::{Detail, Keys};
use super::mapping::{paradigm_name, AttrMap, LocKind, Mapping};
use crate::diag as d;
use crate::ffi::reader::ParamVal;
use crate::ffi::{AttrValue, Attrs, EventHandler, MetricVal, Result};
use crate::identity::Internal;

/// A region entered and not left yet.
struct Open {
    region: u32,
    instant: bool,
    slice: Slice,
    /// What the records inside it said, once one did.
    detail: Option<Box<Detail>>,
}

/// The tracex-internal fields found among an event's attributes.
#[derive(Default)]
struct Extras {
    open: bool,
    color: Option<StrId>,
    tts: Option<i64>,
    tdur: Option<i64>,
    stack: Option<StackId>,
    flow: Option<u64>,
    flow_role: Option<u8>,
    flow_next: bool,
    flow_name: Option<StrId>,
    flow_cat: Option<StrId>,
    weight: Option<i64>,
    cpu: Option<u32>,
    sample_name: Option<StrId>,
}

/// What can pair two events into a flow.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum FlowKey {
    /// A tracex flow id (from attributes).
    Tracex(u64),
    /// A message or RMA operation matched here; the number is unique per pair.
    Pair(u64),
}

/// Messages waiting for their other end, per (communicator, sender, receiver, tag).
#[derive(Default)]
struct Mailbox {
    sends: VecDeque<(TrackId, i64)>,
    recvs: VecDeque<(TrackId, i64)>,
}

/// An RMA put or get issued and not completed yet.
struct RmaOp {
    get: bool,
    remote: u64,
    origin: TrackId,
    issued: i64,
}

pub struct Handler<'a, 'c> {
    pub ctx: &'a mut ImportCtx<'c>,
    pub map: Mapping,
    pub d: &'a Otf2Defs,
    open: FxHashMap<u64, Vec<Open>>,
    pub flows: FlowPairer<FlowKey>,
    /// Points of tracex's own flows, paired at the end: at equal times libotf2 gives events
    /// of different locations in no particular order, and their roles are known.
    tracex_points: Vec<(u64, PendingFlowPoint)>,
    pairs: u64,
    mailboxes: FxHashMap<(u32, u64, u64, u32), Mailbox>,
    /// RMA operations waiting for their completion, by (origin, window, matching id).
    rma: FxHashMap<(u64, u32, u64), RmaOp>,
    callsites: FxHashMap<u64, VecDeque<(TrackId, i64)>>,
    callsite_key: Option<StrId>,
    /// Locations whose measurement is off, since when.
    off: FxHashMap<u64, i64>,
    /// The argument keys of [`Detail`].
    keys: Keys,
    /// Event records seen per location (compared with what libotf2 read).
    pub seen: FxHashMap<u64, u64>,
    pub unmapped: u64,
    pub first_unmapped: Option<&'static str>,
    index: u64,
}

impl<'a, 'c> Handler<'a, 'c> {
    pub fn new(ctx: &'a mut ImportCtx<'c>, map: Mapping, d: &'a Otf2Defs) -> Self {
        let callsite_key = ctx.defs.strings.lookup("callsite id");
        let keys = Keys::new(ctx.defs);
        Handler {
            ctx,
            map,
            d,
            open: FxHashMap::default(),
            flows: FlowPairer::default(),
            tracex_points: Vec::new(),
            pairs: 0,
            mailboxes: FxHashMap::default(),
            rma: FxHashMap::default(),
            callsites: FxHashMap::default(),
            callsite_key,
            off: FxHashMap::default(),
            keys,
            seen: FxHashMap::default(),
            unmapped: 0,
            first_unmapped: None,
            index: 0,
        }
    }

    fn note(&mut self, loc: u64) {
        *self.seen.entry(loc).or_default() += 1;
        self.index += 1;
        if self.index % 4096 == 0 {
            self.ctx.progress.set_done(self.index);
        }
    }

    fn here(&self) -> Location {
        Location::Event(self.index.saturating_sub(1))
    }

    fn diag(&mut self, kind: &'static tracex_ir::DiagKind) {
        let at = self.here();
        self.ctx.diag.record(kind, at);
    }

    fn track(&mut self, loc: u64) -> Option<TrackId> {
        let t = self.map.track(self.d, self.ctx.defs, loc);
        if t.is_none() {
            self.diag(&d::IMPORT_UNDEFINED_REF);
        }
        t
    }

    /// Splits attributes into IR arguments and tracex's own fields.
    fn attrs(&mut self, attrs: Attrs, args: &mut Args) -> Extras {
        let mut x = Extras::default();
        let dd = self.d;
        for &(a, v) in attrs {
            let Some(m) = self.map.attr(self.d, self.ctx.defs, a) else {
                self.diag(&d::IMPORT_UNDEFINED_REF);
                continue;
            };
            let int = |v: AttrValue| match v {
                AttrValue::I64(i) => Some(i),
                AttrValue::U64(u) => i64::try_from(u).ok(),
                AttrValue::U8(u) => Some(u.into()),
                AttrValue::U32(u) => Some(u.into()),
                _ => None,
            };
            let text = |v: AttrValue, defs: &mut tracex_ir::Defs| match v {
                AttrValue::String(s) => Some(defs.intern(dd.s(s.0))),
                _ => None,
            };
            match m {
                AttrMap::Internal(i) => match i {
                    Internal::Open => x.open = true,
                    Internal::Color => x.color = text(v, self.ctx.defs),
                    Internal::ThreadTs => x.tts = int(v),
                    Internal::ThreadDur => x.tdur = int(v),
                    Internal::Stack => {
                        if let AttrValue::Ref { id, .. } = v {
                            x.stack = self.map.stack(self.d, self.ctx.defs, id as u32);
                        }
                    }
                    Internal::Flow => {
                        x.flow = match v {
                            AttrValue::U64(u) => Some(u),
                            _ => None,
                        }
                    }
                    Internal::FlowRole => x.flow_role = int(v).map(|r| r as u8),
                    Internal::FlowBind => x.flow_next = int(v) == Some(1),
                    Internal::FlowName => x.flow_name = text(v, self.ctx.defs),
                    Internal::FlowCat => x.flow_cat = text(v, self.ctx.defs),
                    Internal::Weight => x.weight = int(v),
                    Internal::Cpu => x.cpu = int(v).map(|c| c as u32),
                    Internal::SampleName => x.sample_name = text(v, self.ctx.defs),
                },
                AttrMap::Arg { key, .. } => {
                    let value = Mapping::value(dd, m, v);
                    tracex_ir::defs::set_arg(args, key, value);
                }
            }
        }
        x
    }

    fn emit(&mut self, e: Event) -> Result<()> {
        self.ctx
            .emit(e)
            .map_err(|e| crate::ffi::Otf2Error::other(e.to_string()))
    }

    /// The duration of a slice from `from` to `to` (`None`: never ended); 0, counted, when the
    /// end comes before the begin.
    fn duration(&mut self, from: i64, to: Option<i64>) -> Option<i64> {
        match to {
            Some(t) if t >= from => Some(t - from),
            Some(_) => {
                self.diag(&d::IMPORT_TIME_BACKWARDS);
                Some(0)
            }
            None => None,
        }
    }

    /// Emits an open slice ended at `ts` (`None`: never ended).
    fn close(&mut self, o: Open, ts: Option<i64>) -> Result<()> {
        let mut s = o.slice;
        if let Some(detail) = o.detail {
            detail.write(self.d, self.ctx.defs, &self.keys, &mut s.args);
        }
        s.dur = self.duration(s.ts, ts);
        if o.instant && s.dur == Some(0) {
            return self.emit(Event::Instant(Instant {
                track: s.track,
                ts: s.ts,
                name: s.name,
                cat: s.cat,
                args: s.args,
                stack: s.stack,
                color: s.color,
            }));
        }
        self.emit(Event::Slice(s))
    }

    fn pair(
        &mut self,
        from: (TrackId, i64),
        to: (TrackId, i64),
        name: Option<StrId>,
        cat: Option<StrId>,
    ) {
        self.pairs += 1;
        let key = FlowKey::Pair(self.pairs);
        for (role, (track, ts)) in [(FlowRole::Start, from), (FlowRole::End, to)] {
            self.flows.push(
                key.clone(),
                PendingFlowPoint {
                    role,
                    track,
                    ts,
                    bind: FlowBind::Enclosing,
                    name,
                    cat,
                    event: self.index,
                },
            );
        }
    }

    /// A message record: a tracex flow point, or one end of an MPI message to match.
    #[allow(clippy::too_many_arguments)]
    fn message(
        &mut self,
        loc: u64,
        t: u64,
        attrs: Attrs,
        send: bool,
        peer: u32,
        comm: u32,
        tag: u32,
        len: u64,
    ) -> Result<()> {
        let mut args = Args::new();
        let x = self.attrs(attrs, &mut args);
        let Some(track) = self.track(loc) else {
            return Ok(());
        };
        let ts = self.map.ns(t);
        if let Some(id) = x.flow {
            // The hop records of a step carry only the id: the point is on its receive.
            if let Some(role) = x.flow_role {
                let role = match role {
                    0 => FlowRole::Start,
                    1 => FlowRole::Step,
                    _ => FlowRole::End,
                };
                self.tracex_points.push((
                    id,
                    PendingFlowPoint {
                        role,
                        track,
                        ts,
                        bind: if x.flow_next {
                            FlowBind::Next
                        } else {
                            FlowBind::Enclosing
                        },
                        name: x.flow_name,
                        cat: x.flow_cat,
                        event: self.index.saturating_sub(1),
                    },
                ));
            }
            return Ok(());
        }
        let kind = if send { "MpiSend" } else { "MpiRecv" };
        self.detail(loc, ts, kind, |d| d.message(send, peer, comm, tag, len))?;
        let Some(peer_loc) = self.map.rank_location(self.d, comm, peer, loc) else {
            self.diag(&d::IMPORT_UNDEFINED_REF);
            return Ok(());
        };
        let key = if send {
            (comm, loc, peer_loc, tag)
        } else {
            (comm, peer_loc, loc, tag)
        };
        let mb = self.mailboxes.entry(key).or_default();
        let other = if send {
            mb.recvs.pop_front()
        } else {
            mb.sends.pop_front()
        };
        match other {
            Some(o) => {
                let (from, to) = if send {
                    ((track, ts), o)
                } else {
                    (o, (track, ts))
                };
                let cat = Some(self.ctx.defs.intern(tracex_ir::kind::cat::MPI));
                self.pair(from, to, None, cat);
            }
            None if send => mb.sends.push_back((track, ts)),
            None => mb.recvs.push_back((track, ts)),
        }
        Ok(())
    }

    /// rocprofv3 names each Enter's tracing domain (`hip_api`, `kernel_dispatch`, ...) in a
    /// string attribute `category`: the slice's category, as in its Perfetto output.
    fn category_from_attribute(&mut self, slice: &mut Slice) {
        let defs = &mut *self.ctx.defs;
        let Some(i) = slice
            .args
            .iter()
            .position(|a| defs.str(a.key) == "category")
        else {
            return;
        };
        if let Value::Str(c) = &slice.args[i].value {
            slice.cat = Some(defs.intern(c));
            slice.args.remove(i);
        }
    }

    /// Hands a record's details to the innermost open slice of `loc`; with no slice open, to an
    /// instant named after the record.
    fn detail(&mut self, loc: u64, ts: i64, kind: &str, f: impl FnOnce(&mut Detail)) -> Result<()> {
        if let Some(o) = self.open.get_mut(&loc).and_then(|s| s.last_mut()) {
            f(o.detail.get_or_insert_with(Box::default));
            return Ok(());
        }
        self.diag(&d::IMPORT_RECORD_OUTSIDE_REGION);
        let Some(track) = self.track(loc) else {
            return Ok(());
        };
        let mut detail = Detail::default();
        f(&mut detail);
        let mut args = Args::new();
        detail.write(self.d, self.ctx.defs, &self.keys, &mut args);
        let name = self.ctx.defs.intern(kind);
        self.emit(Event::Instant(Instant {
            args,
            ..Instant::new(track, ts, name)
        }))
    }

    /// A slice of the measurement system (measurement off, a buffer flush) on `loc`.
    fn measurement_slice(
        &mut self,
        loc: u64,
        from: i64,
        to: Option<i64>,
        name: &str,
    ) -> Result<()> {
        let Some(track) = self.track(loc) else {
            return Ok(());
        };
        let name = self.ctx.defs.intern(name);
        let mut s = Slice::new(track, from, 0, name);
        s.cat = Some(self.ctx.defs.intern("measurement_system"));
        s.dur = self.duration(from, to);
        self.emit(Event::Slice(s))
    }

    /// Emits what is still open and pending at the end of the archive.
    pub fn finish(&mut self) -> Result<()> {
        // Start before step before end at equal times, so the pairer sees each chain in order.
        let mut points = std::mem::take(&mut self.tracex_points);
        points.sort_by_key(|(_, p)| (p.ts, p.role));
        for (id, p) in points {
            self.flows.push(FlowKey::Tracex(id), p);
        }
        // measurement never turned on again: open slices, as regions never left
        let mut off: Vec<(u64, i64)> = self.off.drain().collect();
        off.sort_unstable();
        for (loc, from) in off {
            self.measurement_slice(loc, from, None, "MeasurementOff")?;
        }
        let mut locs: Vec<u64> = self.open.keys().copied().collect();
        locs.sort_unstable();
        for loc in locs {
            let stack = self.open.remove(&loc).unwrap_or_default();
            for o in stack {
                self.diag(&d::IMPORT_ENTER_WITHOUT_LEAVE);
                self.close(o, None)?;
            }
        }
        let unmatched: usize = self
            .mailboxes
            .values()
            .map(|m| m.sends.len() + m.recvs.len())
            .sum::<usize>()
            + self.rma.len()
            + self.callsites.values().map(VecDeque::len).sum::<usize>();
        self.ctx.diag.record_n(
            &d::IMPORT_UNMATCHED_MESSAGE,
            unmatched as u64,
            Location::Nowhere,
            None::<String>,
        );
        Ok(())
    }
}

impl EventHandler for Handler<'_, '_> {
    fn enter(&mut self, loc: u64, t: u64, attrs: Attrs, region: u32) -> Result<()> {
        self.note(loc);
        let kind = self.map.kind(loc);
        let Some(track) = self.track(loc) else {
            return Ok(());
        };
        let Some(r) = self.map.region(self.d, self.ctx.defs, region, kind) else {
            self.diag(&d::IMPORT_UNDEFINED_REF);
            return Ok(());
        };
        let mut slice = Slice::new(track, self.map.ns(t), 0, r.name);
        slice.cat = r.cat;
        let x = self.attrs(attrs, &mut slice.args);
        if !self.map.tracex {
            self.category_from_attribute(&mut slice);
        }
        slice.color = x.color;
        slice.thread_ts = x.tts;
        slice.thread_dur = x.tdur;
        slice.stack = x.stack;
        self.open.entry(loc).or_default().push(Open {
            region,
            instant: r.instant,
            slice,
            detail: None,
        });
        Ok(())
    }

    fn leave(&mut self, loc: u64, t: u64, attrs: Attrs, region: u32) -> Result<()> {
        self.note(loc);
        let ts = self.map.ns(t);
        let stack = self.open.entry(loc).or_default();
        let Some(pos) = stack.iter().rposition(|o| o.region == region) else {
            self.diag(&d::IMPORT_LEAVE_WITHOUT_ENTER);
            return Ok(());
        };
        let mut inner = stack.split_off(pos);
        let mut o = inner.remove(0);
        if !inner.is_empty() {
            self.diag(&d::IMPORT_LEAVE_MISMATCH);
        }
        for i in inner.into_iter().rev() {
            self.close(i, Some(ts))?;
        }
        let x = self.attrs(attrs, &mut o.slice.args);
        self.close(o, if x.open { None } else { Some(ts) })
    }

    fn metric(
        &mut self,
        loc: u64,
        t: u64,
        _attrs: Attrs,
        metric: u32,
        values: &[MetricVal],
    ) -> Result<()> {
        self.note(loc);
        let Some(members) = self.d.metric_members(metric) else {
            self.diag(&d::IMPORT_UNDEFINED_REF);
            return Ok(());
        };
        let ts = self.map.ns(t);
        for (&member, &v) in members.iter().zip(values) {
            let counter = self.map.counter(self.d, self.ctx.defs, loc, metric, member);
            let value = match v {
                MetricVal::I64(i) => Num::Int(i),
                MetricVal::F64(f) => Num::Float(f),
                MetricVal::U64(u) => match i64::try_from(u) {
                    Ok(i) => Num::Int(i),
                    Err(_) => {
                        self.diag(&d::IMPORT_METRIC_U64_AS_FLOAT);
                        Num::Float(u as f64)
                    }
                },
            };
            self.emit(Event::Counter(CounterValue { counter, ts, value }))?;
        }
        Ok(())
    }

    fn mpi_send(
        &mut self,
        loc: u64,
        t: u64,
        attrs: Attrs,
        receiver: u32,
        comm: u32,
        tag: u32,
        len: u64,
        _req: Option<u64>,
    ) -> Result<()> {
        self.note(loc);
        self.message(loc, t, attrs, true, receiver, comm, tag, len)
    }

    fn mpi_recv(
        &mut self,
        loc: u64,
        t: u64,
        attrs: Attrs,
        sender: u32,
        comm: u32,
        tag: u32,
        len: u64,
        _req: Option<u64>,
    ) -> Result<()> {
        self.note(loc);
        self.message(loc, t, attrs, false, sender, comm, tag, len)
    }

    fn rma_transfer(
        &mut self,
        loc: u64,
        t: u64,
        _attrs: Attrs,
        get: bool,
        win: u32,
        remote: u32,
        _bytes: u64,
        matching: u64,
    ) -> Result<()> {
        self.note(loc);
        let remote_loc = self
            .d
            .windows
            .get(&win)
            .and_then(|&c| self.map.rank_location(self.d, c, remote, loc));
        let (Some(remote_loc), Some(track)) = (remote_loc, self.track(loc)) else {
            self.diag(&d::IMPORT_UNDEFINED_REF);
            return Ok(());
        };
        let ts = self.map.ns(t);
        let op = RmaOp {
            get,
            remote: remote_loc,
            origin: track,
            issued: ts,
        };
        self.rma.insert((loc, win, matching), op);
        Ok(())
    }

    fn rma_op_complete(
        &mut self,
        loc: u64,
        t: u64,
        _attrs: Attrs,
        win: u32,
        matching: u64,
    ) -> Result<()> {
        self.note(loc);
        let Some(op) = self.rma.remove(&(loc, win, matching)) else {
            return Ok(());
        };
        let RmaOp {
            get,
            remote: remote_loc,
            origin,
            issued,
        } = op;
        let Some(remote) = self.track(remote_loc) else {
            return Ok(());
        };
        let done = self.map.ns(t);
        let cat = Some(self.ctx.defs.intern("rma"));
        // A put goes from the origin to the target, a get from the target to the origin.
        if get {
            self.pair((remote, issued), (origin, done), None, cat);
        } else {
            self.pair((origin, issued), (remote, done), None, cat);
        }
        Ok(())
    }

    fn parameter(
        &mut self,
        loc: u64,
        t: u64,
        _attrs: Attrs,
        parameter: u32,
        value: ParamVal,
    ) -> Result<()> {
        self.note(loc);
        let Some(&key) = self.map.parameters.get(&parameter) else {
            self.diag(&d::IMPORT_UNDEFINED_REF);
            return Ok(());
        };
        let ts = self.map.ns(t);
        let v = match value {
            ParamVal::String(s) => Value::Str(self.d.s(s).into()),
            ParamVal::Int(i) => Value::Int(i),
            ParamVal::UInt(u) => Value::UInt(u),
        };
        // Score-P links a kernel launch to the kernel by a `callsite id` parameter on both.
        if Some(key) == self.callsite_key || self.ctx.defs.str(key) == "callsite id" {
            self.callsite_key = Some(key);
            if let (Value::UInt(id), Some(track)) = (&v, self.track(loc)) {
                if self.map.kind(loc) == LocKind::Gpu {
                    if let Some(from) = self.callsites.get_mut(id).and_then(VecDeque::pop_front) {
                        self.pair(from, (track, ts), None, None);
                    }
                } else {
                    self.callsites
                        .entry(*id)
                        .or_default()
                        .push_back((track, ts));
                }
            }
        }
        match self.open.get_mut(&loc).and_then(|s| s.last_mut()) {
            Some(o) => tracex_ir::defs::set_arg(&mut o.slice.args, key, v),
            None => {
                self.diag(&d::IMPORT_PARAMETER_OUTSIDE_REGION);
                let Some(track) = self.track(loc) else {
                    return Ok(());
                };
                let k = self.ctx.defs.intern("value");
                self.emit(Event::Instant(Instant {
                    track,
                    ts,
                    name: key,
                    cat: None,
                    args: vec![Arg { key: k, value: v }],
                    stack: None,
                    color: None,
                }))?;
            }
        }
        Ok(())
    }

    fn program_begin(
        &mut self,
        loc: u64,
        t: u64,
        attrs: Attrs,
        name: u32,
        args: &[u32],
    ) -> Result<()> {
        self.note(loc);
        let Some(track) = self.track(loc) else {
            return Ok(());
        };
        let mut a = Args::new();
        let k = self.ctx.defs.intern("program");
        a.push(Arg {
            key: k,
            value: Value::Str(self.d.s(name).into()),
        });
        if !args.is_empty() {
            let list: Vec<&str> = args.iter().map(|&s| self.d.s(s)).collect();
            let k = self.ctx.defs.intern("arguments");
            a.push(Arg {
                key: k,
                value: Value::Json(serde_json::to_string(&list).unwrap_or_default().into()),
            });
        }
        self.attrs(attrs, &mut a);
        // Score-P names the process id in an attribute.
        if !self.map.tracex {
            let pid = a
                .iter()
                .find_map(|x| match (self.ctx.defs.str(x.key), &x.value) {
                    ("ProcessId", Value::UInt(p)) => i64::try_from(*p).ok(),
                    _ => None,
                });
            if let (Some(pid), Some(p)) = (pid, self.map.process_of(self.d, loc)) {
                self.ctx.defs.process_mut(p).os_pid.get_or_insert(pid);
            }
        }
        let name = self.ctx.defs.intern("ProgramBegin");
        self.emit(Event::Instant(Instant {
            track,
            ts: self.map.ns(t),
            name,
            cat: None,
            args: a,
            stack: None,
            color: None,
        }))
    }

    fn program_end(&mut self, loc: u64, t: u64, attrs: Attrs, status: i64) -> Result<()> {
        self.note(loc);
        let Some(track) = self.track(loc) else {
            return Ok(());
        };
        let mut a = Args::new();
        // OTF2_UNDEFINED_INT64 means "unknown".
        if status != i64::MIN {
            let k = self.ctx.defs.intern("exit_status");
            a.push(Arg {
                key: k,
                value: Value::Int(status),
            });
        }
        self.attrs(attrs, &mut a);
        let name = self.ctx.defs.intern("ProgramEnd");
        self.emit(Event::Instant(Instant {
            track,
            ts: self.map.ns(t),
            name,
            cat: None,
            args: a,
            stack: None,
            color: None,
        }))
    }

    fn calling_context_sample(
        &mut self,
        loc: u64,
        t: u64,
        attrs: Attrs,
        context: u32,
        _generator: u32,
    ) -> Result<()> {
        self.note(loc);
        let Some(track) = self.track(loc) else {
            return Ok(());
        };
        let mut ignored = Args::new();
        let x = self.attrs(attrs, &mut ignored);
        let stack = if context == otf2_sys::OTF2_UNDEFINED_CALLING_CONTEXT.0 {
            None
        } else {
            self.map.stack(self.d, self.ctx.defs, context)
        };
        self.emit(Event::Sample(Sample {
            track,
            ts: Some(self.map.ns(t)),
            stack,
            weight: x.weight.unwrap_or(1),
            cpu: x.cpu,
            name: x.sample_name,
        }))
    }

    fn collective(
        &mut self,
        loc: u64,
        t: u64,
        _attrs: Attrs,
        op: u8,
        comm: u32,
        root: u32,
        sent: u64,
        received: u64,
    ) -> Result<()> {
        self.note(loc);
        let ts = self.map.ns(t);
        self.detail(loc, ts, "MpiCollectiveEnd", |d| {
            d.collective(op, comm, root, sent, received)
        })
    }

    fn io_operation(
        &mut self,
        loc: u64,
        t: u64,
        _attrs: Attrs,
        handle: u32,
        mode: Option<u8>,
        bytes: u64,
    ) -> Result<()> {
        self.note(loc);
        let ts = self.map.ns(t);
        let kind = match mode {
            Some(_) => "IoOperationBegin",
            None => "IoOperationComplete",
        };
        self.detail(loc, ts, kind, |d| d.io(handle, mode, bytes))
    }

    fn measurement(&mut self, loc: u64, t: u64, _attrs: Attrs, on: bool) -> Result<()> {
        self.note(loc);
        let ts = self.map.ns(t);
        if !on {
            self.off.entry(loc).or_insert(ts);
        } else if let Some(from) = self.off.remove(&loc) {
            self.measurement_slice(loc, from, Some(ts), "MeasurementOff")?;
        }
        Ok(())
    }

    fn buffer_flush(&mut self, loc: u64, t: u64, _attrs: Attrs, stop: u64) -> Result<()> {
        self.note(loc);
        let (from, to) = (self.map.ns(t), self.map.ns(stop));
        self.measurement_slice(loc, from, Some(to), "BufferFlush")
    }

    fn fork_join(
        &mut self,
        loc: u64,
        t: u64,
        attrs: Attrs,
        paradigm: u8,
        threads: Option<u32>,
    ) -> Result<()> {
        self.note(loc);
        let Some(track) = self.track(loc) else {
            return Ok(());
        };
        let mut args = Args::new();
        if let Some(p) = paradigm_name(paradigm) {
            let k = self.ctx.defs.intern("paradigm");
            args.push(Arg {
                key: k,
                value: Value::Str(p.into()),
            });
        }
        if let Some(n) = threads {
            let k = self.ctx.defs.intern("requested_threads");
            args.push(Arg {
                key: k,
                value: Value::UInt(n.into()),
            });
        }
        self.attrs(attrs, &mut args);
        let name = match threads {
            Some(_) => "ThreadFork",
            None => "ThreadJoin",
        };
        let name = self.ctx.defs.intern(name);
        self.emit(Event::Instant(Instant {
            args,
            ..Instant::new(track, self.map.ns(t), name)
        }))
    }

    fn bookkeeping(&mut self, loc: u64, _t: u64, _kind: &'static str) -> Result<()> {
        self.note(loc);
        Ok(())
    }

    fn unmapped(&mut self, loc: u64, _t: u64, kind: &'static str) -> Result<()> {
        self.note(loc);
        self.unmapped += 1;
        self.first_unmapped.get_or_insert(kind);
        Ok(())
    }
}
