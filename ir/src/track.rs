//! Trackers shared by importers: begin/end matching and flow pairing.

use std::hash::Hash;

use rustc_hash::FxHashMap;

use crate::defs::Defs;
use crate::diag::{kinds, Diagnostics, Location};
use crate::event::{FlowBind, FlowId, FlowPoint, FlowRole, Slice};
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

/// What an end does to its chain when [`FlowPairer`] pairs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ends {
    /// The end closes the chain: a later end or step of the key needs a new start.
    Close,
    /// The chain stays bound to its last outgoing point: a later end or step of the key is a
    /// new arrow from there, as Perfetto draws Chrome flows (v1 and v2) and Catapult v2.
    KeepOpen,
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
    /// Index of the input event it came from (diagnostics point at `event #n`): a number, not a
    /// `Location`, as a trace may hold millions of points until the end.
    pub event: u64,
}

/// Result of [`FlowPairer::pair`]: complete chains, plus what had no partner.
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
/// opens a chain, steps extend it, an end closes it; a key may be reused after its end. An end
/// with nothing open whose start follows it at the same timestamp is paired with that start.
#[derive(Debug)]
pub struct FlowPairer<K> {
    /// The points by push order, with their keys.
    points: Vec<(K, PendingFlowPoint)>,
    /// The input's id of each point (by push order), where it has a numeric one.
    source_ids: Vec<Option<u64>>,
}

impl<K> Default for FlowPairer<K> {
    fn default() -> Self {
        FlowPairer {
            points: Vec::new(),
            source_ids: Vec::new(),
        }
    }
}

fn note(slot: &mut (u64, Option<Location>), p: &PendingFlowPoint) {
    slot.0 += 1;
    if slot.1.is_none() {
        slot.1 = Some(Location::Event(p.event));
    }
}

impl<K: Hash + Eq + Clone> FlowPairer<K> {
    pub fn push(&mut self, key: K, point: PendingFlowPoint) {
        self.push_with_id(key, None, point);
    }

    /// Like `push`, with the input's own numeric id of the flow, which the flow keeps when it
    /// is unique in the trace ([`Defs::flow_id`]).
    pub fn push_with_id(&mut self, key: K, source_id: Option<u64>, point: PendingFlowPoint) {
        self.points.push((key, point));
        self.source_ids.push(source_id);
    }

    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// Pairs everything pushed so far. Each flow keeps the id of its start where the input gave
    /// one and no other flow has it; the others get new ids from `defs`.
    pub fn pair(self, defs: &mut Defs, diag: &mut Diagnostics) -> FlowPairing {
        self.pair_as(defs, diag, Ends::Close)
    }

    /// Like [`FlowPairer::pair`], with the given rule for what an end does to its chain.
    pub fn pair_as(self, defs: &mut Defs, diag: &mut Diagnostics, ends: Ends) -> FlowPairing {
        let FlowPairer { points, source_ids } = self;
        // The points in pairing order, (time, push index), sorted only when the input was not
        // in time order: sorting the points themselves (with a key and a sequence number, 80
        // bytes each) moved most of the bytes of a pairing of millions at the end of the import.
        let mut order: Vec<(Ts, u32)> = points
            .iter()
            .enumerate()
            .map(|(i, (_, p))| (p.ts, i as u32))
            .collect();
        if !order.is_sorted() {
            order.sort_unstable();
        }
        // points already in a chain: a start paired with an end before it
        let mut taken = vec![false; points.len()];
        // chains as indices into `points`: a million chains of copies were the pairing's peak
        let mut open: FxHashMap<K, (Option<u64>, Vec<u32>)> = FxHashMap::default();
        let mut chains: Vec<(Option<u64>, Vec<u32>)> = Vec::new();
        let mut out = FlowPairing::default();
        let mut end_first = (0, None);
        // under `Ends::KeepOpen`: per key, the last point an arrow may leave from after its
        // chain ended
        let mut ended: FxHashMap<K, u32> = FxHashMap::default();
        let mut rebound = (0, None);
        for (at, &(_, n)) in order.iter().enumerate() {
            let i = n as usize;
            if taken[i] {
                continue;
            }
            let (key, p) = &points[i];
            let key = key.clone();
            let id = source_ids[i];
            match p.role {
                FlowRole::Start => {
                    ended.remove(&key);
                    if let Some(prev) = open.insert(key, (id, vec![n])) {
                        chains.push(prev);
                    }
                }
                FlowRole::Step => match open.get_mut(&key) {
                    Some((_, chain)) => chain.push(n),
                    None => match ended.remove(&key) {
                        Some(from) => {
                            note(&mut rebound, p);
                            open.insert(key, (None, vec![from, n]));
                        }
                        None => note(&mut out.end_without_start, p),
                    },
                },
                FlowRole::End => match open.remove(&key) {
                    Some((id, mut chain)) => {
                        if ends == Ends::KeepOpen {
                            ended.insert(key, *chain.last().expect("a chain"));
                        }
                        chain.push(n);
                        chains.push((id, chain));
                    }
                    None if ended.contains_key(&key) => {
                        note(&mut rebound, p);
                        chains.push((None, vec![ended[&key], n]));
                    }
                    None => {
                        // its start may follow it in the file at the same time (points taken
                        // after this one are starts taken by ends at this time too)
                        let start = order[at + 1..]
                            .iter()
                            .take_while(|&&(ts, _)| ts == p.ts)
                            .map(|&(_, j)| j as usize)
                            .find(|&j| {
                                !taken[j]
                                    && points[j].0 == key
                                    && points[j].1.role == FlowRole::Start
                            });
                        match start {
                            Some(j) => {
                                taken[j] = true;
                                note(&mut end_first, p);
                                chains.push((source_ids[j], vec![j as u32, n]));
                            }
                            None => note(&mut out.end_without_start, p),
                        }
                    }
                },
            }
        }
        drop((order, taken));
        let point = |i: u32| &points[i as usize].1;
        let mut rest: Vec<(Option<u64>, Vec<u32>)> = open.into_values().collect();
        rest.sort_by_key(|(_, c)| (point(c[0]).ts, point(c[0]).track));
        chains.extend(rest);
        if let Some(at) = rebound.1 {
            diag.record_n(&kinds::FLOW_END_REUSED, rebound.0, at, None::<String>);
        }
        if let Some(at) = end_first.1 {
            diag.record_n(
                &kinds::FLOW_END_FIRST_AT_SAME_TIME,
                end_first.0,
                at,
                None::<String>,
            );
        }
        // Ids: first every chain that can keep its input's id, then new ids for the rest, so
        // that a new id never takes an id a later chain brings.
        let mut ids: Vec<Option<FlowId>> = vec![None; chains.len()];
        for (i, (src, chain)) in chains.iter().enumerate() {
            if chain.len() >= 2 && src.is_some() {
                let (id, renumbered) = defs.flow_id(*src);
                if renumbered {
                    diag.record(
                        &kinds::FLOW_ID_RENUMBERED,
                        Location::Event(point(chain[0]).event),
                    );
                }
                ids[i] = Some(id);
            }
        }
        out.points.reserve_exact(
            chains
                .iter()
                .map(|(_, c)| c.len())
                .filter(|&n| n >= 2)
                .sum(),
        );
        for (i, (_, chain)) in chains.into_iter().enumerate() {
            if chain.len() < 2 {
                note(&mut out.start_without_end, point(chain[0]));
                continue;
            }
            let id = ids[i].unwrap_or_else(|| defs.new_flow_id());
            emit_chain(id, chain.iter().map(|&i| point(i)), &mut out);
        }
        out
    }
}

fn emit_chain<'a>(
    id: FlowId,
    chain: impl ExactSizeIterator<Item = &'a PendingFlowPoint>,
    out: &mut FlowPairing,
) {
    let last = chain.len() - 1;
    out.flows += 1;
    for (i, p) in chain.enumerate() {
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
            event: ts as u64,
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
        let r = p.pair(&mut d, &mut Diagnostics::default());
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

    #[test]
    fn end_before_its_start_at_the_same_time_pairs() {
        let mut d = Defs::new();
        let mut diag = Diagnostics::default();
        let mut p = FlowPairer::default();
        // Kineto writes some `f` before their `s` at the same timestamp
        p.push("a", pt(FlowRole::End, 10));
        p.push("a", pt(FlowRole::Start, 10));
        // a real orphan end at the same time as an unrelated start stays an orphan
        p.push("b", pt(FlowRole::End, 10));
        p.push("c", pt(FlowRole::Start, 10));
        let r = p.pair(&mut d, &mut diag);
        assert_eq!(r.flows, 1);
        assert_eq!(r.end_without_start.0, 1);
        assert_eq!(r.start_without_end.0, 1);
        let roles: Vec<_> = r.points.iter().map(|p| p.role).collect();
        assert_eq!(roles, vec![FlowRole::Start, FlowRole::End]);
        assert_eq!(diag.count("flow_end_first_at_same_time"), 1);
    }

    #[test]
    fn v2_ends_after_the_end_draw_from_the_last_outgoing_point() {
        let mut d = Defs::new();
        let mut diag = Diagnostics::default();
        let mut p = FlowPairer::default();
        // out at 1, in+out at 2, in at 3, then two more ins and an in+out and an in
        for (role, ts) in [
            (FlowRole::Start, 1),
            (FlowRole::Step, 2),
            (FlowRole::End, 3),
            (FlowRole::End, 4),
            (FlowRole::Step, 5),
            (FlowRole::End, 6),
        ] {
            p.push("a", pt(role, ts));
        }
        p.push("b", pt(FlowRole::End, 7)); // never started: an orphan still
        let r = p.pair_as(&mut d, &mut diag, Ends::KeepOpen);
        let seen: Vec<_> = r.points.iter().map(|p| (p.id, p.role, p.ts)).collect();
        let (a, b, c) = (seen[0].0, seen[3].0, seen[5].0);
        assert_eq!(
            seen,
            vec![
                (a, FlowRole::Start, 1),
                (a, FlowRole::Step, 2),
                (a, FlowRole::End, 3),
                (b, FlowRole::Start, 2),
                (b, FlowRole::End, 4),
                (c, FlowRole::Start, 2),
                (c, FlowRole::Step, 5),
                (c, FlowRole::End, 6),
            ]
        );
        assert!(a != b && b != c && a != c);
        assert_eq!(r.flows, 3);
        assert_eq!(r.end_without_start.0, 1);
        assert_eq!(diag.count("flow_end_after_its_flow_ended"), 2);
        // flow v1 keeps closing at the end
        let mut p = FlowPairer::default();
        for (role, ts) in [(FlowRole::Start, 1), (FlowRole::End, 3), (FlowRole::End, 4)] {
            p.push("a", pt(role, ts));
        }
        assert_eq!(p.pair(&mut d, &mut diag).end_without_start.0, 1);
    }

    #[test]
    fn source_ids_are_kept_unless_taken() {
        let mut d = Defs::new();
        let mut diag = Diagnostics::default();
        let mut p = FlowPairer::default();
        for (key, id, ts) in [("a", 7, 0), ("b", 3, 1), ("a", 7, 5)] {
            p.push_with_id(key, Some(id), pt(FlowRole::Start, ts));
            p.push_with_id(key, Some(id), pt(FlowRole::End, ts + 1));
        }
        p.push("x", pt(FlowRole::Start, 20));
        p.push("x", pt(FlowRole::End, 21));
        let r = p.pair(&mut d, &mut diag);
        let ids: Vec<u64> = r.points.iter().step_by(2).map(|p| p.id.0).collect();
        // the second flow with id 7 is renumbered above 2^32; the id-less one gets a fresh id
        // that is neither 3 nor 7
        assert_eq!(&ids[..2], &[7, 3]);
        assert!(ids[2] > 1 << 32);
        assert!(![3, 7].contains(&ids[3]));
        assert_eq!(diag.count("flow_id_renumbered"), 1);
        // a second input with the same ids is renumbered too
        let mut p2 = FlowPairer::default();
        p2.push_with_id("a", Some(3), pt(FlowRole::Start, 0));
        p2.push_with_id("a", Some(3), pt(FlowRole::End, 1));
        let r2 = p2.pair(&mut d, &mut diag);
        assert_ne!(r2.points[0].id.0, 3);
    }
}
