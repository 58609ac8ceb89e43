//! Keeps every track properly nested: a slice that starts inside another on the same track but
//! ends after it is moved to an overflow lane of that track, never clipped or dropped.
//! Needs its input in the total order of [`crate::order`].

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

use crate::defs::Defs;
use crate::diag::{kinds, Diagnostics, Location};
use crate::error::{Error, Result};
use crate::event::{Event, FlowBind};
use crate::model::{Track, TrackId, TrackKind};
use crate::sink::Stage;
use crate::time::Ts;
use crate::trackmap::TrackMap;

/// Open slice ends on each lane of one track: `lanes[0]` is the track itself.
#[derive(Default)]
struct Lanes {
    lanes: Vec<Vec<Ts>>,
    last_ts: Ts,
}

/// Allocates overflow tracks: the router's one way of adding to the definitions. An importer
/// that reads lanes back (OTF2 archives tracex wrote) allocates through one too, so that a lane
/// is one track whoever asks for it first.
#[derive(Default)]
pub struct OverflowTracks {
    known: FxHashMap<(TrackId, u32), TrackId>,
    /// `defs.tracks[..scanned]` have been looked at for lanes defined by someone else.
    scanned: usize,
}

impl OverflowTracks {
    /// The overflow lane `level` (1-based) of `of`: an existing one, else a new track with the
    /// process of `of`.
    pub fn get(&mut self, defs: &mut Defs, of: TrackId, level: u32) -> TrackId {
        if let Some(&t) = self.known.get(&(of, level)) {
            return t;
        }
        for (i, t) in defs.tracks.iter().enumerate().skip(self.scanned) {
            if let TrackKind::Overflow { of, level } = t.kind {
                self.known.entry((of, level)).or_insert(TrackId(i as u32));
            }
        }
        let t = match self.known.get(&(of, level)) {
            Some(&t) => t,
            None => {
                let t = defs.add_track(Track {
                    kind: TrackKind::Overflow { of, level },
                    process: defs.track(of).process,
                    name: None,
                    label: None,
                    sort_index: None,
                });
                self.known.insert((of, level), t);
                t
            }
        };
        self.scanned = defs.tracks.len();
        t
    }
}

/// Places a slice `[ts, end)` of one track on the first of its `lanes` (open slice ends per
/// lane, `lanes[0]` the track itself) where it nests, adding a lane when none does; slices come
/// in the total order. Returns the lane's level: 0 is the track, more is an overflow lane.
pub fn place(lanes: &mut Vec<Vec<Ts>>, ts: Ts, end: Ts) -> usize {
    let mut level = 0;
    loop {
        if level == lanes.len() {
            lanes.push(Vec::new());
        }
        let lane = &mut lanes[level];
        while lane.last().is_some_and(|&e| e <= ts) {
            lane.pop();
        }
        // A zero-length slice at the very end of its parent still nests.
        if lane.last().is_none_or(|&top| end <= top) {
            lane.push(end);
            return level;
        }
        level += 1;
    }
}

/// Whether a track of `kind` has its slices routed at all (not those of processes and the
/// global track).
pub fn routed(kind: TrackKind) -> bool {
    !matches!(kind, TrackKind::Process | TrackKind::Global)
}

/// The diagnostic counting slices of a track of `kind` moved to an overflow lane.
pub fn overlap_kind(kind: TrackKind) -> &'static crate::diag::DiagKind {
    if kind == TrackKind::Async {
        &kinds::ASYNC_OVERLAP_LANE
    } else {
        &kinds::SLICE_PARTIAL_OVERLAP
    }
}

pub struct OverlapRouter<S> {
    inner: S,
    tracks: TrackMap<Lanes>,
    overflow: OverflowTracks,
    slices: u64,
}

impl<S: Stage> OverlapRouter<S> {
    pub fn new(inner: S) -> Self {
        OverlapRouter {
            inner,
            tracks: TrackMap::default(),
            overflow: OverflowTracks::default(),
            slices: 0,
        }
    }

    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S: Stage> Stage for OverlapRouter<S> {
    fn push(&mut self, defs: &mut Defs, diag: &mut Diagnostics, mut event: Event) -> Result<()> {
        if let Event::Slice(s) = &mut event {
            let idx = self.slices;
            self.slices += 1;
            let kind = defs.track(s.track).kind;
            if !routed(kind) {
                return self.inner.push(defs, diag, event);
            }
            let lanes = self.tracks.get_or_insert_with(s.track, || Lanes {
                lanes: Vec::new(),
                last_ts: i64::MIN,
            });
            if s.ts < lanes.last_ts {
                return Err(Error::invalid(
                    Location::Event(idx),
                    "internal: slices reached the overlap router out of time order",
                ));
            }
            lanes.last_ts = s.ts;
            let level = place(&mut lanes.lanes, s.ts, s.end_or(i64::MAX));
            if level > 0 {
                diag.record(overlap_kind(kind), Location::Event(idx));
                s.track = self.overflow.get(defs, s.track, level as u32);
            }
        }
        self.inner.push(defs, diag, event)
    }

    fn end(&mut self, defs: &mut Defs, diag: &mut Diagnostics) -> Result<()> {
        self.inner.end(defs, diag)
    }
}

/// Moves each flow point onto the track of the slice it binds to, once, right behind the
/// [`OverlapRouter`]: a point that binds to the enclosing slice goes to the lane where that
/// slice now is, so viewers (which bind by thread and time) and the sinks behind (the filter,
/// `stats`, the folded GPU join, which bind by track and time) all see the arrow on the slice the
/// input bound it to. The slice is the innermost one containing the point's time on the point's
/// track or any of its overflow lanes (the one begun last). A point bound to the next slice
/// (`FlowBind::Next`) goes to the lane of the first slice of its track (or lanes) that arrives
/// after it: the stream is held from that point until the slice arrives (at most
/// [`HOLD_LIMIT`] events; a point whose slice has not come by then stays on its track).
pub struct FlowBinder<S> {
    inner: S,
    /// Per strict root track, the slices that may still contain a point: (start, end, track).
    open: TrackMap<Vec<(Ts, Ts, TrackId)>>,
    /// Events held in stream order behind a point waiting for its next slice; `true` marks
    /// such a waiting point.
    held: VecDeque<(Event, bool)>,
    /// How many events have left `held` (positions below are absolute: `popped` + index).
    popped: u64,
    /// Per strict root track, the positions of its points waiting for their next slice.
    waiting: FxHashMap<TrackId, Vec<u64>>,
}

/// The most events held behind a point bound to the next slice.
pub const HOLD_LIMIT: usize = 1 << 16;

impl<S: Stage> FlowBinder<S> {
    pub fn new(inner: S) -> Self {
        FlowBinder {
            inner,
            open: TrackMap::default(),
            held: VecDeque::new(),
            popped: 0,
            waiting: FxHashMap::default(),
        }
    }

    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S: Stage> FlowBinder<S> {
    /// Gives the points of `root` waiting for their next slice the slice `[ts…]` on `track`.
    fn resolve(&mut self, root: TrackId, ts: Ts, track: TrackId) {
        // most inputs bind no point to its next slice: no lookup for every slice then
        if self.waiting.is_empty() {
            return;
        }
        let Some(positions) = self.waiting.remove(&root) else {
            return;
        };
        let mut still = Vec::new();
        for pos in positions {
            let Some((Event::Flow(f), waits)) = pos
                .checked_sub(self.popped)
                .and_then(|i| self.held.get_mut(i as usize))
            else {
                continue; // released by the hold limit
            };
            if !*waits {
                continue;
            }
            if f.ts <= ts {
                f.track = track;
                *waits = false;
            } else {
                still.push(pos);
            }
        }
        if !still.is_empty() {
            self.waiting.insert(root, still);
        }
    }

    /// Passes on the held events up to the first point still waiting (all at `all`).
    fn release(&mut self, defs: &mut Defs, diag: &mut Diagnostics, all: bool) -> Result<()> {
        while self.held.len() > HOLD_LIMIT {
            // its slice is too far away: the point stays on its track
            self.held.front_mut().expect("non-empty").1 = false;
            self.pass_front(defs, diag)?;
        }
        while self.held.front().is_some_and(|(_, waits)| all || !waits) {
            self.pass_front(defs, diag)?;
        }
        Ok(())
    }

    fn pass_front(&mut self, defs: &mut Defs, diag: &mut Diagnostics) -> Result<()> {
        let (event, _) = self.held.pop_front().expect("non-empty");
        self.popped += 1;
        self.inner.push(defs, diag, event)
    }
}

impl<S: Stage> Stage for FlowBinder<S> {
    fn push(&mut self, defs: &mut Defs, diag: &mut Diagnostics, mut event: Event) -> Result<()> {
        let mut waits = false;
        match &mut event {
            Event::Slice(s) => {
                let root = defs.root_track(s.track);
                if defs.track(root).is_strict() {
                    let open = self.open.get_or_default(root);
                    // slices ended before this one starts can contain no later point
                    open.retain(|&(_, end, _)| end >= s.ts);
                    open.push((s.ts, s.end_or(i64::MAX), s.track));
                    let (ts, track) = (s.ts, s.track);
                    self.resolve(root, ts, track);
                }
            }
            Event::Flow(f) if f.bind == FlowBind::Enclosing => {
                let root = defs.root_track(f.track);
                if let Some(open) = self.open.get(root) {
                    let bound = open
                        .iter()
                        .rev()
                        .find(|&&(start, end, _)| start <= f.ts && f.ts <= end);
                    if let Some(&(_, _, track)) = bound {
                        f.track = track;
                    }
                }
            }
            Event::Flow(f) => {
                let root = defs.root_track(f.track);
                if defs.track(root).is_strict() {
                    let pos = self.popped + self.held.len() as u64;
                    self.waiting.entry(root).or_default().push(pos);
                    waits = true;
                }
            }
            _ => {}
        }
        if self.held.is_empty() && !waits {
            return self.inner.push(defs, diag, event);
        }
        self.held.push_back((event, waits));
        self.release(defs, diag, false)
    }

    fn end(&mut self, defs: &mut Defs, diag: &mut Diagnostics) -> Result<()> {
        self.release(defs, diag, true)?;
        self.waiting.clear();
        self.inner.end(defs, diag)
    }
}

/// The slice each flow point is bound to, for a sink behind the [`FlowBinder`]: the binder has
/// put every point bound to its enclosing slice onto that slice's lane, so the binding is the
/// innermost slice open on the point's own track at its time (an end time included), and no
/// sink searches other lanes or decides again. Fed every slice in stream order, it keeps per
/// track only the slices still open (at most the nesting depth), each with a value of the
/// sink's (whether the filter kept it, a GPU duration).
pub struct BoundSlices<T> {
    open: TrackMap<Vec<(Ts, T)>>,
}

impl<T> Default for BoundSlices<T> {
    fn default() -> Self {
        BoundSlices {
            open: TrackMap::default(),
        }
    }
}

impl<T> BoundSlices<T> {
    /// A slice `[start, end]` on `track` (`end` `i64::MAX` for one that never ended).
    pub fn open(&mut self, track: TrackId, start: Ts, end: Ts, value: T) {
        let open = self.open.get_or_default(track);
        while open.last().is_some_and(|&(e, _)| e < start) {
            open.pop();
        }
        open.push((end, value));
    }

    /// The value of the slice a point at `ts` on `track` (bound to its enclosing slice) is bound
    /// to, if one is open there.
    pub fn bound(&mut self, track: TrackId, ts: Ts) -> Option<&mut T> {
        let open = self.open.get_mut(track)?;
        while open.last().is_some_and(|&(e, _)| e < ts) {
            open.pop();
        }
        open.last_mut().map(|(_, v)| v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Slice;
    use crate::mem::MemSink;
    use crate::model::Process;
    use crate::strings::StrId;

    #[test]
    fn partial_overlap_goes_to_overflow() {
        let mut d = Defs::new();
        let mut diag = Diagnostics::default();
        let p = d.add_process(Process::default());
        let th = d.add_thread(p, Some(1), None);
        let t = d.thread(th).track;
        let mut r = OverlapRouter::new(MemSink::default());
        // [0,10] contains [2,5]; [4,12] starts inside [0,10] and ends after it
        for (ts, dur) in [(0, 10), (2, 5), (4, 8), (10, 1), (12, 0)] {
            r.push(
                &mut d,
                &mut diag,
                Event::Slice(Slice::new(t, ts, dur, StrId(0))),
            )
            .unwrap();
        }
        r.end(&mut d, &mut diag).unwrap();
        let tracks: Vec<TrackId> = r
            .into_inner()
            .events
            .iter()
            .map(|e| e.track().unwrap())
            .collect();
        let o1 = tracks[2];
        assert_eq!(d.track(o1).kind, TrackKind::Overflow { of: t, level: 1 });
        // [4,12] overlaps [2,7] on lane 0 and goes to lane 1
        assert_eq!(tracks, vec![t, t, o1, t, t]);
        assert_eq!(diag.count("slice_partial_overlap"), 1);
        assert_eq!(d.root_track(o1), t);
        assert_eq!(d.track_thread(o1), Some(th));
        assert_eq!(d.track_display_name(o1), "thread 1 (overflow 1)");
    }

    #[test]
    fn unsorted_input_is_an_error() {
        let mut d = Defs::new();
        let mut diag = Diagnostics::default();
        let p = d.add_process(Process::default());
        let th = d.add_thread(p, Some(1), None);
        let t = d.thread(th).track;
        let mut r = OverlapRouter::new(MemSink::default());
        r.push(
            &mut d,
            &mut diag,
            Event::Slice(Slice::new(t, 5, 1, StrId(0))),
        )
        .unwrap();
        assert!(r
            .push(
                &mut d,
                &mut diag,
                Event::Slice(Slice::new(t, 4, 1, StrId(0)))
            )
            .is_err());
    }

    /// A flow end at `ts` on track `t`.
    fn flow_end(t: TrackId, ts: i64, bind: crate::event::FlowBind) -> Event {
        use crate::event::{FlowId, FlowPoint, FlowRole};
        Event::Flow(FlowPoint {
            id: FlowId(1),
            role: FlowRole::End,
            track: t,
            ts,
            bind,
            name: None,
            cat: None,
        })
    }

    /// Runs the events `make` gives for one thread's track through the router and the binder:
    /// what comes out, the track and its first overflow lane.
    fn route_and_bind(make: impl Fn(TrackId) -> Vec<Event>) -> (Vec<Event>, TrackId, TrackId) {
        let mut d = Defs::new();
        let mut diag = Diagnostics::default();
        let p = d.add_process(Process::default());
        let th = d.add_thread(p, Some(1), None);
        let t = d.thread(th).track;
        let mut r = OverlapRouter::new(FlowBinder::new(MemSink::default()));
        for e in make(t) {
            r.push(&mut d, &mut diag, e).unwrap();
        }
        r.end(&mut d, &mut diag).unwrap();
        let o1 = OverflowTracks::default().get(&mut d, t, 1);
        (r.into_inner().into_inner().events, t, o1)
    }

    #[test]
    fn flow_points_follow_their_slice_to_its_lane() {
        use crate::event::FlowBind::Enclosing;
        // [4,12] overlaps [0,10] and goes to lane 1; points inside it follow it there, a point
        // inside [0,10] before [4,12] began stays
        let (events, t, o1) = route_and_bind(|t| {
            vec![
                Event::Slice(Slice::new(t, 0, 10, StrId(0))),
                flow_end(t, 2, Enclosing),
                Event::Slice(Slice::new(t, 4, 8, StrId(0))),
                flow_end(t, 6, Enclosing),
                flow_end(t, 11, Enclosing),
            ]
        });
        let tracks: Vec<TrackId> = events
            .iter()
            .filter(|e| matches!(e, Event::Flow(_)))
            .map(|e| e.track().unwrap())
            .collect();
        assert_eq!(tracks, vec![t, o1, o1]);
    }

    #[test]
    fn a_point_bound_to_the_next_slice_follows_it_to_its_lane() {
        use crate::event::FlowBind::Next;
        // the point at 3 binds to the next slice, [4,12], which overlaps [0,10] and goes to
        // lane 1; the point at 13 binds to [14,15], which stays; the point at 20 has no slice
        let (events, t, o1) = route_and_bind(|t| {
            let slice = |ts, dur| Event::Slice(Slice::new(t, ts, dur, StrId(0)));
            vec![
                slice(0, 10),
                flow_end(t, 3, Next),
                slice(4, 8),
                flow_end(t, 13, Next),
                slice(14, 1),
                flow_end(t, 20, Next),
            ]
        });
        let seen: Vec<(bool, i64, TrackId)> = events
            .iter()
            .map(|e| (matches!(e, Event::Flow(_)), e.ts(), e.track().unwrap()))
            .collect();
        assert_eq!(
            seen,
            vec![
                (false, 0, t),
                (true, 3, o1),
                (false, 4, o1),
                (true, 13, t),
                (false, 14, t),
                (true, 20, t)
            ],
            "stream order kept, points on their slices' lanes"
        );
    }

    #[test]
    fn bound_slices_give_the_innermost_open_slice_of_the_track() {
        let (t, u) = (TrackId(0), TrackId(1));
        let mut b = BoundSlices::default();
        b.open(t, 0, 100, "outer");
        b.open(t, 10, 20, "inner");
        b.open(u, 10, 50, "other lane");
        assert_eq!(b.bound(t, 15).copied(), Some("inner"));
        assert_eq!(b.bound(t, 20).copied(), Some("inner"), "an end time binds");
        assert_eq!(b.bound(t, 21).copied(), Some("outer"));
        assert_eq!(b.bound(u, 30).copied(), Some("other lane"));
        assert_eq!(b.bound(t, 101), None);
        assert_eq!(b.bound(TrackId(2), 5), None);
    }

    #[test]
    fn overflow_tracks_are_reused() {
        let mut d = Defs::new();
        let p = d.add_process(Process::default());
        let th = d.add_thread(p, Some(1), None);
        let k = d.thread(th).track;
        let mut o = OverflowTracks::default();
        let o1 = o.get(&mut d, k, 1);
        assert_eq!(o.get(&mut d, k, 1), o1);
        assert_ne!(o.get(&mut d, k, 2), o1);
        assert_eq!(d.track(o1).process, Some(p));
        // a second allocator (the router after an importer) finds the lanes already made
        let mut later = OverflowTracks::default();
        assert_eq!(later.get(&mut d, k, 1), o1);
        assert_eq!(d.tracks.len(), 3);
    }
}
