//! The GPU view from events in arrival order ([`tracex_ir::Sink::unordered`]).
//!
//! Of the total order, the GPU view needs only what it decides: the slice each flow point
//! binds to, the order in which calls and GPU work are first seen (their indices break ties in
//! the join), the order of the samples caught at a launch, and the overlap router's count of
//! slices it moves to overflow lanes. Each is worked out here at the end, per root track, from
//! compact records kept as the events arrive, instead of sorting, routing and binding every
//! event: in a GPU flame-graph merge, that was a third of the time.
//!
//! Where the answer would depend on more than this module decides (a slice never ended, a flow
//! point bound to the next slice, calls with backtraces, slices of no length starting
//! together where a flow binds), it gives up with [`Error::NeedsOrder`] and the conversion runs
//! again in order. Tests compare both ways on every fixture and on generated traces.

use std::cmp::Reverse;
use std::collections::binary_heap::{BinaryHeap, PeekMut};

use rustc_hash::FxHashMap;
use tracex_ir::kind::SliceKind;
use tracex_ir::nest::{overlap_kind, place, routed};
use tracex_ir::order::OrderKey;
use tracex_ir::{
    Defs, DiagKind, Diagnostics, Error, FlowBind, FlowId, FlowPoint, FlowRole, Location, Result,
    Sample, Slice, StackId, StrId, TrackId, TrackKind,
};

use super::gpu::{AtLaunch, Call, Gpu, Work};

/// Records of each kind kept at most; past them the conversion runs in order, which spills to
/// disk. Room for them is made at the start: address space only, whose pages are touched as
/// records are written (grown by doubling instead, the records were copied at each step, the
/// largest cost of the page faults of a 20k-launch merge).
const MAX_RECORDS: usize = 1 << 21;

/// A root track's root frames (`--prefix`), as the exporter makes them.
pub type Prefix<'a> = dyn FnMut(TrackId) -> Option<StackId> + 'a;

const LAUNCH: Part = Part::Api { launch: true };

/// An event's arrival number: 32 bits, which no input within the memory budget exceeds (more
/// events give up on the unordered join).
type Seq = u32;

/// No correlation id.
const NO_ID: u64 = u64::MAX;

/// No index: a slice not registered with the join, a flow point bound to no slice.
const NONE: u32 = u32::MAX;
/// A slice about to be registered.
const TAKEN: u32 = u32::MAX - 1;

/// What a slice is to the GPU join.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    Other,
    /// A CUDA API call; `launch`: a `cudaLaunchKernel`, which samples are matched to.
    Api {
        launch: bool,
    },
    Gpu(SliceKind),
}

/// A slice as the join needs it: 48 bytes (a million launches keep two million).
#[derive(Clone, Copy)]
struct SliceRec {
    ts: i64,
    dur: i64,
    /// A GPU slice's correlation id (from its args), which flow ends prefer ([`NO_ID`]).
    correlation: u64,
    /// Its arrival number ([`Seq`]).
    seq: Seq,
    track: TrackId,
    name: StrId,
    /// Its root track's group.
    slot: u32,
    /// Its call or work index in the join ([`NONE`], [`TAKEN`]).
    index: u32,
    part: Part,
    /// On a thread's or a stream's track (or a lane of one): the exporter's lanes hold it.
    strict: bool,
}

impl SliceRec {
    /// Its key in the total order, its input moved by `off`.
    fn key(&self, off: i64) -> OrderKey {
        OrderKey::slice(self.ts.saturating_add(off), Some(self.dur), self.seq.into())
    }
}

/// A flow point as the join needs it: 32 bytes.
#[derive(Clone, Copy)]
struct FlowRec {
    id: FlowId,
    ts: i64,
    seq: Seq,
    slot: u32,
    /// The slice it binds to ([`NONE`]).
    bound: u32,
    start: bool,
    /// A start whose end has come.
    ended: bool,
    /// On a thread's or a stream's track (or a lane of one).
    strict: bool,
    /// The point that registers its slice with the join (its first flow start on a call that
    /// is not a launch, its first flow end on GPU work).
    registers: bool,
}

#[derive(Clone, Copy)]
struct SampleRec {
    slot: u32,
    clean: u32,
    ts: i64,
    seq: Seq,
    weight: i64,
}

/// One root track (a thread or a stream, with its lanes), whose records all come from one
/// input.
struct Group {
    root: TrackId,
    strict: bool,
    input: u32,
    /// Its index in the exporter's join, once registered.
    gpu_root: Option<u32>,
    /// Its slices and flow points (indices of the records), in the order once resolved.
    slices: Vec<u32>,
    flows: Vec<u32>,
    /// The slice each of its flow points binds to (by place in `flows`; [`NONE`]).
    bound: Vec<u32>,
    /// How far its input moves in time (known at the end).
    off: i64,
    /// The last slice and flow point recorded, and whether they came in the order so far
    /// (then they need no sort).
    last_slice: Option<(i64, i64)>,
    last_flow: i64,
    slices_sorted: bool,
    flows_sorted: bool,
}

/// Where a track's records go, and what the router and the exporter make of its slices.
#[derive(Clone, Copy)]
struct TrackRec {
    slot: u32,
    strict: bool,
    kind: TrackKind,
}

/// The records of an unordered stream, in arrival order.
pub struct Unordered {
    slices: Vec<SliceRec>,
    flows: Vec<FlowRec>,
    at_launch: Vec<SampleRec>,
    groups: Vec<Group>,
    slots: FxHashMap<TrackId, u32>,
    /// By track id.
    tracks: Vec<Option<TrackRec>>,
    /// The input of the events arriving now, plus one (inputs are announced before their
    /// first event).
    inputs: u32,
    seq: u64,
    offsets: Vec<i64>,
    /// Why the order is needed after all, once known.
    gave_up: Option<&'static str>,
    /// Calls and GPU work recorded: at most as many are registered with the join.
    parts: (usize, usize),
}

impl Default for Unordered {
    fn default() -> Self {
        Unordered {
            slices: Vec::with_capacity(MAX_RECORDS),
            flows: Vec::with_capacity(MAX_RECORDS),
            at_launch: Vec::with_capacity(MAX_RECORDS),
            groups: Vec::new(),
            slots: FxHashMap::default(),
            tracks: Vec::new(),
            inputs: 0,
            seq: 0,
            offsets: Vec::new(),
            gave_up: None,
            parts: (0, 0),
        }
    }
}

impl Unordered {
    pub fn begin_input(&mut self) {
        self.inputs += 1;
    }

    pub fn set_offsets(&mut self, offsets: &[i64]) {
        self.offsets = offsets.to_vec();
    }

    fn input(&self) -> u32 {
        self.inputs.saturating_sub(1)
    }

    fn offset(&self, input: u32) -> i64 {
        self.offsets.get(input as usize).copied().unwrap_or(0)
    }

    fn next_seq(&mut self) -> Seq {
        self.seq += 1;
        // past the 32 bits of a record's arrival number, `resolve` gives up
        Seq::try_from(self.seq - 1).unwrap_or(Seq::MAX)
    }

    /// Stops taking records: the order is needed (`reason`).
    fn give_up(&mut self, reason: &'static str) -> Result<()> {
        self.gave_up.get_or_insert(reason);
        Err(Error::NeedsOrder(reason))
    }

    /// What `track`'s records need, its root's group made on first use; fails when the
    /// group's records come from another input (its offset would not be one).
    fn track(&mut self, defs: &Defs, track: TrackId) -> Result<TrackRec> {
        let t = match self.tracks.get(track.0 as usize) {
            Some(&Some(t)) => t,
            _ => self.new_track(defs, track),
        };
        if self.groups[t.slot as usize].input != self.input() {
            self.give_up("a track's events come from two inputs")?;
        }
        Ok(t)
    }

    #[cold]
    fn new_track(&mut self, defs: &Defs, track: TrackId) -> TrackRec {
        let root = defs.root_track(track);
        let groups = &mut self.groups;
        let input = self.inputs.saturating_sub(1);
        let slot = *self.slots.entry(root).or_insert_with(|| {
            groups.push(Group {
                root,
                strict: defs.track(root).is_strict(),
                input,
                gpu_root: None,
                slices: Vec::new(),
                flows: Vec::new(),
                bound: Vec::new(),
                off: 0,
                last_slice: None,
                last_flow: i64::MIN,
                slices_sorted: true,
                flows_sorted: true,
            });
            groups.len() as u32 - 1
        });
        let def = defs.track(track);
        let t = TrackRec {
            slot,
            strict: def.is_strict(),
            kind: def.kind,
        };
        // track ids are indices of the definitions' tracks
        let at = track.0 as usize;
        if self.tracks.len() <= at {
            self.tracks.resize(at + 1, None);
        }
        self.tracks[at] = Some(t);
        t
    }

    /// A slice: `part` says what it is to the join (`Other` on a track that is not a thread's
    /// or a stream's, which the exporter does not fold but the router and binder see).
    pub fn slice(
        &mut self,
        defs: &Defs,
        s: &Slice,
        part: Part,
        correlation: Option<u64>,
    ) -> Result<()> {
        let seq = self.next_seq();
        let Some(dur) = s.dur.filter(|&d| d >= 0) else {
            return self.give_up("a slice never ended or ends before it starts");
        };
        if s.stack.is_some() && matches!(part, Part::Api { .. }) {
            return self.give_up("a call has a backtrace");
        }
        if self.slices.len() == MAX_RECORDS {
            return self.give_up("too many slices to hold");
        }
        let t = self.track(defs, s.track)?;
        match part {
            Part::Api { .. } => self.parts.0 += 1,
            Part::Gpu(_) => self.parts.1 += 1,
            Part::Other => {}
        }
        let g = &mut self.groups[t.slot as usize];
        // the order of a root's slices: time, then longer first, then arrival
        let order = (s.ts, dur.saturating_neg());
        g.slices_sorted &= g.last_slice.is_none_or(|last| last <= order);
        g.last_slice = Some(order);
        g.slices.push(self.slices.len() as u32);
        self.slices.push(SliceRec {
            track: s.track,
            name: s.name,
            ts: s.ts,
            dur,
            seq,
            correlation: correlation.unwrap_or(NO_ID),
            slot: t.slot,
            part,
            // a launch registers at its own place
            index: if part == LAUNCH { TAKEN } else { NONE },
            strict: t.strict,
        });
        Ok(())
    }

    pub fn flow(&mut self, defs: &Defs, f: &FlowPoint) -> Result<()> {
        let seq = self.next_seq();
        let start = match (f.role, f.bind) {
            (FlowRole::Start, FlowBind::Enclosing) => true,
            (FlowRole::End, FlowBind::Enclosing) => false,
            _ => return self.give_up("a flow point binds to the next slice, or is a step"),
        };
        if self.flows.len() == MAX_RECORDS {
            return self.give_up("too many flow points to hold");
        }
        let t = self.track(defs, f.track)?;
        let g = &mut self.groups[t.slot as usize];
        g.flows_sorted &= g.last_flow <= f.ts;
        g.last_flow = f.ts;
        g.flows.push(self.flows.len() as u32);
        self.flows.push(FlowRec {
            id: f.id,
            slot: t.slot,
            ts: f.ts,
            seq,
            bound: NONE,
            start,
            ended: false,
            registers: false,
            strict: t.strict,
        });
        Ok(())
    }

    /// A sample; `clean` is its cleaned stack when it was caught at a launch.
    pub fn sample(&mut self, defs: &Defs, s: &Sample, clean: Option<u32>) -> Result<()> {
        let seq = self.next_seq();
        if let (Some(ts), Some(clean)) = (s.ts, clean) {
            if self.at_launch.len() == MAX_RECORDS {
                return self.give_up("too many samples to hold");
            }
            let t = self.track(defs, s.track)?;
            self.at_launch.push(SampleRec {
                slot: t.slot,
                clean,
                ts,
                seq,
                weight: s.weight,
            });
        }
        Ok(())
    }

    /// Any other event: it only takes its place in the arrival order.
    pub fn other(&mut self) {
        self.next_seq();
    }

    /// Fills the exporter's GPU join as the ordered stream would have: the calls, GPU work and
    /// their joins, the samples caught at launches, and the overlap router's diagnostics.
    /// `prefix` gives a root track's root frames (`--prefix`).
    pub fn resolve(
        mut self,
        gpu: &mut Gpu,
        prefix: &mut Prefix,
        defs: &Defs,
        diag: &mut Diagnostics,
    ) -> Result<()> {
        if let Some(reason) = self.gave_up {
            return Err(Error::NeedsOrder(reason));
        }
        if self.seq > u64::from(Seq::MAX) {
            return Err(Error::NeedsOrder("too many events to number"));
        }
        // the threads of the samples, registered first (the join's order of threads is not
        // the output's)
        let mut sampled = vec![false; self.groups.len()];
        for s in &self.at_launch {
            sampled[s.slot as usize] = true;
        }
        let roots: Vec<u32> = (0..self.groups.len() as u32)
            .map(|slot| match sampled[slot as usize] {
                true => self.gpu_root(gpu, prefix, defs, slot),
                false => NONE,
            })
            .collect();
        let offsets: Vec<i64> = self.groups.iter().map(|g| self.offset(g.input)).collect();
        for (g, &off) in self.groups.iter_mut().zip(&offsets) {
            g.off = off;
        }
        let samples = std::mem::take(&mut self.at_launch);
        let (calls, works) = self.parts;
        let touched = &mut *gpu;
        let records = Records {
            slices: &self.slices,
            flows: &self.flows,
            tracks: &self.tracks,
        };
        // Both cores are free by now: the groups are ordered on both, the larger ones first
        // each to the less loaded; the other core also orders the samples and touches the
        // pages the calls and GPU work will fill (a fault each, 2 µs on the machines measured).
        let mut mine: Vec<&mut Group> = Vec::new();
        let mut theirs: Vec<&mut Group> = Vec::new();
        let mut by_size: Vec<&mut Group> = self.groups.iter_mut().collect();
        by_size.sort_by_key(|g| std::cmp::Reverse(g.slices.len() + g.flows.len()));
        let (mut load, mut their_load) = (0, samples.len() + (calls + works) / 8);
        for g in by_size {
            let size = g.slices.len() + g.flows.len();
            if load <= their_load {
                load += size;
                mine.push(g);
            } else {
                their_load += size;
                theirs.push(g);
            }
        }
        let (helped, ordered) = std::thread::scope(|scope| {
            // on CPUs of its own: a kernel that packs threads queued it behind this one
            let helping = |_held| {
                touched.prefault(calls, works);
                let at_launch = launch_samples(samples, &roots, &offsets);
                let ordered = order_groups(&records, &mut theirs);
                (at_launch, ordered)
            };
            // as `scope.spawn` does
            let (helper, held) =
                tracex_ir::apart::spawn_scoped(scope, std::thread::Builder::new(), helping)
                    .expect("failed to spawn thread");
            let ordered = order_groups(&records, &mut mine);
            drop(held);
            (helper.join(), ordered)
        });
        let (at_launch, their_ordered) =
            helped.unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        let mut moved = ordered?;
        moved.extend(their_ordered?);
        self.record_moved(moved, diag);
        // each flow point's slice, where the records keep it
        for g in &self.groups {
            for (&n, &b) in g.flows.iter().zip(&g.bound) {
                self.flows[n as usize].bound = b;
            }
        }
        self.register(gpu, prefix, defs)?;
        gpu.at_launch = at_launch;
        Ok(())
    }

    /// The key of slice `s` in the total order, its input moved in time.
    fn slice_key(&self, s: &SliceRec) -> OrderKey {
        s.key(self.groups[s.slot as usize].off)
    }

    /// The key of flow point `f` in the total order, its input moved in time.
    fn flow_key(&self, f: &FlowRec) -> OrderKey {
        OrderKey::flow(
            f.ts.saturating_add(self.groups[f.slot as usize].off),
            f.seq.into(),
        )
    }

    /// Counts the slices the overlap router would move to overflow lanes (`moved`: per kind,
    /// per group, how many and the first), each kind first at the place in the ordered stream
    /// of its first.
    fn record_moved(&self, moved: Vec<Moved>, diag: &mut Diagnostics) {
        let mut kinds: Vec<Moved> = Vec::new();
        for m in moved {
            add_moved(&mut kinds, m);
        }
        for (kind, n, first) in kinds {
            // the router counts slices as they pass: the first one's place among all of them
            let at: usize = (self.groups.iter())
                .map(|g| {
                    g.slices
                        .partition_point(|&i| self.slice_key(&self.slices[i as usize]) < first)
                })
                .sum();
            diag.record_n(kind, n, Location::Event(at as u64), None::<String>);
        }
    }

    /// Registers the calls and GPU work with the exporter's join in the order the ordered
    /// stream registers them (a launch at its own place, another call at its first flow start,
    /// GPU work at its first flow end), their joins by the flows between them, and the samples
    /// caught at launches.
    fn register(mut self, gpu: &mut Gpu, prefix: &mut Prefix, defs: &Defs) -> Result<()> {
        // the flow points that register the slice they bind to (launches registered at
        // their own place, at record time)
        for g in &self.groups {
            for &n in &g.flows {
                let f = &mut self.flows[n as usize];
                let Some(s) = self.slices.get_mut(f.bound as usize) else {
                    continue;
                };
                let takes = match s.part {
                    Part::Api { .. } => f.start,
                    Part::Gpu(_) => !f.start,
                    Part::Other => false,
                };
                if takes && s.index == NONE {
                    s.index = TAKEN;
                    f.registers = true;
                }
            }
        }
        // each group's launches and registering points are in the order: merged across groups
        // (the least head on top: keys, then the list it heads)
        let mut cursors = vec![(0usize, 0usize); self.groups.len()];
        let mut heads = BinaryHeap::new();
        for (slot, cursor) in cursors.iter_mut().enumerate() {
            for launches in [true, false] {
                if let Some((key, i)) = self.next_registered(slot, cursor, launches) {
                    heads.push(Reverse((key, i, slot as u32, launches)));
                }
            }
        }
        while let Some(mut top) = heads.peek_mut() {
            let Reverse((_, i, slot, launches)) = *top;
            let s = self.slices[i as usize];
            let ts = s.ts.saturating_add(self.groups[slot as usize].off);
            self.slices[i as usize].index = match s.part {
                Part::Api { launch } => {
                    let root = self.gpu_root(gpu, prefix, defs, slot);
                    gpu.add_call(Call {
                        root,
                        ts,
                        dur: s.dur,
                        name: s.name,
                        stack: None,
                        launch,
                    })
                }
                Part::Gpu(kind) => {
                    gpu.works.push(Work {
                        name: s.name,
                        ts,
                        dur: s.dur,
                        kind,
                    });
                    gpu.works.len() as u32 - 1
                }
                Part::Other => unreachable!("only calls and GPU work are registered"),
            };
            // the list just taken from replaces its head in place: one sift down
            let cursor = &mut cursors[slot as usize];
            match self.next_registered(slot as usize, cursor, launches) {
                Some((key, i)) => *top = Reverse((key, i, slot, launches)),
                None => {
                    PeekMut::pop(top);
                }
            }
        }
        self.join(gpu)?;
        Ok(())
    }

    /// The next launch (`launches`) or flow point registering its slice of group `slot` after
    /// `cursor` (positions in the group's slices and flow points): its key and its slice.
    fn next_registered(
        &self,
        slot: usize,
        cursor: &mut (usize, usize),
        launches: bool,
    ) -> Option<(OrderKey, u32)> {
        let g = &self.groups[slot];
        if launches {
            while let Some(&i) = g.slices.get(cursor.0) {
                cursor.0 += 1;
                let s = &self.slices[i as usize];
                if s.part == LAUNCH {
                    return Some((s.key(g.off), i));
                }
            }
        } else {
            while let Some(&n) = g.flows.get(cursor.1) {
                cursor.1 += 1;
                let f = &self.flows[n as usize];
                if f.registers {
                    return Some((self.flow_key(f), f.bound));
                }
            }
        }
        None
    }

    /// Joins each call a flow starts on to the GPU work the flow ends on, when the start comes
    /// first in the order (the exporter forgets an end before its start). A flow with two
    /// starts or two ends needs the order.
    fn join(&mut self, gpu: &mut Gpu) -> Result<()> {
        let mut starts = Starts::new(&self.flows);
        for (n, f) in self.flows.iter().enumerate().filter(|(_, f)| f.start) {
            if starts.insert(f.id, n as u32) {
                return Err(Error::NeedsOrder("a flow starts twice"));
            }
        }
        for n in 0..self.flows.len() {
            let end = self.flows[n];
            if end.start {
                continue;
            }
            let Some(s) = starts.get(end.id) else {
                continue;
            };
            let start = &mut self.flows[s as usize];
            if std::mem::replace(&mut start.ended, true) {
                return Err(Error::NeedsOrder("a flow ends twice"));
            }
            let start = *start;
            let index = |b: u32, gpu: bool| {
                let s = self.slices.get(b as usize)?;
                matches!(
                    (s.part, gpu),
                    (Part::Api { .. }, false) | (Part::Gpu(_), true)
                )
                .then_some(s.index)
            };
            if let (Some(c), Some(w)) = (index(start.bound, false), index(end.bound, true)) {
                if self.flow_key(&start) < self.flow_key(&end) {
                    gpu.edges.push((c, w));
                }
            }
        }
        Ok(())
    }

    /// The index of group `slot`'s root in the exporter's join, registered on first use.
    fn gpu_root(&mut self, gpu: &mut Gpu, prefix: &mut Prefix, defs: &Defs, slot: u32) -> u32 {
        let g = &mut self.groups[slot as usize];
        *g.gpu_root
            .get_or_insert_with(|| gpu.root(defs, g.root, prefix(g.root)))
    }
}

/// The start of each flow by id: a table indexed by id where ids are dense (correlation ids
/// count up), a map otherwise.
enum Starts {
    Dense { min: u64, at: Vec<u32> },
    Sparse(FxHashMap<FlowId, u32>),
}

impl Starts {
    fn new(flows: &[FlowRec]) -> Starts {
        let ids = flows.iter().filter(|f| f.start).map(|f| f.id.0);
        let (min, max, n) = ids.fold((u64::MAX, 0, 0u64), |(lo, hi, n), id| {
            (lo.min(id), hi.max(id), n + 1)
        });
        if n > 0 && max - min < 4 * n + 1024 {
            Starts::Dense {
                min,
                at: vec![NONE; (max - min + 1) as usize],
            }
        } else {
            let cap = n as usize;
            Starts::Sparse(FxHashMap::with_capacity_and_hasher(cap, Default::default()))
        }
    }

    /// Records the start `n` of flow `id`; true when the flow had one.
    fn insert(&mut self, id: FlowId, n: u32) -> bool {
        match self {
            Starts::Dense { min, at } => {
                std::mem::replace(&mut at[(id.0 - *min) as usize], n) != NONE
            }
            Starts::Sparse(map) => map.insert(id, n).is_some(),
        }
    }

    fn get(&self, id: FlowId) -> Option<u32> {
        match self {
            Starts::Dense { min, at } => (id.0.checked_sub(*min))
                .and_then(|k| at.get(usize::try_from(k).ok()?))
                .copied()
                .filter(|&n| n != NONE),
            Starts::Sparse(map) => map.get(&id).copied(),
        }
    }
}

/// The records a group's ordering reads, shared by the threads that order groups.
struct Records<'a> {
    slices: &'a [SliceRec],
    flows: &'a [FlowRec],
    tracks: &'a [Option<TrackRec>],
}

/// Slices the overlap router moves to overflow lanes: the diagnostic, how many, the first.
type Moved = (&'static DiagKind, u64, OrderKey);

/// Adds `m` to the slices moved in `list`, one entry per diagnostic: the counts summed, the
/// first the earliest.
fn add_moved(list: &mut Vec<Moved>, m: Moved) {
    match list.iter_mut().find(|e| std::ptr::eq(e.0, m.0)) {
        Some(e) => {
            e.1 += m.1;
            e.2 = e.2.min(m.2);
        }
        None => list.push(m),
    }
}

/// Orders `groups`: sorts their slices and
/// flow points, gives each slice its lane and each flow point its slice.
fn order_groups(rec: &Records, groups: &mut [&mut Group]) -> Result<Vec<Moved>> {
    let mut moved = Vec::new();
    let mut routing = Routing::default();
    for g in groups.iter_mut() {
        sort_group(rec, g);
        moved.extend(route_group(rec, g, &mut routing));
        bind_group(rec, g, &routing)?;
    }
    Ok(moved)
}

/// Puts a group's slices and flow points in the order.
fn sort_group(rec: &Records, g: &mut Group) {
    if !g.slices_sorted {
        sort_nearly(&mut g.slices, |i| rec.slices[i as usize].key(g.off));
    }
    if !g.flows_sorted {
        // flow points all rank alike: by time, then arrival
        sort_nearly(&mut g.flows, |i| {
            (rec.flows[i as usize].ts, rec.flows[i as usize].seq)
        });
    }
}

/// The overlap router's work on one group, reused from group to group.
#[derive(Default)]
struct Routing {
    /// Each track's kind and lanes (a root has few tracks).
    tracks: Vec<(TrackId, TrackKind, Vec<Vec<i64>>)>,
    /// Of each of the group's slices (by place): its lane (0: its own track), and the latest
    /// end of it and the slices before it.
    levels: Vec<u32>,
    reach: Vec<i64>,
}

/// Gives each slice of group `g` the lane the overlap router would; returns the slices it
/// would move to overflow lanes.
fn route_group(rec: &Records, g: &Group, r: &mut Routing) -> Vec<Moved> {
    let mut moved: Vec<Moved> = Vec::new();
    r.tracks.clear();
    r.levels.clear();
    r.reach.clear();
    let mut reach = i64::MIN;
    for &i in &g.slices {
        let s = &rec.slices[i as usize];
        reach = reach.max(s.ts.saturating_add(s.dur));
        r.reach.push(reach);
        let l = match r.tracks.iter().position(|l| l.0 == s.track) {
            Some(l) => l,
            None => {
                let kind = rec.tracks[s.track.0 as usize].expect("recorded").kind;
                r.tracks.push((s.track, kind, Vec::new()));
                r.tracks.len() - 1
            }
        };
        let (_, kind, lanes) = &mut r.tracks[l];
        let kind = *kind;
        if !routed(kind) {
            r.levels.push(0);
            continue;
        }
        let key = s.key(g.off);
        let level = place(lanes, key.ts, key.ts.saturating_add(s.dur));
        r.levels.push(level as u32);
        if level > 0 {
            add_moved(&mut moved, (overlap_kind(kind), 1, key));
        }
    }
    moved
}

/// The slice each flow point of group `g` binds to (into `g.bound`), as the flow binder and
/// the exporter's lanes decide in order: the binder takes, of the root's slices that contain
/// the point's time (end included), the one latest in the order, and moves the point to that
/// slice's lane (`levels`); there the exporter takes, of the slices starting with that one,
/// the one it ranks first for the point, then the innermost. Points are taken in the order,
/// as a call's rank rises once a flow has started on it.
fn bind_group(rec: &Records, g: &mut Group, r: &Routing) -> Result<()> {
    let levels = &r.levels;
    g.bound.clear();
    g.bound.resize(g.flows.len(), NONE);
    if !g.strict {
        // the binder leaves such points where they are, and the exporter's lanes could
        // still hold slices of their tracks
        if g.flows.iter().any(|&n| rec.flows[n as usize].strict) {
            return Err(Error::NeedsOrder(
                "a flow point on a lane of a non-thread track",
            ));
        }
        return Ok(());
    }
    // calls that are not launches on which a flow has started (by place): the exporter
    // ranks them as launches from then on
    let mut called = vec![false; g.slices.len()];
    // slices of a time come before the flow points of that time
    let mut next = 0;
    for (p, &n) in g.flows.iter().enumerate() {
        let f = &rec.flows[n as usize];
        while next < g.slices.len() && rec.slices[g.slices[next] as usize].ts <= f.ts {
            next += 1;
        }
        let Some(k) = containing(rec, &g.slices, &r.reach, next, f.ts)? else {
            continue;
        };
        let s = &rec.slices[g.slices[k] as usize];
        if !s.strict {
            continue;
        }
        let rank = |at: usize| -> u8 {
            let o = &rec.slices[g.slices[at] as usize];
            match (f.start, o.part) {
                (true, Part::Api { launch }) => 1 + u8::from(launch || called[at]),
                (false, Part::Gpu(_)) => {
                    1 + u8::from(o.correlation == f.id.0 && o.correlation != NO_ID)
                }
                _ => 0,
            }
        };
        // the slices before it on its lane that start with it nest around it, open; from
        // the inside out, the first of the highest rank
        let mut best: Option<(u8, usize)> = None;
        for j in (0..k).rev() {
            let o = &rec.slices[g.slices[j] as usize];
            if o.ts != s.ts {
                break;
            }
            if o.track != s.track || levels[j] != levels[k] {
                continue;
            }
            if o.dur == 0 || s.dur == 0 {
                return Err(Error::NeedsOrder("slices of no length start together"));
            }
            let b = best.get_or_insert_with(|| (rank(k), k));
            if rank(j) > b.0 {
                *b = (rank(j), j);
            }
        }
        let at = best.map_or(k, |b| b.1);
        let b = g.slices[at];
        if f.start && rec.slices[b as usize].part == (Part::Api { launch: false }) {
            called[at] = true;
        }
        g.bound[p] = b;
    }
    Ok(())
}

/// The samples caught at launches in the order (by time, then arrival), as the join takes
/// them; made in place of their records.
fn launch_samples(mut samples: Vec<SampleRec>, roots: &[u32], offsets: &[i64]) -> Vec<AtLaunch> {
    let shifted = |s: &SampleRec| s.ts.saturating_add(offsets[s.slot as usize]);
    // in the order already, for most inputs
    if !samples.is_sorted_by_key(|s| (shifted(s), s.seq)) {
        samples.sort_by_key(|s| (shifted(s), s.seq));
    }
    samples
        .into_iter()
        .map(|s| AtLaunch {
            root: roots[s.slot as usize],
            clean: s.clean,
            ts: shifted(&s),
            weight: s.weight,
        })
        .collect()
}

/// Sorts the indices `v` by `key`, for lists nearly in order (an input's records per root
/// mostly are): by insertion, linear when few records are out of place, while the moves stay
/// few; by the stable sort otherwise.
fn sort_nearly<K: Ord>(v: &mut [u32], key: impl Fn(u32) -> K) {
    let limit = 4 * v.len() + 64;
    let mut moves = 0;
    for i in 1..v.len() {
        let x = v[i];
        let kx = key(x);
        let mut j = i;
        while j > 0 && key(v[j - 1]) > kx {
            v[j] = v[j - 1];
            j -= 1;
        }
        v[j] = x;
        moves += i - j;
        if moves > limit {
            v.sort_by_key(|&i| key(i));
            return;
        }
    }
}

/// Of a group's slices (`order`, with the latest end so far in `reach`), the place of the last
/// that contains `ts` (its end included), found by going back from `from`, the first that
/// starts after it.
fn containing(
    rec: &Records,
    order: &[u32],
    reach: &[i64],
    from: usize,
    ts: i64,
) -> Result<Option<usize>> {
    let mut k = from;
    for _ in 0..64 {
        // the latest end so far: none further back contains the time
        if k == 0 || reach[k - 1] < ts {
            return Ok(None);
        }
        k -= 1;
        let s = &rec.slices[order[k] as usize];
        if s.ts.saturating_add(s.dur) >= ts {
            return Ok(Some(k));
        }
    }
    Err(Error::NeedsOrder("a flow point far inside a long slice"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rng(seed: &mut u64) -> u64 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    }

    #[test]
    fn records_stay_small() {
        // a million launches keep two million slices and flow points
        assert_eq!(size_of::<SliceRec>(), 48);
        assert_eq!(size_of::<FlowRec>(), 32);
    }

    #[test]
    fn nearly_sorted_lists_sort_as_the_stable_sort_does() {
        let mut seed = 0x2545_f491_4f6c_dd1d;
        for (len, swaps) in [(0, 0), (1, 0), (50, 3), (1000, 20), (1000, 5000), (3000, 0)] {
            // keys with ties, mostly in order, some moved far
            let keys: Vec<u64> = (0..len).map(|i| i / 3).collect();
            let mut v: Vec<u32> = (0..len as u32).collect();
            for _ in 0..swaps {
                let a = (rng(&mut seed) % len) as usize;
                let b = (rng(&mut seed) % len) as usize;
                v.swap(a, b);
            }
            let mut expected = v.clone();
            expected.sort_by_key(|&i| keys[i as usize]);
            sort_nearly(&mut v, |i| keys[i as usize]);
            assert_eq!(v, expected, "{len} records, {swaps} swaps");
        }
    }

    #[test]
    fn flow_starts_are_found_by_id_dense_or_not() {
        let flow = |id: u64, start: bool| FlowRec {
            id: FlowId(id),
            slot: 0,
            ts: 0,
            seq: 0,
            bound: NONE,
            start,
            ended: false,
            strict: true,
            registers: false,
        };
        for ids in [vec![5, 6, 7, 9], vec![3, 1 << 40, u64::MAX]] {
            let flows: Vec<FlowRec> = ids.iter().map(|&id| flow(id, true)).collect();
            let mut starts = Starts::new(&flows);
            assert_eq!(
                matches!(starts, Starts::Dense { .. }),
                ids[0] == 5,
                "{ids:?}"
            );
            for (n, &id) in ids.iter().enumerate() {
                assert!(!starts.insert(FlowId(id), n as u32));
            }
            assert!(starts.insert(FlowId(ids[1]), 9), "a second start");
            assert_eq!(starts.get(FlowId(ids[0])), Some(0));
            assert_eq!(starts.get(FlowId(ids[1])), Some(9));
            assert_eq!(starts.get(FlowId(8)), None);
            assert_eq!(starts.get(FlowId(2)), None);
        }
    }
}
