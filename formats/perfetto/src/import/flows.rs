//! Flow points gathered during the import and paired at the end, in time order as trace
//! processor pairs them: a flow id on an event begins the flow when it is not active and steps
//! it otherwise, a terminating id ends it; legacy flow events and bind ids say their role.

use rustc_hash::FxHashMap;
use tracex_ir::{Defs, Event, FlowBind, FlowPoint, FlowRole, StrId, TrackId};

/// What identifies a flow: a flow id (the v2 space, shared with legacy bind ids), or a legacy
/// flow event's (id, category, name).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Key {
    Id(u64),
    V1(u64, Option<StrId>, Option<StrId>),
}

/// How a point takes part in its flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum How {
    /// In `flow_ids`: begins the flow, or steps it when it is active.
    Ids,
    /// In `terminating_flow_ids`: ends the active flow.
    Terminating,
    Role(FlowRole),
}

#[derive(Clone, Debug)]
pub struct Pt {
    pub key: Key,
    pub how: How,
    pub track: TrackId,
    pub ts: i64,
    pub bind: FlowBind,
    /// The flow's (name, category) as this point gives them; `None`: the start's (for a start:
    /// the trace's default).
    pub names: Option<(Option<StrId>, Option<StrId>)>,
}

/// Points that could not be paired, by reason.
#[derive(Debug, Default)]
pub struct Unpaired {
    pub start_alone: u64,
    pub step_without_start: u64,
    pub end_without_start: u64,
}

#[derive(Default)]
pub struct FlowPoints {
    points: Vec<(u64, Pt)>,
}

impl FlowPoints {
    pub fn push(&mut self, p: Pt) {
        let order = self.points.len() as u64;
        self.points.push((order, p));
    }

    /// Pairs every point into complete chains (a chain left without an end ends at its last
    /// step), each with a new flow id.
    pub fn pair(
        self,
        defs: &mut Defs,
        default: (Option<StrId>, Option<StrId>),
    ) -> (Vec<Event>, Unpaired) {
        let mut points = self.points;
        points.sort_by_key(|(order, p)| (p.ts, *order));
        let mut active: FxHashMap<Key, Vec<Pt>> = FxHashMap::default();
        let mut out = Vec::new();
        let mut lost = Unpaired::default();
        let mut emit = |chain: Vec<Pt>, out: &mut Vec<Event>, defs: &mut Defs| {
            let id = defs.new_flow_id();
            let start = chain[0].names.unwrap_or(default);
            let last = chain.len() - 1;
            for (i, p) in chain.into_iter().enumerate() {
                let (name, cat) = p.names.unwrap_or(start);
                out.push(Event::Flow(FlowPoint {
                    id,
                    role: match i {
                        0 => FlowRole::Start,
                        _ if i == last => FlowRole::End,
                        _ => FlowRole::Step,
                    },
                    track: p.track,
                    ts: p.ts,
                    bind: p.bind,
                    name,
                    cat,
                }));
            }
        };
        for (_, p) in points {
            let role = match p.how {
                How::Ids if active.contains_key(&p.key) => FlowRole::Step,
                How::Ids => FlowRole::Start,
                How::Terminating => FlowRole::End,
                How::Role(r) => r,
            };
            match role {
                FlowRole::Start => {
                    if let Some(old) = active.remove(&p.key) {
                        Self::close(old, &mut out, defs, &mut lost, &mut emit);
                    }
                    active.insert(p.key, vec![p]);
                }
                FlowRole::Step => match active.get_mut(&p.key) {
                    Some(chain) => chain.push(p),
                    None => lost.step_without_start += 1,
                },
                FlowRole::End => match active.remove(&p.key) {
                    Some(mut chain) => {
                        chain.push(p);
                        emit(chain, &mut out, defs);
                    }
                    None => lost.end_without_start += 1,
                },
            }
        }
        let mut left: Vec<Vec<Pt>> = active.into_values().collect();
        left.sort_by_key(|c| (c[0].ts, c[0].track));
        for chain in left {
            Self::close(chain, &mut out, defs, &mut lost, &mut emit);
        }
        (out, lost)
    }

    /// A chain that no end closed: drawn up to its last step, or lost when it is a lone start.
    fn close(
        chain: Vec<Pt>,
        out: &mut Vec<Event>,
        defs: &mut Defs,
        lost: &mut Unpaired,
        emit: &mut impl FnMut(Vec<Pt>, &mut Vec<Event>, &mut Defs),
    ) {
        if chain.len() >= 2 {
            emit(chain, out, defs);
        } else {
            lost.start_alone += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pt(key: u64, how: How, ts: i64) -> Pt {
        Pt {
            key: Key::Id(key),
            how,
            track: TrackId(0),
            ts,
            bind: FlowBind::Enclosing,
            names: None,
        }
    }

    #[test]
    fn pairs_in_time_order() {
        let mut f = FlowPoints::default();
        f.push(pt(1, How::Terminating, 30));
        f.push(pt(1, How::Ids, 10));
        f.push(pt(1, How::Ids, 20));
        f.push(pt(2, How::Ids, 5));
        f.push(pt(3, How::Terminating, 1));
        f.push(pt(4, How::Ids, 1));
        f.push(pt(4, How::Ids, 2));
        let mut defs = Defs::new();
        let (events, lost) = f.pair(&mut defs, (None, None));
        let roles: Vec<(FlowRole, i64)> = events
            .iter()
            .map(|e| match e {
                Event::Flow(p) => (p.role, p.ts),
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(
            roles,
            vec![
                (FlowRole::Start, 10),
                (FlowRole::Step, 20),
                (FlowRole::End, 30),
                (FlowRole::Start, 1),
                (FlowRole::End, 2),
            ]
        );
        assert_eq!((lost.start_alone, lost.end_without_start), (1, 1));
    }
}
