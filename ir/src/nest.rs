//! Keeps every track properly nested: a slice that starts inside another on the same track but
//! ends after it is moved to an overflow lane of that track, never clipped or dropped.
//! Needs its input in the total order of [`crate::order`].

use rustc_hash::FxHashMap;

use crate::defs::Defs;
use crate::diag::{kinds, Location};
use crate::error::{Error, Result};
use crate::event::Event;
use crate::model::{TrackId, TrackKind};
use crate::sink::Sink;
use crate::time::Ts;

/// Open slice ends on each lane of one track: `lanes[0]` is the track itself.
#[derive(Default)]
struct Lanes {
    lanes: Vec<Vec<Ts>>,
    last_ts: Ts,
}

pub struct OverlapRouter<S> {
    inner: S,
    tracks: FxHashMap<TrackId, Lanes>,
    slices: u64,
}

impl<S: Sink> OverlapRouter<S> {
    pub fn new(inner: S) -> Self {
        OverlapRouter {
            inner,
            tracks: FxHashMap::default(),
            slices: 0,
        }
    }

    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S: Sink> Sink for OverlapRouter<S> {
    fn event(&mut self, defs: &mut Defs, mut event: Event) -> Result<()> {
        if let Event::Slice(s) = &mut event {
            let idx = self.slices;
            self.slices += 1;
            let kind = defs.track(s.track).kind;
            if matches!(kind, TrackKind::Process | TrackKind::Global) {
                return self.inner.event(defs, event);
            }
            let lanes = self.tracks.entry(s.track).or_insert_with(|| Lanes {
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
            let end = s.end_or(i64::MAX);
            let mut level = 0;
            loop {
                if level == lanes.lanes.len() {
                    lanes.lanes.push(Vec::new());
                }
                let lane = &mut lanes.lanes[level];
                while lane.last().is_some_and(|&e| e <= s.ts) {
                    lane.pop();
                }
                // A zero-length slice at the very end of its parent still nests.
                if lane.last().is_none_or(|&top| end <= top) {
                    lane.push(end);
                    break;
                }
                level += 1;
            }
            if level > 0 {
                let diag = if kind == TrackKind::Async {
                    &kinds::ASYNC_OVERLAP_LANE
                } else {
                    &kinds::SLICE_PARTIAL_OVERLAP
                };
                defs.diag.record(diag, Location::Event(idx));
                s.track = defs.overflow_track(s.track, level as u32);
            }
        }
        self.inner.event(defs, event)
    }

    fn finish(&mut self, defs: &mut Defs) -> Result<()> {
        self.inner.finish(defs)
    }
}

/// Moves each flow point onto the track of the slice it binds to, once, right behind the
/// [`OverlapRouter`]: a point that binds to the enclosing slice goes to the lane where that
/// slice now is, so viewers (which bind by thread and time) and the sinks behind (the filter,
/// `stats`, the folded GPU join, which bind by track and time) all see the arrow on the slice the
/// input bound it to. The slice is the innermost one containing the point's time on the point's
/// track or any of its overflow lanes (the one begun last). Points bound to the next slice
/// (`FlowBind::Next`) stay where they are: their slice has not arrived yet.
pub struct FlowBinder<S> {
    inner: S,
    /// Per strict root track, the slices that may still contain a point: (start, end, track).
    open: FxHashMap<TrackId, Vec<(Ts, Ts, TrackId)>>,
}

impl<S: Sink> FlowBinder<S> {
    pub fn new(inner: S) -> Self {
        FlowBinder {
            inner,
            open: FxHashMap::default(),
        }
    }

    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S: Sink> Sink for FlowBinder<S> {
    fn event(&mut self, defs: &mut Defs, mut event: Event) -> Result<()> {
        match &mut event {
            Event::Slice(s) => {
                let root = defs.root_track(s.track);
                if defs.track(root).is_strict() {
                    let open = self.open.entry(root).or_default();
                    // slices ended before this one starts can contain no later point
                    open.retain(|&(_, end, _)| end >= s.ts);
                    open.push((s.ts, s.end_or(i64::MAX), s.track));
                }
            }
            Event::Flow(f) if f.bind == crate::event::FlowBind::Enclosing => {
                let root = defs.root_track(f.track);
                if let Some(open) = self.open.get(&root) {
                    let bound = open
                        .iter()
                        .rev()
                        .find(|&&(start, end, _)| start <= f.ts && f.ts <= end);
                    if let Some(&(_, _, track)) = bound {
                        f.track = track;
                    }
                }
            }
            _ => {}
        }
        self.inner.event(defs, event)
    }

    fn finish(&mut self, defs: &mut Defs) -> Result<()> {
        self.inner.finish(defs)
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
        let p = d.add_process(Process::default());
        let th = d.add_thread(p, Some(1), None);
        let t = d.thread(th).track;
        let mut r = OverlapRouter::new(MemSink::default());
        // [0,10] contains [2,5]; [4,12] starts inside [0,10] and ends after it
        for (ts, dur) in [(0, 10), (2, 5), (4, 8), (10, 1), (12, 0)] {
            r.event(&mut d, Event::Slice(Slice::new(t, ts, dur, StrId(0))))
                .unwrap();
        }
        r.finish(&mut d).unwrap();
        let tracks: Vec<TrackId> = r
            .into_inner()
            .events
            .iter()
            .map(|e| e.track().unwrap())
            .collect();
        let o1 = d.overflow_track(t, 1);
        // [4,12] overlaps [2,7] on lane 0 and goes to lane 1
        assert_eq!(tracks, vec![t, t, o1, t, t]);
        assert_eq!(d.diag.count("slice_partial_overlap"), 1);
    }

    #[test]
    fn unsorted_input_is_an_error() {
        let mut d = Defs::new();
        let p = d.add_process(Process::default());
        let th = d.add_thread(p, Some(1), None);
        let t = d.thread(th).track;
        let mut r = OverlapRouter::new(MemSink::default());
        r.event(&mut d, Event::Slice(Slice::new(t, 5, 1, StrId(0))))
            .unwrap();
        assert!(r
            .event(&mut d, Event::Slice(Slice::new(t, 4, 1, StrId(0))))
            .is_err());
    }

    #[test]
    fn flow_points_follow_their_slice_to_its_lane() {
        use crate::event::{FlowBind, FlowId, FlowPoint, FlowRole};
        let mut d = Defs::new();
        let p = d.add_process(Process::default());
        let th = d.add_thread(p, Some(1), None);
        let t = d.thread(th).track;
        let mut r = OverlapRouter::new(FlowBinder::new(MemSink::default()));
        let point = |ts| {
            Event::Flow(FlowPoint {
                id: FlowId(1),
                role: FlowRole::End,
                track: t,
                ts,
                bind: FlowBind::Enclosing,
                name: None,
                cat: None,
            })
        };
        // [4,12] overlaps [0,10] and goes to lane 1; points inside it follow it there, a point
        // inside [0,10] before [4,12] began stays
        r.event(&mut d, Event::Slice(Slice::new(t, 0, 10, StrId(0))))
            .unwrap();
        r.event(&mut d, point(2)).unwrap();
        r.event(&mut d, Event::Slice(Slice::new(t, 4, 8, StrId(0))))
            .unwrap();
        r.event(&mut d, point(6)).unwrap();
        r.event(&mut d, point(11)).unwrap();
        r.finish(&mut d).unwrap();
        let o1 = d.overflow_track(t, 1);
        let tracks: Vec<TrackId> = r
            .into_inner()
            .into_inner()
            .events
            .iter()
            .filter(|e| matches!(e, Event::Flow(_)))
            .map(|e| e.track().unwrap())
            .collect();
        assert_eq!(tracks, vec![t, o1, o1]);
    }
}
