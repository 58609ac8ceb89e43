//! Keeps every track properly nested: a slice that starts inside another on the same track but
//! ends after it is moved to an overflow lane of that track, never clipped or dropped.
//! Needs its input in the total order of [`crate::order`].

use rustc_hash::FxHashMap;

use crate::defs::Defs;
use crate::diag::{kinds, Diagnostics, Location};
use crate::error::{Error, Result};
use crate::event::Event;
use crate::model::{Track, TrackId, TrackKind};
use crate::sink::Stage;
use crate::time::Ts;

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

pub struct OverlapRouter<S> {
    inner: S,
    tracks: FxHashMap<TrackId, Lanes>,
    overflow: OverflowTracks,
    slices: u64,
}

impl<S: Stage> OverlapRouter<S> {
    pub fn new(inner: S) -> Self {
        OverlapRouter {
            inner,
            tracks: FxHashMap::default(),
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
            if matches!(kind, TrackKind::Process | TrackKind::Global) {
                return self.inner.push(defs, diag, event);
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
                let kind_of_overlap = if kind == TrackKind::Async {
                    &kinds::ASYNC_OVERLAP_LANE
                } else {
                    &kinds::SLICE_PARTIAL_OVERLAP
                };
                diag.record(kind_of_overlap, Location::Event(idx));
                s.track = self.overflow.get(defs, s.track, level as u32);
            }
        }
        self.inner.push(defs, diag, event)
    }

    fn end(&mut self, defs: &mut Defs, diag: &mut Diagnostics) -> Result<()> {
        self.inner.end(defs, diag)
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
