//! Flows. Perfetto draws an arrow between the slices whose events carry the same flow id
//! (`flow_ids` on the source and intermediate steps, `terminating_flow_ids` on the end), in the
//! time order of those events. An IR flow point binds to a slice around (or after) its time, so:
//!
//! * a point at the very start of its slice, while that slice's BEGIN is still queued (the
//!   usual case: a CUDA launch and its kernel), puts the flow id on that BEGIN;
//! * a flow whose start is elsewhere inside a slice is written with Chrome's legacy flow
//!   events (`legacy_event` phases `s`/`t`/`f`), which Perfetto binds to the enclosing (or
//!   next) slice at the point's own time, exactly as the IR means it;
//! * later points of a flow-id flow that are not at a slice start go on the END of their
//!   enclosing slice, or on the BEGIN of the next slice for points that bind to the next one;
//! * trace processor pairs flow ids in file order at equal times, so a point never rides on a
//!   BEGIN written before the carrier of its flow's previous point (a kernel's zero-length
//!   slice and the slice its flow ends in, both at one time); it goes on the END instead;
//! * a point with no slice to bind to cannot be drawn: tracex keeps it in its extension
//!   (diagnostic `perfetto_flow_not_drawn`).
//!
//! tracex's extension records what the Perfetto encoding loses (the point's exact time when it
//! differs from its carrier's, next-slice binding, the flow's name and category), so tracex
//! reads its own flows back exactly.

use rustc_hash::FxHashMap;
use tracex_ir::{
    Defs, Diagnostics, FlowBind, FlowId, FlowPoint, FlowRole, Location, StrId, TrackId,
};

use super::event::{Packet, TrackEvent};
use super::intern::Interner;
use super::open::Open;
use super::queue::{Queue, NEEDS_STATE};
use crate::diag as d;
use crate::pb::tracex::{self as x, flow_point::Role};
use crate::pb::track_event::LegacyEvent;
use crate::pb::TracePacket;

/// The slices a point on one track may bind to.
pub struct Carriers<'a> {
    pub open: Option<&'a mut Vec<Open>>,
    /// The first slice that began at some time on the track: (time, BEGIN packet number).
    pub first_begin: Option<(i64, u64)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Native {
    /// `flow_ids` / `terminating_flow_ids` on the carriers' events.
    Ids,
    /// Legacy flow events (`s`, `t`, `f`).
    Legacy,
    /// Not drawn: only in tracex's extension.
    Detached,
}

struct State {
    native: Native,
    name: Option<StrId>,
    cat: Option<StrId>,
    /// Where the flow's latest point rides: the next one must come after it in the file.
    last: Carrier,
}

/// The event a flow-id point rides on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Carrier {
    /// The BEGIN queued as this packet number.
    Begin(u64),
    /// The END of a slice ending at this time: written before any BEGIN after that time.
    End(i64),
    /// The BEGIN of a slice not seen yet (next-slice binding).
    Waiting,
    /// A legacy flow event or nothing Perfetto sees.
    Elsewhere,
}

impl Carrier {
    /// Whether a BEGIN at time `t`, queued as packet `n`, is written after this carrier.
    fn before(self, t: i64, n: u64) -> bool {
        match self {
            Carrier::Begin(m) => m < n,
            Carrier::End(end) => end < t,
            Carrier::Waiting => false,
            Carrier::Elsewhere => true,
        }
    }

    /// Whether the END of a slice ending at `end` is written after this carrier.
    fn before_end(self, end: i64) -> bool {
        match self {
            Carrier::Begin(_) | Carrier::Elsewhere => true,
            Carrier::End(e) => e <= end,
            Carrier::Waiting => false,
        }
    }
}

/// A flow-id point waiting for the next slice on its track.
struct Waiting {
    id: u64,
    role: FlowRole,
    point: x::FlowPoint,
}

#[derive(Default)]
pub struct Flows {
    state: FxHashMap<FlowId, State>,
    waiting: FxHashMap<TrackId, Vec<Waiting>>,
    /// The first flow's name and category: flows with the same need no record of them.
    default: Option<(Option<StrId>, Option<StrId>)>,
}

fn role(r: FlowRole) -> Role {
    match r {
        FlowRole::Start => Role::Start,
        FlowRole::Step => Role::Step,
        FlowRole::End => Role::End,
    }
}

impl Flows {
    /// tracex's record of a point: its name and category (interned), binding, and time when
    /// the carrier's differs.
    fn describe(
        &self,
        defs: &Defs,
        interner: &mut Interner,
        f: &FlowPoint,
        names: bool,
        ts: Option<i64>,
    ) -> x::FlowPoint {
        x::FlowPoint {
            id: Some(f.id.0),
            ts,
            next: (f.bind == FlowBind::Next).then_some(true),
            name_iid: names.then(|| f.name.map_or(0, |n| interner.name(defs, n))),
            category_iid: names.then(|| f.cat.map_or(0, |c| interner.category(defs, c))),
            ..Default::default()
        }
    }

    /// The default name and category of flows, for tracex's trace-level record.
    pub fn default_names(&self, defs: &Defs) -> Option<x::FlowNames> {
        self.default.map(|(n, c)| x::FlowNames {
            name: n.map(|n| defs.str(n).to_owned()),
            category: c.map(|c| defs.str(c).to_owned()),
        })
    }

    /// Whether tracex must record `point` for the reader to get it back: a name or category
    /// that differs from the start's (or a start's own), next-slice binding, or a time.
    fn worth(point: &x::FlowPoint) -> bool {
        point.name_iid.is_some()
            || point.category_iid.is_some()
            || point.next.is_some()
            || point.ts.is_some()
    }

    /// Interned definitions made for a packet that is written later than now: they go out in a
    /// packet of their own, now.
    fn flush_interned(interner: &mut Interner, q: &mut Queue) {
        if let Some(data) = interner.take() {
            q.push(
                None,
                TracePacket {
                    interned_data: Some(data),
                    ..Default::default()
                },
            );
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub fn point(
        &mut self,
        defs: &Defs,
        diag: &mut Diagnostics,
        interner: &mut Interner,
        q: &mut Queue,
        f: &FlowPoint,
        track: u64,
        t: i64,
        carriers: Carriers<'_>,
        event: u64,
    ) {
        let default = *self.default.get_or_insert((f.name, f.cat));
        let names = match (f.role, self.state.get(&f.id)) {
            (FlowRole::Start, _) | (_, None) => default != (f.name, f.cat),
            (_, Some(s)) => s.name != f.name || s.cat != f.cat,
        };
        let top_begin = carriers
            .open
            .as_ref()
            .and_then(|o| o.last())
            .map(|o| o.begin);
        // the queued BEGIN at this very time of the slice the point binds to
        let bound = match f.bind {
            FlowBind::Enclosing => carriers
                .open
                .as_ref()
                .and_then(|o| o.last())
                .filter(|o| o.begin == t)
                .map(|o| o.begin_packet),
            FlowBind::Next => carriers
                .first_begin
                .filter(|&(at, _)| at == t)
                .map(|(_, n)| n),
        }
        .filter(|&n| q.get_mut(n).is_some());
        // where the flow's previous point rides (a start has none)
        let prev = match (f.role, self.state.get(&f.id)) {
            (FlowRole::Start, _) | (_, None) => Carrier::Elsewhere,
            (_, Some(s)) => s.last,
        };
        // ... when it is written after that
        let at_begin = bound.filter(|&n| prev.before(t, n));
        let native = match self.state.get(&f.id) {
            Some(s) => s.native,
            None if at_begin.is_some() || f.bind == FlowBind::Next => Native::Ids,
            None if top_begin.is_some() => Native::Legacy,
            None => Native::Detached,
        };
        if f.role == FlowRole::Start || !self.state.contains_key(&f.id) {
            self.state.insert(
                f.id,
                State {
                    native,
                    name: f.name,
                    cat: f.cat,
                    last: Carrier::Elsewhere,
                },
            );
        }
        match native {
            Native::Ids => {
                let last = if let Some(n) = at_begin {
                    let point = self.describe(defs, interner, f, names, None);
                    let interned = interner.take();
                    let p = q.get_mut(n).expect("queued");
                    if let Some(data) = interned {
                        super::intern::merge(&mut p.pb.interned_data, data);
                    }
                    let ev = p.event.as_mut().expect("a BEGIN");
                    match f.role {
                        FlowRole::End => ev.terminating_flow_ids.push(f.id.0),
                        _ => ev.flow_ids.push(f.id.0),
                    }
                    if Self::worth(&point) {
                        p.pb.tracex
                            .get_or_insert_with(Default::default)
                            .flows
                            .push(point);
                    }
                    Carrier::Begin(n)
                } else if f.bind == FlowBind::Next && bound.is_none() {
                    let mut point = self.describe(defs, interner, f, names, Some(f.ts));
                    point.track = Some(track);
                    Self::flush_interned(interner, q);
                    self.waiting.entry(f.track).or_default().push(Waiting {
                        id: f.id.0,
                        role: f.role,
                        point,
                    });
                    Carrier::Waiting
                } else if let Some((top, end)) = carriers
                    .open
                    .and_then(|o| {
                        // the slice the point binds to: the innermost, or the one that began
                        // as the bound BEGIN
                        o.iter_mut()
                            .rev()
                            .find(|o| bound.is_none_or(|n| o.begin_packet == n))
                    })
                    .and_then(|top| top.end.map(|end| (top, end)))
                    .filter(|&(_, end)| prev.before_end(end))
                {
                    // inside a slice that began earlier, or at its BEGIN written too early: on
                    // its END (a slice left open has none, and the point is detached)
                    let point = self.describe(defs, interner, f, names, Some(f.ts));
                    Self::flush_interned(interner, q);
                    match f.role {
                        FlowRole::End => top.end_event.terminating_flow_ids.push(f.id.0),
                        _ => top.end_event.flow_ids.push(f.id.0),
                    }
                    top.end_needs_state |= point.name_iid.is_some() || point.category_iid.is_some();
                    top.end_extra.get_or_insert_default().flows.push(point);
                    Carrier::End(end)
                } else {
                    self.detached(defs, diag, interner, q, f, names, track, t, event);
                    Carrier::Elsewhere
                };
                if let Some(s) = self.state.get_mut(&f.id) {
                    s.last = last;
                }
            }
            Native::Legacy => {
                let enclosing = match (f.bind, carriers.open.as_ref().and_then(|o| o.last())) {
                    (FlowBind::Enclosing, Some(_)) => Some(true),
                    (FlowBind::Enclosing, None) => None,
                    // the slice that began at this time is open and innermost: bind to it as
                    // the enclosing one (Perfetto would otherwise take the slice after it)
                    (FlowBind::Next, Some(top))
                        if carriers.first_begin == Some((t, top.begin_packet)) =>
                    {
                        Some(true)
                    }
                    (FlowBind::Next, _) => Some(false),
                };
                let Some(enclosing) = enclosing else {
                    self.detached(defs, diag, interner, q, f, names, track, t, event);
                    return self.end(f);
                };
                let phase = match f.role {
                    FlowRole::Start => b's',
                    FlowRole::Step => b't',
                    FlowRole::End => b'f',
                };
                let ev = TrackEvent {
                    track_uuid: Some(track),
                    name_iid: f.name.map(|n| interner.name(defs, n)),
                    category_iid: f.cat.map(|c| interner.category(defs, c)),
                    legacy_event: Some(Box::new(LegacyEvent {
                        phase: Some(phase as i32),
                        id: Some(crate::pb::track_event::legacy_event::Id::UnscopedId(f.id.0)),
                        bind_to_enclosing: (f.role == FlowRole::End && enclosing).then_some(true),
                        ..Default::default()
                    })),
                    ..Default::default()
                };
                // what the legacy encoding does not say: next-slice binding of a start or step,
                // or of an end that Perfetto binds as enclosing
                let point = x::FlowPoint {
                    id: Some(f.id.0),
                    role: Some(role(f.role) as i32),
                    next: (f.bind == FlowBind::Next && (enclosing || f.role != FlowRole::End))
                        .then_some(true),
                    ..Default::default()
                };
                q.push(
                    Some(t),
                    Packet::event(
                        ev,
                        TracePacket {
                            interned_data: interner.take(),
                            sequence_flags: Some(NEEDS_STATE),
                            tracex: point.next.map(|_| {
                                Box::new(x::Extra {
                                    flows: vec![point],
                                    ..Default::default()
                                })
                            }),
                            ..Default::default()
                        },
                    ),
                );
            }
            Native::Detached => self.detached(defs, diag, interner, q, f, names, track, t, event),
        }
        self.end(f)
    }

    fn end(&mut self, f: &FlowPoint) {
        if f.role == FlowRole::End {
            self.state.remove(&f.id);
        }
    }

    /// A point Perfetto cannot draw: only tracex's record of it.
    #[allow(clippy::too_many_arguments)]
    fn detached(
        &mut self,
        defs: &Defs,
        diag: &mut Diagnostics,
        interner: &mut Interner,
        q: &mut Queue,
        f: &FlowPoint,
        names: bool,
        track: u64,
        t: i64,
        event: u64,
    ) {
        diag.record(&d::EXPORT_FLOW_NOT_DRAWN, Location::Event(event));
        if let Some(s) = self.state.get_mut(&f.id) {
            s.native = Native::Detached;
        }
        let mut point = self.describe(defs, interner, f, names, None);
        point.role = Some(role(f.role) as i32);
        point.track = Some(track);
        point.detached = Some(true);
        q.push(
            Some(t),
            TracePacket {
                interned_data: interner.take(),
                sequence_flags: Some(NEEDS_STATE),
                tracex: Some(Box::new(x::Extra {
                    flows: vec![point],
                    ..Default::default()
                })),
                ..Default::default()
            },
        );
    }

    /// Binds the points waiting on `track` to the slice whose BEGIN was just queued as packet
    /// number `n`.
    pub fn bind_next(&mut self, q: &mut Queue, track: TrackId, n: u64) {
        let Some(waiting) = self.waiting.remove(&track) else {
            return;
        };
        let p = q.get_mut(n).expect("just queued");
        for w in waiting {
            if let Some(s) = self.state.get_mut(&FlowId(w.id)) {
                s.last = Carrier::Begin(n);
            }
            let ev = p.event.as_mut().expect("a BEGIN");
            match w.role {
                FlowRole::End => ev.terminating_flow_ids.push(w.id),
                _ => ev.flow_ids.push(w.id),
            }
            p.pb.tracex
                .get_or_insert_with(Default::default)
                .flows
                .push(w.point);
        }
    }

    /// Points still waiting for a next slice that never came: kept for tracex only.
    pub fn finish(&mut self, diag: &mut Diagnostics, q: &mut Queue) {
        let mut waiting: Vec<(TrackId, Vec<Waiting>)> = self.waiting.drain().collect();
        waiting.sort_by_key(|(t, _)| *t);
        for (_, points) in waiting {
            for mut w in points {
                diag.record(&d::EXPORT_FLOW_NOT_DRAWN, Location::Nowhere);
                w.point.detached = Some(true);
                w.point.role = Some(role(w.role) as i32);
                q.push(
                    None,
                    TracePacket {
                        sequence_flags: Some(NEEDS_STATE),
                        tracex: Some(Box::new(x::Extra {
                            flows: vec![w.point],
                            ..Default::default()
                        })),
                        ..Default::default()
                    },
                );
            }
        }
    }
}
