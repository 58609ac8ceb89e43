//! Flow points gathered during the import and paired at the end, in time order as trace
//! processor pairs them: a flow id on an event begins the flow when it is not active and steps
//! it otherwise, a terminating id ends it; legacy flow events and bind ids say their role.
//! Points wait in sorted runs on disk beyond [`RUN_BYTES`] bytes of them ([`Runs`]), and chains are
//! emitted as they complete, so memory holds one run and the open chains whatever the number of
//! flows.

use std::io;

use rustc_hash::FxHashMap;
use tracex_ir::{Event, FlowBind, FlowPoint, FlowRole, ImportCtx, Result, StrId, TrackId};

use super::runs::{Record, Runs, RUN_BYTES};

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

#[derive(Clone, Debug, PartialEq)]
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

/// The flow points of an import, sorted by time with bounded memory ([`Runs`]) and paired at
/// the end.
pub struct FlowPoints {
    points: Runs<Arrived>,
    pushed: u64,
}

/// A point and its arrival number, in the order points are paired: by time, then as they came.
#[derive(Debug, PartialEq)]
struct Arrived(u64, Pt);

impl Default for FlowPoints {
    fn default() -> Self {
        // held to the end, a million kernels' flow points (48 bytes each) and paired events took
        // 410 MB
        FlowPoints::with_run(RUN_BYTES)
    }
}

impl FlowPoints {
    fn with_run(run: usize) -> Self {
        FlowPoints {
            points: Runs::new(run, "to pair flow points"),
            pushed: 0,
        }
    }

    pub fn push(&mut self, p: Pt) -> io::Result<()> {
        self.pushed += 1;
        self.points.push(&Arrived(self.pushed, p))
    }

    /// Pairs every point into complete chains (a chain left without an end ends at its last
    /// step), each with a new flow id, and emits their events as each chain completes.
    pub fn pair(
        self,
        ctx: &mut ImportCtx,
        default: (Option<StrId>, Option<StrId>),
    ) -> Result<Unpaired> {
        let mut pairing = Pairing {
            active: FxHashMap::default(),
            lost: Unpaired::default(),
            default,
        };
        let mut points = self.points.sorted()?;
        while let Some(Arrived(_, p)) = points.next()? {
            pairing.point(ctx, p)?;
        }
        pairing.finish(ctx)
    }
}

/// The chains being paired, in time order.
struct Pairing {
    active: FxHashMap<Key, Vec<Pt>>,
    lost: Unpaired,
    default: (Option<StrId>, Option<StrId>),
}

impl Pairing {
    fn point(&mut self, ctx: &mut ImportCtx, p: Pt) -> Result<()> {
        let role = match p.how {
            How::Ids if self.active.contains_key(&p.key) => FlowRole::Step,
            How::Ids => FlowRole::Start,
            How::Terminating => FlowRole::End,
            How::Role(r) => r,
        };
        match role {
            FlowRole::Start => {
                if let Some(old) = self.active.remove(&p.key) {
                    self.close(ctx, old)?;
                }
                self.active.insert(p.key, vec![p]);
            }
            FlowRole::Step => match self.active.get_mut(&p.key) {
                Some(chain) => chain.push(p),
                None => self.lost.step_without_start += 1,
            },
            FlowRole::End => match self.active.remove(&p.key) {
                Some(mut chain) => {
                    chain.push(p);
                    self.emit(ctx, chain)?;
                }
                None => self.lost.end_without_start += 1,
            },
        }
        Ok(())
    }

    /// Closes the chains left open, in the order they began.
    fn finish(mut self, ctx: &mut ImportCtx) -> Result<Unpaired> {
        let mut left: Vec<Vec<Pt>> = std::mem::take(&mut self.active).into_values().collect();
        left.sort_by_key(|c| (c[0].ts, c[0].track));
        for chain in left {
            self.close(ctx, chain)?;
        }
        Ok(self.lost)
    }

    /// A chain that no end closed: drawn up to its last step, or lost when it is a lone start.
    fn close(&mut self, ctx: &mut ImportCtx, chain: Vec<Pt>) -> Result<()> {
        if chain.len() >= 2 {
            self.emit(ctx, chain)
        } else {
            self.lost.start_alone += 1;
            Ok(())
        }
    }

    fn emit(&mut self, ctx: &mut ImportCtx, chain: Vec<Pt>) -> Result<()> {
        let id = ctx.defs.new_flow_id();
        let start = chain[0].names.unwrap_or(self.default);
        let last = chain.len() - 1;
        for (i, p) in chain.into_iter().enumerate() {
            let (name, cat) = p.names.unwrap_or(start);
            ctx.emit(Event::Flow(FlowPoint {
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
            }))?;
        }
        Ok(())
    }
}

/// The bytes of a point on disk.
const RECORD: usize = 48;

impl Record for Arrived {
    type Key = (i64, u64);

    fn key(&self) -> (i64, u64) {
        (self.1.ts, self.0)
    }

    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&encode(self.0, &self.1));
    }

    fn decode(bytes: &[u8]) -> io::Result<Arrived> {
        let b = bytes.try_into().map_err(|_| damaged())?;
        decode(b).map(|(order, p)| Arrived(order, p))
    }
}

fn damaged() -> io::Error {
    io::Error::other("a flow point read back is damaged")
}

/// A point as a fixed-size record: order, time, flow id, track, the key's category and name,
/// the point's name and category, and flags saying which are present, the key's kind, how the
/// point takes part and its binding.
fn encode(order: u64, p: &Pt) -> [u8; RECORD] {
    let mut flags = 0u32;
    let (id, key_cat, key_name) = match p.key {
        Key::Id(id) => (id, None, None),
        Key::V1(id, cat, name) => {
            flags |= V1;
            (id, cat, name)
        }
    };
    let mut opt = |s: Option<StrId>, bit: u32| {
        s.map_or(0, |s| {
            flags |= bit;
            s.0
        })
    };
    let key_cat = opt(key_cat, KEY_CAT);
    let key_name = opt(key_name, KEY_NAME);
    let (name, cat) = p.names.unwrap_or_default();
    let (name, cat) = (opt(name, NAME), opt(cat, CAT));
    if p.names.is_some() {
        flags |= NAMES;
    }
    if p.bind == FlowBind::Next {
        flags |= NEXT;
    }
    flags |= match p.how {
        How::Ids => 0,
        How::Terminating => 1,
        How::Role(FlowRole::Start) => 2,
        How::Role(FlowRole::Step) => 3,
        How::Role(FlowRole::End) => 4,
    } << HOW_SHIFT;
    let mut b = [0u8; RECORD];
    b[0..8].copy_from_slice(&order.to_le_bytes());
    b[8..16].copy_from_slice(&p.ts.to_le_bytes());
    b[16..24].copy_from_slice(&id.to_le_bytes());
    let words = [p.track.0, key_cat, key_name, name, cat, flags];
    for (k, w) in words.iter().enumerate() {
        b[24 + 4 * k..28 + 4 * k].copy_from_slice(&w.to_le_bytes());
    }
    b
}

const V1: u32 = 1;
const KEY_CAT: u32 = 1 << 1;
const KEY_NAME: u32 = 1 << 2;
const NAMES: u32 = 1 << 3;
const NAME: u32 = 1 << 4;
const CAT: u32 = 1 << 5;
const NEXT: u32 = 1 << 6;
const HOW_SHIFT: u32 = 8;

fn decode(b: &[u8; RECORD]) -> io::Result<(u64, Pt)> {
    let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
    let word = |k: usize| u32::from_le_bytes(b[24 + 4 * k..28 + 4 * k].try_into().expect("4"));
    let flags = word(5);
    let opt = |k: usize, bit: u32| (flags & bit != 0).then(|| StrId(word(k)));
    let id = u64_at(16);
    let key = match flags & V1 {
        0 => Key::Id(id),
        _ => Key::V1(id, opt(1, KEY_CAT), opt(2, KEY_NAME)),
    };
    let how = match flags >> HOW_SHIFT {
        0 => How::Ids,
        1 => How::Terminating,
        2 => How::Role(FlowRole::Start),
        3 => How::Role(FlowRole::Step),
        4 => How::Role(FlowRole::End),
        _ => return Err(damaged()),
    };
    let pt = Pt {
        key,
        how,
        track: TrackId(word(0)),
        ts: u64_at(8) as i64,
        bind: match flags & NEXT {
            0 => FlowBind::Enclosing,
            _ => FlowBind::Next,
        },
        names: (flags & NAMES != 0).then(|| (opt(3, NAME), opt(4, CAT))),
    };
    Ok((u64_at(0), pt))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracex_ir::mem::Trace;
    use tracex_ir::ArgsRead;

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

    /// The flow events of pairing `points` with runs of `run` bytes (48 a point), and the
    /// points lost.
    fn paired(points: &[Pt], run: usize) -> (Vec<Event>, (u64, u64, u64)) {
        let mut lost = None;
        let trace = Trace::imported(ArgsRead::All, |ctx| {
            let mut f = FlowPoints::with_run(run);
            for p in points {
                f.push(p.clone())?;
            }
            let l = f.pair(ctx, (None, None))?;
            lost = Some((l.start_alone, l.step_without_start, l.end_without_start));
            Ok(())
        })
        .unwrap();
        (trace.events, lost.unwrap())
    }

    #[test]
    fn pairs_in_time_order() {
        let points = [
            pt(1, How::Terminating, 30),
            pt(1, How::Ids, 10),
            pt(1, How::Ids, 20),
            pt(2, How::Ids, 5),
            pt(3, How::Terminating, 1),
            pt(4, How::Ids, 1),
            pt(4, How::Ids, 2),
        ];
        for run in [1, 2 * RECORD, 3 * RECORD, RUN_BYTES] {
            let (events, lost) = paired(&points, run);
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
                ],
                "runs of {run}"
            );
            assert_eq!((lost.0, lost.2), (1, 1), "runs of {run}");
        }
    }

    #[test]
    fn points_read_back_from_a_run_are_the_points_written() {
        let s = |i| Some(StrId(i));
        let keys = [
            Key::Id(u64::MAX),
            Key::V1(7, s(3), None),
            Key::V1(0, None, s(u32::MAX)),
        ];
        let hows = [
            How::Ids,
            How::Terminating,
            How::Role(FlowRole::Start),
            How::Role(FlowRole::Step),
            How::Role(FlowRole::End),
        ];
        let names = [
            None,
            Some((None, None)),
            Some((s(1), None)),
            Some((None, s(0))),
        ];
        let mut order = 0;
        for key in keys {
            for how in hows {
                for names in names {
                    for bind in [FlowBind::Enclosing, FlowBind::Next] {
                        let p = Pt {
                            key,
                            how,
                            track: TrackId(order as u32 * 977),
                            ts: i64::MIN + order as i64 * 1_000_003,
                            bind,
                            names,
                        };
                        assert_eq!(decode(&encode(order, &p)).unwrap(), (order, p.clone()));
                        order += 1;
                    }
                }
            }
        }
        let mut bad = encode(0, &pt(1, How::Ids, 0));
        bad[45] = 0xff;
        assert!(decode(&bad).is_err());
    }

    #[test]
    fn runs_on_disk_pair_as_points_in_memory() {
        // flows of every role, out of time order, with ties in time, long chains, lone starts,
        // ends without a start and ids used again: a fixed xorshift
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut rand = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let points: Vec<Pt> = (0..5_000)
            .map(|_| {
                let how = match rand(6) {
                    0..=2 => How::Ids,
                    3 => How::Terminating,
                    r => {
                        How::Role([FlowRole::Start, FlowRole::Step, FlowRole::End][r as usize - 3])
                    }
                };
                let mut p = pt(rand(300), how, rand(2_000) as i64);
                p.track = TrackId(rand(5) as u32);
                p
            })
            .collect();
        let in_memory = paired(&points, RUN_BYTES);
        assert!(in_memory.0.len() > 1_000, "{}", in_memory.0.len());
        // runs of one point merge in three sizes (16, 256 and 4096 points)
        for run in [1, 7, 999, 4_999, 5_000].map(|n| n * RECORD) {
            assert!(paired(&points, run) == in_memory, "runs of {run}");
        }
    }
}
