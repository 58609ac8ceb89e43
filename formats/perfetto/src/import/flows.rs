//! Flow points gathered during the import and paired at the end, in time order as trace
//! processor pairs them: a flow id on an event begins the flow when it is not active and steps
//! it otherwise, a terminating id ends it; legacy flow events and bind ids say their role.
//! Points wait in sorted runs on disk beyond [`RUN`] of them, and chains are emitted as they
//! complete, so memory holds one run and the open chains whatever the number of flows.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};

use rustc_hash::FxHashMap;
use tracex_ir::{Event, FlowBind, FlowPoint, FlowRole, ImportCtx, Result, StrId, TrackId};

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

/// Points held in memory before they go, sorted, to a temporary file as a run: 16 MiB of them.
/// Flows of a million kernels held every point (and every paired event) to the end, 410 MB.
const RUN: usize = 1 << 18;

/// Runs of one size merged into one of the next size once there are this many: the runs open
/// at the end stay few (at most this many per size) whatever the number of points, and each
/// point is written once per size.
const FAN_IN: usize = 16;

/// A sorted run on disk and its size (0: written from memory; n + 1: merged from runs of n).
type Run = (u32, BufReader<File>);

/// The flow points of an import: the latest in memory, the earlier ones in sorted runs on disk,
/// all merged in time order at the end. Memory: one run's points and the open chains.
pub struct FlowPoints {
    points: Vec<(u64, Pt)>,
    runs: Vec<Run>,
    pushed: u64,
    /// Points per run ([`RUN`]; fewer in tests).
    run: usize,
}

impl Default for FlowPoints {
    fn default() -> Self {
        FlowPoints::with_run(RUN)
    }
}

impl FlowPoints {
    fn with_run(run: usize) -> Self {
        FlowPoints {
            points: Vec::new(),
            runs: Vec::new(),
            pushed: 0,
            run: run.max(1),
        }
    }

    pub fn push(&mut self, p: Pt) -> io::Result<()> {
        self.points.push((self.pushed, p));
        self.pushed += 1;
        if self.points.len() >= self.run {
            self.spill()?;
        }
        Ok(())
    }

    /// Writes the points in memory to a temporary file, sorted; merges the last [`FAN_IN`] runs
    /// into one while they are of one size.
    fn spill(&mut self) -> io::Result<()> {
        sort(&mut self.points);
        let run = write_run(self.points.drain(..).map(Ok))?;
        self.runs.push((0, run));
        while let Some(size) = self.full_size() {
            let group = self.runs.split_off(self.runs.len() - FAN_IN);
            let mut merged = Merge::new(group.into_iter().map(|(_, r)| r).collect(), Vec::new())?;
            let run = write_run(std::iter::from_fn(|| merged.next().transpose()))?;
            self.runs.push((size + 1, run));
        }
        Ok(())
    }

    /// The size of the last [`FAN_IN`] runs, when they are all of it.
    fn full_size(&self) -> Option<u32> {
        let last = self.runs.get(self.runs.len().checked_sub(FAN_IN)?..)?;
        let size = last[0].0;
        last.iter().all(|r| r.0 == size).then_some(size)
    }

    /// Pairs every point into complete chains (a chain left without an end ends at its last
    /// step), each with a new flow id, and emits their events as each chain completes.
    pub fn pair(
        self,
        ctx: &mut ImportCtx,
        default: (Option<StrId>, Option<StrId>),
    ) -> Result<Unpaired> {
        let FlowPoints {
            mut points, runs, ..
        } = self;
        sort(&mut points);
        let mut pairing = Pairing {
            active: FxHashMap::default(),
            lost: Unpaired::default(),
            default,
        };
        let mut merged = Merge::new(runs.into_iter().map(|(_, r)| r).collect(), points)?;
        while let Some((_, p)) = merged.next()? {
            pairing.point(ctx, p)?;
        }
        pairing.finish(ctx)
    }
}

/// A new temporary file holding `points`, rewound.
fn write_run(points: impl Iterator<Item = io::Result<(u64, Pt)>>) -> io::Result<BufReader<File>> {
    let file = tempfile::tempfile()
        .map_err(|e| tracex_ir::io::temp_file_error(e, "to pair flow points"))?;
    let mut w = BufWriter::with_capacity(1 << 16, file);
    for point in points {
        let (order, p) = point?;
        w.write_all(&encode(order, &p))?;
    }
    let mut file = w.into_inner().map_err(|e| e.into_error())?;
    file.seek(SeekFrom::Start(0))?;
    Ok(BufReader::with_capacity(1 << 16, file))
}

/// Sorted runs and sorted points in memory, merged by (time, order).
struct Merge {
    runs: Vec<BufReader<File>>,
    /// The next point of each run.
    next: Vec<Option<(u64, Pt)>>,
    /// The runs by their next point's (time, order).
    heads: BinaryHeap<Reverse<(i64, u64, usize)>>,
    memory: std::iter::Peekable<std::vec::IntoIter<(u64, Pt)>>,
}

impl Merge {
    fn new(mut runs: Vec<BufReader<File>>, memory: Vec<(u64, Pt)>) -> io::Result<Merge> {
        let mut heads = BinaryHeap::with_capacity(runs.len());
        let mut next = Vec::with_capacity(runs.len());
        for (i, r) in runs.iter_mut().enumerate() {
            let p = read(r)?;
            if let Some((order, p)) = &p {
                heads.push(Reverse((p.ts, *order, i)));
            }
            next.push(p);
        }
        Ok(Merge {
            runs,
            next,
            heads,
            memory: memory.into_iter().peekable(),
        })
    }

    fn next(&mut self) -> io::Result<Option<(u64, Pt)>> {
        let from_run = match (self.heads.peek(), self.memory.peek()) {
            (Some(&Reverse((ts, order, _))), Some((o, p))) => (ts, order) < (p.ts, *o),
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => return Ok(None),
        };
        if !from_run {
            return Ok(self.memory.next());
        }
        let Reverse((_, _, i)) = self.heads.pop().expect("a head");
        let point = self.next[i].take();
        self.next[i] = read(&mut self.runs[i])?;
        if let Some((order, q)) = &self.next[i] {
            self.heads.push(Reverse((q.ts, *order, i)));
        }
        Ok(point)
    }
}

/// Sorts points in the order they are paired: by time, then as they came.
fn sort(points: &mut [(u64, Pt)]) {
    points.sort_unstable_by_key(|(order, p)| (p.ts, *order));
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
        _ => return Err(io::Error::other("a flow point read back is damaged")),
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

/// The next point of a run, or `None` at its end.
fn read(r: &mut BufReader<File>) -> io::Result<Option<(u64, Pt)>> {
    let mut b = [0u8; RECORD];
    match r.read_exact(&mut b) {
        Ok(()) => decode(&b).map(Some),
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(None),
        Err(e) => Err(e),
    }
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

    /// The flow events of pairing `points` with runs of `run` points, and the points lost.
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
        for run in [1, 2, 3, RUN] {
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
        let in_memory = paired(&points, RUN);
        assert!(in_memory.0.len() > 1_000, "{}", in_memory.0.len());
        // runs of one point merge in three sizes (16, 256 and 4096 points)
        for run in [1, 7, 999, 4_999, 5_000] {
            assert!(paired(&points, run) == in_memory, "runs of {run}");
        }
        // 5000 = 4096 + 3 × 256 + 8 × 16 + 8: the runs left open, by size
        let mut f = FlowPoints::with_run(1);
        for p in &points {
            f.push(p.clone()).unwrap();
        }
        let sizes: Vec<u32> = f.runs.iter().map(|r| r.0).collect();
        let want: Vec<u32> = [3]
            .iter()
            .chain(&[2; 3])
            .chain(&[1; 8])
            .chain(&[0; 8])
            .copied()
            .collect();
        assert_eq!(sizes, want);
    }
}
