//! Track descriptors → IR processes, threads, tracks and counters, made on first use.
//!
//! Descriptors are gathered in a first pass over the whole trace (writers may describe a track
//! after its first event, and re-send descriptors); for one uuid, later fields win. Then:
//!
//! * a process track → a process (by pid); events on it → the process's process-scoped track;
//! * a thread track → a thread (by pid and tid) and its thread track;
//! * a counter track → a counter of the nearest process above it (a thread-time counter
//!   gives slice thread times instead);
//! * any other track → an async track of the nearest process above it, named after its path
//!   below that process (`Parent / Child`); tracks under no process are grouped by their root
//!   track, which becomes a process without pid when it has children.
//!
//! Tracks written by tracex carry tracex's extension, which restores what they were exactly.

use rustc_hash::{FxHashMap, FxHashSet};
use tracex_ir::nest::OverflowTracks;
use tracex_ir::{
    Args, CounterDef, CounterId, Defs, NamePriority, Process, ProcessId, ProcessKind, ThreadId,
    Track, TrackId, TrackKind, Value,
};

use crate::pb::counter_descriptor::{BuiltinCounterType, Unit};
use crate::pb::tracex::{track::Kind, Track as XTrack};
use crate::pb::track_descriptor::StaticOrDynamicName;
use crate::pb::TrackDescriptor;

use super::args::typed_args;

/// What a uuid maps to.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Target {
    Track(TrackId),
    Counter(CounterId),
    ThreadTime(ThreadId),
}

/// How a counter's values are read.
#[derive(Clone, Copy, Debug, Default)]
pub struct CounterReading {
    pub incremental: bool,
    pub multiplier: i64,
}

/// Links (parent, overflow) followed at most in one resolution, and parents walked at most to
/// find a track's process: real traces nest tracks a few levels deep.
const MAX_LINKS: usize = 64;

#[derive(Default)]
pub struct TrackMap {
    descs: FxHashMap<u64, (TrackDescriptor, Option<XTrack>)>,
    parents: FxHashSet<u64>,
    resolved: FxHashMap<u64, Target>,
    /// Descriptors being resolved (a thread's descriptor asks for its process's, never back).
    resolving: FxHashSet<u64>,
    processes: FxHashMap<i64, ProcessId>,
    /// pid → the uuid of a process descriptor with that pid; (pid, tid) → of a thread's.
    pid_descs: FxHashMap<i64, u64>,
    tid_descs: FxHashMap<(i64, i64), u64>,
    groups: FxHashMap<u64, ProcessId>,
    threads: FxHashMap<(i64, i64), ThreadId>,
    process_tracks: FxHashMap<ProcessId, TrackId>,
    pub readings: FxHashMap<u64, CounterReading>,
    /// uuids events referred to without a descriptor anywhere in the trace.
    pub unknown: u64,
    /// Parent and overflow links ignored: they closed a cycle or chained too deep.
    pub broken_links: u64,
    /// Overflow lanes, one track per (track, level) whoever defines it first.
    overflow: OverflowTracks,
}

fn desc_name(d: &TrackDescriptor) -> Option<&str> {
    match &d.static_or_dynamic_name {
        Some(StaticOrDynamicName::Name(n))
        | Some(StaticOrDynamicName::StaticName(n))
        | Some(StaticOrDynamicName::AtraceName(n)) => Some(n),
        None => None,
    }
}

/// Fields of `new` that are set replace those of `old` (a descriptor sent again).
fn merge(old: &mut TrackDescriptor, new: TrackDescriptor) {
    macro_rules! take {
        ($($f:ident),*) => { $( if new.$f.is_some() { old.$f = new.$f; } )* };
    }
    take!(
        parent_uuid,
        static_or_dynamic_name,
        description,
        process,
        thread,
        counter,
        child_ordering,
        sibling_order_rank,
        sibling_merge_behavior
    );
}

impl TrackMap {
    /// First pass: a descriptor (and tracex's record beside it).
    pub fn describe(&mut self, d: TrackDescriptor, x: Option<XTrack>) {
        let uuid = d.uuid.unwrap_or(0);
        if let Some(p) = d.parent_uuid {
            self.parents.insert(p);
        }
        if let Some(pid) = d.process.as_ref().and_then(|p| p.pid) {
            self.pid_descs.entry(pid as i64).or_insert(uuid);
        }
        if let Some(t) = &d.thread {
            let key = (t.pid.unwrap_or(0) as i64, t.tid.unwrap_or(0));
            self.tid_descs.entry(key).or_insert(uuid);
        }
        match self.descs.get_mut(&uuid) {
            Some((old, old_x)) => {
                merge(old, d);
                if x.is_some() {
                    *old_x = x;
                }
            }
            None => {
                self.descs.insert(uuid, (d, x));
            }
        }
    }

    /// Makes the processes and threads that descriptors describe but no event referred to
    /// (their names and metadata are part of the trace), in uuid order.
    pub fn define_rest(&mut self, defs: &mut Defs) {
        let mut rest: Vec<u64> = self
            .descs
            .iter()
            .filter(|(u, (d, x))| {
                !self.resolved.contains_key(u)
                    && (d.process.is_some()
                        || d.thread.is_some()
                        || x.as_ref().is_some_and(|x| {
                            matches!(
                                x.kind.and_then(|k| Kind::try_from(k).ok()),
                                Some(Kind::Process | Kind::Device | Kind::Thread)
                            )
                        }))
            })
            .map(|(u, _)| *u)
            .collect();
        rest.sort_unstable();
        for u in rest {
            self.resolve(defs, u);
        }
    }

    /// The IR object of `uuid`.
    pub fn resolve(&mut self, defs: &mut Defs, uuid: u64) -> Target {
        if let Some(&t) = self.resolved.get(&uuid) {
            return t;
        }
        self.resolving.insert(uuid);
        let t = match self.descs.get(&uuid).cloned() {
            Some((d, Some(x))) => self.resolve_tracex(defs, uuid, &d, &x),
            Some((d, None)) => self.resolve_native(defs, uuid, &d),
            None => {
                self.unknown += 1;
                let name = defs.intern(&format!("track {uuid}"));
                Target::Track(defs.add_track(Track {
                    kind: TrackKind::Async,
                    process: None,
                    name: Some(name),
                    label: None,
                    sort_index: None,
                }))
            }
        };
        self.resolving.remove(&uuid);
        self.resolved.insert(uuid, t);
        t
    }

    /// The object of `uuid`, which the descriptor being resolved links to (its parent, or the
    /// track it is an overflow lane of); `None`, the link taken as absent, where it closes a
    /// cycle or chains deeper than [`MAX_LINKS`], as a damaged trace may have them: resolving
    /// it would recurse without end (a fuzzed trace overflowed the stack).
    fn linked(&mut self, defs: &mut Defs, uuid: u64) -> Option<Target> {
        if self.resolving.contains(&uuid) || self.resolving.len() >= MAX_LINKS {
            self.broken_links += 1;
            return None;
        }
        Some(self.resolve(defs, uuid))
    }

    /// The track of `uuid` for slices and instants (a counter track used for them gets an async
    /// track of the same name).
    pub fn track(&mut self, defs: &mut Defs, uuid: u64) -> TrackId {
        match self.resolve(defs, uuid) {
            Target::Track(t) => t,
            Target::Counter(c) => {
                let (process, name) = (defs.counter(c).process, defs.counter(c).name);
                defs.add_track(Track {
                    kind: TrackKind::Async,
                    process,
                    name: Some(name),
                    label: None,
                    sort_index: None,
                })
            }
            Target::ThreadTime(th) => defs.thread(th).track,
        }
    }

    /// The process-scoped track of a process (events on a process track).
    pub fn process_track(&mut self, defs: &mut Defs, p: ProcessId) -> TrackId {
        *self.process_tracks.entry(p).or_insert_with(|| {
            defs.add_track(Track {
                kind: TrackKind::Process,
                process: Some(p),
                name: None,
                label: None,
                sort_index: None,
            })
        })
    }

    /// The process with `pid`: the one its descriptor describes, else a new one.
    pub fn process_by_pid(&mut self, defs: &mut Defs, pid: i64) -> ProcessId {
        if let Some(&p) = self.processes.get(&pid) {
            return p;
        }
        if let Some(&u) = self.pid_descs.get(&pid) {
            if !self.resolved.contains_key(&u) && !self.resolving.contains(&u) {
                self.resolve(defs, u);
                if let Some(&p) = self.processes.get(&pid) {
                    return p;
                }
            }
        }
        self.new_process(defs, pid)
    }

    fn new_process(&mut self, defs: &mut Defs, pid: i64) -> ProcessId {
        *self.processes.entry(pid).or_insert_with(|| {
            defs.add_process(Process {
                os_pid: Some(pid),
                ..Default::default()
            })
        })
    }

    /// The thread (pid, tid): the one its descriptor describes, else a new one.
    pub fn thread_by_tid(&mut self, defs: &mut Defs, pid: i64, tid: i64) -> ThreadId {
        if let Some(&t) = self.threads.get(&(pid, tid)) {
            return t;
        }
        if let Some(&u) = self.tid_descs.get(&(pid, tid)) {
            if !self.resolved.contains_key(&u) && !self.resolving.contains(&u) {
                if let Target::Track(t) = self.resolve(defs, u) {
                    if let Some(th) = defs.track_thread(t) {
                        return th;
                    }
                }
            }
        }
        let p = self.process_by_pid(defs, pid);
        let t = defs.add_thread(p, Some(tid), None);
        self.threads.insert((pid, tid), t);
        t
    }

    /// The process a track belongs to: its own, its thread's, or the nearest above it.
    fn process_above(&mut self, defs: &mut Defs, uuid: u64, depth: usize) -> Option<ProcessId> {
        if depth > MAX_LINKS {
            return None;
        }
        let (d, x) = self.descs.get(&uuid).cloned()?;
        if x.is_some() || d.process.is_some() || d.thread.is_some() {
            return match self.linked(defs, uuid)? {
                Target::Track(t) => defs.track(t).process,
                Target::Counter(c) => defs.counter(c).process,
                Target::ThreadTime(th) => Some(defs.thread(th).process),
            };
        }
        match d.parent_uuid {
            Some(p) if self.descs.contains_key(&p) => self.process_above(defs, p, depth + 1),
            // a root track with children groups them: a process without pid
            _ if self.parents.contains(&uuid) => Some(self.group(defs, uuid, &d)),
            _ => None,
        }
    }

    fn group(&mut self, defs: &mut Defs, uuid: u64, d: &TrackDescriptor) -> ProcessId {
        if let Some(&p) = self.groups.get(&uuid) {
            return p;
        }
        let name = desc_name(d).map(|n| defs.intern(n));
        let p = defs.add_process(Process {
            name,
            name_priority: NamePriority::Explicit,
            ..Default::default()
        });
        self.groups.insert(uuid, p);
        p
    }

    /// The name of a custom track: its own, prefixed by those of the custom tracks between it
    /// and its process.
    fn path_name(&self, uuid: u64) -> Option<String> {
        let mut parts = Vec::new();
        let mut cur = Some(uuid);
        while let Some(u) = cur {
            let Some((d, x)) = self.descs.get(&u) else {
                break;
            };
            if x.is_some() || d.process.is_some() || d.thread.is_some() {
                break;
            }
            if u != uuid && d.parent_uuid.is_none() && self.parents.contains(&u) {
                break; // the root group, shown as the process
            }
            parts.push(desc_name(d).unwrap_or("?").to_string());
            cur = d.parent_uuid;
            if parts.len() > 64 {
                break;
            }
        }
        parts.reverse();
        (!parts.is_empty() && desc_name(&self.descs[&uuid].0).is_some()).then(|| parts.join(" / "))
    }

    fn resolve_native(&mut self, defs: &mut Defs, uuid: u64, d: &TrackDescriptor) -> Target {
        if let Some(th) = &d.thread {
            let pid = th.pid.unwrap_or(0) as i64;
            let t = self.thread_by_tid(defs, pid, th.tid.unwrap_or(0));
            if let Some(n) = th.thread_name.as_deref().or(desc_name(d)) {
                let n = defs.intern(n);
                defs.set_thread_name(t, n, NamePriority::Explicit);
            }
            return Target::Track(defs.thread(t).track);
        }
        if let Some(pd) = &d.process {
            let p = self.new_process(defs, pd.pid.unwrap_or(0) as i64);
            if let Some(n) = pd.process_name.as_deref().or(desc_name(d)) {
                let n = defs.intern(n);
                defs.set_process_name(p, n, NamePriority::Explicit);
            }
            if !pd.cmdline.is_empty() {
                let key = defs.intern("cmdline");
                tracex_ir::defs::set_arg(
                    &mut defs.process_mut(p).meta,
                    key,
                    Value::str(pd.cmdline.join(" ")),
                );
            }
            if !pd.process_labels.is_empty() {
                let key = defs.intern("process_labels");
                tracex_ir::defs::set_arg(
                    &mut defs.process_mut(p).meta,
                    key,
                    Value::str(pd.process_labels.join(",")),
                );
            }
            return Target::Track(self.process_track(defs, p));
        }
        let process = match d.parent_uuid {
            Some(parent) => self.process_above(defs, parent, 0),
            None => None,
        };
        if let Some(c) = &d.counter {
            if c.r#type == Some(BuiltinCounterType::CounterThreadTimeNs as i32) {
                if let Some(Target::Track(t)) = d.parent_uuid.and_then(|p| self.linked(defs, p)) {
                    if let Some(th) = defs.track_thread(t) {
                        self.readings.insert(uuid, reading(c));
                        return Target::ThreadTime(th);
                    }
                }
            }
            let name = defs.intern(&self.path_name(uuid).unwrap_or_else(|| match c.r#type {
                Some(1) => "thread_time".into(),
                Some(2) => "thread_instruction_count".into(),
                _ => format!("counter {uuid}"),
            }));
            let unit =
                c.unit_name
                    .clone()
                    .or_else(|| match c.unit.and_then(|u| Unit::try_from(u).ok()) {
                        Some(Unit::TimeNs) => Some("ns".into()),
                        Some(Unit::Count) => Some("count".into()),
                        Some(Unit::SizeBytes) => Some("bytes".into()),
                        _ => None,
                    });
            let def = CounterDef {
                process,
                name,
                series: None,
                label: None,
                unit: unit.map(|u| defs.intern(&u)),
                cat: (!c.categories.is_empty()).then(|| defs.intern(&c.categories.join(","))),
            };
            self.readings.insert(uuid, reading(c));
            return Target::Counter(defs.add_counter(def));
        }
        if d.parent_uuid.is_none() && self.parents.contains(&uuid) {
            // a root group: its own events are process-scoped
            let p = self.group(defs, uuid, d);
            return Target::Track(self.process_track(defs, p));
        }
        // the uuid tells apart tracks of the same name (Chrome's async tracks have none)
        let name = self.path_name(uuid).map(|n| defs.intern(&n));
        let label = defs.intern(&uuid.to_string());
        Target::Track(defs.add_track(Track {
            kind: TrackKind::Async,
            process,
            name,
            label: Some(label),
            sort_index: None,
        }))
    }

    /// A track tracex wrote: its extension says what it was.
    fn resolve_tracex(
        &mut self,
        defs: &mut Defs,
        uuid: u64,
        d: &TrackDescriptor,
        x: &XTrack,
    ) -> Target {
        let kind = x
            .kind
            .and_then(|k| Kind::try_from(k).ok())
            .unwrap_or(Kind::Unspecified);
        let label = x.label.as_deref().map(|l| defs.intern(l));
        let named = |defs: &mut Defs, n: Option<&str>| -> Option<tracex_ir::StrId> {
            if x.unnamed == Some(true) {
                None
            } else {
                n.map(|n| defs.intern(n))
            }
        };
        let os_id = |written: Option<i64>| -> Option<i64> {
            match (x.no_os_id, x.os_id) {
                (Some(true), _) => None,
                (_, Some(id)) => Some(id),
                _ => written,
            }
        };
        let parent_process = |this: &mut Self, defs: &mut Defs| -> Option<ProcessId> {
            match d.parent_uuid {
                Some(p) => match this.linked(defs, p)? {
                    Target::Track(t) => defs.track(t).process,
                    Target::Counter(c) => defs.counter(c).process,
                    Target::ThreadTime(th) => Some(defs.thread(th).process),
                },
                None => None,
            }
        };
        let meta: Args = typed_args(defs, &x.meta);
        let track = |defs: &mut Defs, kind, process, name| {
            Target::Track(defs.add_track(Track {
                kind,
                process,
                name,
                label,
                sort_index: x.sort_index,
            }))
        };
        match kind {
            Kind::Process | Kind::Device | Kind::Unspecified
                if d.thread.is_none() && d.counter.is_none() =>
            {
                let pd = d.process.clone().unwrap_or_default();
                let device = (kind == Kind::Device).then(|| x.device.unwrap_or(0));
                let written = pd.pid.map(|p| p as i64);
                let name = named(defs, pd.process_name.as_deref().or(desc_name(d)));
                let host = x.host.as_deref().map(|h| defs.intern(h));
                let p = defs.add_process(Process {
                    kind: match device {
                        Some(device) => ProcessKind::Device { device },
                        None => ProcessKind::Host,
                    },
                    os_pid: if device.is_some() {
                        os_id(None)
                    } else {
                        os_id(written)
                    },
                    label,
                    name,
                    name_priority: if name.is_some() {
                        NamePriority::Explicit
                    } else {
                        NamePriority::None
                    },
                    sort_index: x.sort_index,
                    host,
                    meta,
                });
                if let Some(pid) = written {
                    self.processes.insert(pid, p);
                }
                self.groups.insert(uuid, p);
                Target::Track(self.process_track(defs, p))
            }
            Kind::Thread | Kind::Unspecified if d.counter.is_none() => {
                let (p, written, name) = match &d.thread {
                    Some(td) => {
                        let p = self.process_by_pid(defs, td.pid.unwrap_or(0) as i64);
                        (p, td.tid, td.thread_name.as_deref().or(desc_name(d)))
                    }
                    None => {
                        let p = parent_process(self, defs)
                            .unwrap_or_else(|| defs.add_process(Process::default()));
                        (p, None, desc_name(d))
                    }
                };
                let name = named(defs, name);
                let t = defs.add_thread(p, os_id(written), label);
                let th = defs.thread_mut(t);
                th.name = name;
                th.name_priority = if name.is_some() {
                    NamePriority::Explicit
                } else {
                    NamePriority::None
                };
                th.sort_index = x.sort_index;
                th.meta = meta;
                if let (Some(td), Some(tid)) = (&d.thread, written) {
                    self.threads.insert((td.pid.unwrap_or(0) as i64, tid), t);
                }
                Target::Track(defs.thread(t).track)
            }
            Kind::GpuStream => {
                let process = parent_process(self, defs);
                let name = named(defs, desc_name(d));
                track(
                    defs,
                    TrackKind::GpuStream {
                        device: x.device.unwrap_or(0),
                        stream: x.stream.unwrap_or(0),
                    },
                    process,
                    name,
                )
            }
            Kind::Async => {
                let process = parent_process(self, defs);
                let name = named(defs, desc_name(d));
                track(defs, TrackKind::Async, process, name)
            }
            Kind::ProcessInstants => {
                let process = parent_process(self, defs);
                let name = named(defs, desc_name(d));
                track(defs, TrackKind::Process, process, name)
            }
            Kind::Global => {
                let t = defs.global_track();
                let name = named(defs, desc_name(d));
                let tr = defs.track_mut(t);
                tr.name = name;
                tr.label = label;
                tr.sort_index = x.sort_index;
                Target::Track(t)
            }
            Kind::Overflow => {
                let of = match x.overflow_of.and_then(|o| self.linked(defs, o)) {
                    Some(Target::Track(t)) => t,
                    _ => return self.resolve_native(defs, uuid, d),
                };
                Target::Track(self.overflow.get(defs, of, x.overflow_level.unwrap_or(1)))
            }
            Kind::Counter => {
                let process = if x.global == Some(true) {
                    None
                } else {
                    parent_process(self, defs)
                };
                let c = d.counter.clone().unwrap_or_default();
                self.readings.insert(uuid, reading(&c));
                let def = CounterDef {
                    process,
                    name: defs.intern(x.counter_name.as_deref().or(desc_name(d)).unwrap_or("")),
                    series: x.series.as_deref().map(|s| defs.intern(s)),
                    label,
                    unit: x.unit.as_deref().map(|u| defs.intern(u)),
                    cat: x.category.as_deref().map(|c| defs.intern(c)),
                };
                Target::Counter(defs.add_counter(def))
            }
            Kind::ThreadTime => match d.parent_uuid.and_then(|p| self.linked(defs, p)) {
                Some(Target::Track(t)) if defs.track_thread(t).is_some() => {
                    let c = d.counter.clone().unwrap_or_default();
                    self.readings.insert(uuid, reading(&c));
                    Target::ThreadTime(defs.track_thread(t).expect("checked"))
                }
                _ => self.resolve_native(defs, uuid, d),
            },
            _ => self.resolve_native(defs, uuid, d),
        }
    }
}

fn reading(c: &crate::pb::CounterDescriptor) -> CounterReading {
    CounterReading {
        incremental: c.is_incremental.unwrap_or(false),
        multiplier: c.unit_multiplier.filter(|&m| m != 0).unwrap_or(1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn desc(uuid: u64, parent: Option<u64>) -> TrackDescriptor {
        TrackDescriptor {
            uuid: Some(uuid),
            parent_uuid: parent,
            ..Default::default()
        }
    }

    /// Parent links of a damaged trace (found by fuzzing: a cycle overflowed the stack) are
    /// cut where they close a cycle or chain too deep, and counted; the tracks are still made.
    #[test]
    fn parent_cycles_and_deep_chains_are_cut_and_counted() {
        for x in [
            Some(XTrack {
                kind: Some(Kind::Async as i32),
                ..Default::default()
            }),
            Some(XTrack {
                kind: Some(Kind::Counter as i32),
                ..Default::default()
            }),
            None,
        ] {
            let mut defs = Defs::new();
            let mut m = TrackMap::default();
            // a cycle, 1 → 2 → 1, and a chain 100 → 101 → … 100,000 links long
            m.describe(desc(1, Some(2)), x.clone());
            m.describe(desc(2, Some(1)), x.clone());
            for u in 100..100_100 {
                m.describe(desc(u, Some(u + 1)), x.clone());
            }
            m.resolve(&mut defs, 1);
            m.resolve(&mut defs, 100);
            if x.is_some() {
                // tracex's tracks resolve their parents first
                assert!(m.resolved.contains_key(&2), "{x:?}");
                assert!(m.resolved.contains_key(&150), "{x:?}");
                assert_eq!(m.broken_links, 2, "{x:?}");
            }
            // every descriptor is made in the end, none twice
            m.define_rest(&mut defs);
            assert!(m.resolving.is_empty());
        }
    }
}
