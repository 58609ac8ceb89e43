//! Trackers shared by importers: begin/end matching and flow pairing.

use std::hash::Hash;

use rustc_hash::FxHashMap;

use crate::defs::Defs;
use crate::diag::Location;
use crate::event::{FlowBind, FlowPoint, FlowRole, Slice};
use crate::model::TrackId;
use crate::strings::StrId;
use crate::time::Ts;

/// Matches begin and end records per key (a thread, an async id): an end closes the innermost
/// open slice of its key.
#[derive(Debug)]
pub struct SliceStacks<K> {
    open: FxHashMap<K, Vec<Slice>>,
}

impl<K> Default for SliceStacks<K> {
    fn default() -> Self {
        SliceStacks {
            open: FxHashMap::default(),
        }
    }
}

impl<K: Hash + Eq + Clone> SliceStacks<K> {
    /// Opens `slice` (its `dur` is ignored) under `key`.
    pub fn begin(&mut self, key: K, mut slice: Slice) {
        slice.dur = None;
        self.open.entry(key).or_default().push(slice);
    }

    /// Closes the innermost open slice of `key` at `ts`. Returns it with `dur` set, or `None` if
    /// nothing is open (an unmatched end). A negative duration is returned as is; the caller
    /// decides how to report it.
    pub fn end(&mut self, key: &K, ts: Ts) -> Option<Slice> {
        let stack = self.open.get_mut(key)?;
        let mut s = stack.pop()?;
        if stack.is_empty() {
            self.open.remove(key);
        }
        s.dur = Some(ts - s.ts);
        Some(s)
    }

    /// How many slices are open under `key`.
    pub fn depth(&self, key: &K) -> usize {
        self.open.get(key).map_or(0, Vec::len)
    }

    /// Removes and returns every slice still open, ordered by start time then track.
    pub fn drain(&mut self) -> Vec<Slice> {
        let mut out: Vec<Slice> = self.open.drain().flat_map(|(_, v)| v).collect();
        out.sort_by_key(|s| (s.ts, s.track));
        out
    }
}

/// A flow point waiting to be paired.
#[derive(Clone, Debug)]
pub struct PendingFlowPoint {
    pub role: FlowRole,
    pub track: TrackId,
    pub ts: Ts,
    pub bind: FlowBind,
    pub name: Option<StrId>,
    pub cat: Option<StrId>,
    pub location: Location,
}

/// Result of [`FlowPairer::pair`]: complete chains with fresh ids, plus what had no partner.
#[derive(Debug, Default)]
pub struct FlowPairing {
    /// Points of complete chains, each chain contiguous and in time order.
    pub points: Vec<FlowPoint>,
    pub flows: u64,
    /// Starts never followed by a step or end with their key: (count, first location).
    pub start_without_end: (u64, Option<Location>),
    /// Ends (and steps) with no open start for their key.
    pub end_without_start: (u64, Option<Location>),
}

/// Pairs flow points by key in time order (file order at equal time), as viewers do: a start
/// opens a chain, steps extend it, an end closes it; a key may be reused after its end.
#[derive(Debug)]
pub struct FlowPairer<K> {
    points: Vec<(K, u64, PendingFlowPoint)>,
}

impl<K> Default for FlowPairer<K> {
    fn default() -> Self {
        FlowPairer { points: Vec::new() }
    }
}

impl<K: Hash + Eq + Clone> FlowPairer<K> {
    pub fn push(&mut self, key: K, point: PendingFlowPoint) {
        let seq = self.points.len() as u64;
        self.points.push((key, seq, point));
    }

    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// Pairs everything pushed so far; new flow ids come from `defs`.
    pub fn pair(self, defs: &mut Defs) -> FlowPairing {
        let mut points = self.points;
        points.sort_by_key(|(_, seq, p)| (p.ts, *seq));
        let mut open: FxHashMap<K, Vec<PendingFlowPoint>> = FxHashMap::default();
        let mut out = FlowPairing::default();
        fn note(slot: &mut (u64, Option<Location>), at: &Location) {
            slot.0 += 1;
            if slot.1.is_none() {
                slot.1 = Some(at.clone());
            }
        }
        for (key, _, p) in points {
            match p.role {
                FlowRole::Start => {
                    if let Some(prev) = open.insert(key, vec![p]) {
                        close_chain(prev, defs, &mut out);
                    }
                }
                FlowRole::Step => match open.get_mut(&key) {
                    Some(chain) => chain.push(p),
                    None => note(&mut out.end_without_start, &p.location),
                },
                FlowRole::End => match open.remove(&key) {
                    Some(mut chain) => {
                        chain.push(p);
                        close_chain(chain, defs, &mut out);
                    }
                    None => note(&mut out.end_without_start, &p.location),
                },
            }
        }
        let mut rest: Vec<Vec<PendingFlowPoint>> = open.into_values().collect();
        rest.sort_by_key(|c| (c[0].ts, c[0].track));
        for chain in rest {
            close_chain(chain, defs, &mut out);
        }
        out
    }
}

fn close_chain(chain: Vec<PendingFlowPoint>, defs: &mut Defs, out: &mut FlowPairing) {
    if chain.len() < 2 {
        out.start_without_end.0 += 1;
        if out.start_without_end.1.is_none() {
            out.start_without_end.1 = Some(chain[0].location.clone());
        }
        return;
    }
    let id = defs.new_flow_id();
    let last = chain.len() - 1;
    out.flows += 1;
    for (i, p) in chain.into_iter().enumerate() {
        let role = if i == 0 {
            FlowRole::Start
        } else if i == last {
            FlowRole::End
        } else {
            FlowRole::Step
        };
        out.points.push(FlowPoint {
            id,
            role,
            track: p.track,
            ts: p.ts,
            bind: p.bind,
            name: p.name,
            cat: p.cat,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pt(role: FlowRole, ts: Ts) -> PendingFlowPoint {
        PendingFlowPoint {
            role,
            track: TrackId(0),
            ts,
            bind: FlowBind::Enclosing,
            name: None,
            cat: None,
            location: Location::Event(ts as u64),
        }
    }

    #[test]
    fn begin_end_nesting() {
        let mut s = SliceStacks::default();
        s.begin(1u32, Slice::new(TrackId(0), 0, 0, StrId(1)));
        s.begin(1u32, Slice::new(TrackId(0), 5, 0, StrId(2)));
        let inner = s.end(&1, 7).unwrap();
        assert_eq!((inner.name, inner.dur), (StrId(2), Some(2)));
        assert_eq!(s.depth(&1), 1);
        assert!(s.end(&2, 9).is_none());
        let left = s.drain();
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].dur, None);
    }

    #[test]
    fn flows_pair_in_time_order_and_count_orphans() {
        let mut d = Defs::new();
        let mut p = FlowPairer::default();
        // pushed out of time order: the end comes first in the file
        p.push("a", pt(FlowRole::End, 20));
        p.push("a", pt(FlowRole::Start, 10));
        p.push("b", pt(FlowRole::End, 5)); // no start
        p.push("c", pt(FlowRole::Start, 1)); // no end
        p.push("a", pt(FlowRole::Start, 30)); // id reused after its end
        p.push("a", pt(FlowRole::Step, 35));
        let r = p.pair(&mut d);
        assert_eq!(r.flows, 2);
        assert_eq!(r.end_without_start.0, 1);
        assert_eq!(r.start_without_end.0, 1);
        let roles: Vec<_> = r.points.iter().map(|p| (p.role, p.ts)).collect();
        assert_eq!(
            roles,
            vec![
                (FlowRole::Start, 10),
                (FlowRole::End, 20),
                (FlowRole::Start, 30),
                (FlowRole::End, 35)
            ]
        );
        assert_ne!(r.points[0].id, r.points[2].id);
    }
}
