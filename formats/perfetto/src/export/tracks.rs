//! Track descriptors: every process, thread, track and counter of the IR gets a uuid and a
//! `TrackDescriptor` the first time an event refers to it, laid out as a Perfetto user expects:
//!
//! * a process: a process track (`ProcessDescriptor` with its pid and name); a thread: a thread
//!   track (`ThreadDescriptor`); their sort indexes as sibling ranks;
//! * a GPU (a device process): a named root track group, its streams child tracks in stream
//!   order, each stream's overflow lanes right after it;
//! * async tracks (NVTX domains, Chrome async ids): named tracks in their process (Perfetto merges
//!   same-named ones, and an async track's overflow lanes share its name, so they show as one);
//! * overflow lanes of a thread: sibling tracks named after the thread;
//! * counters: counter tracks with their unit and category, in their process or GPU.
//!
//! What Perfetto has no field for goes into tracex's extension beside the descriptor. Names may
//! change until the end of the trace: [`Tracks::finish`] writes again every descriptor whose
//! content changed (tracex and, for tracks that are never merged, Perfetto take the last one).

use rustc_hash::{FxHashMap, FxHashSet};
use tracex_ir::trackmap::TrackMap;
use tracex_ir::{CounterId, Defs, ProcessId, ProcessKind, ThreadId, TrackId, TrackKind};

use super::args::typed;
use super::queue::Queue;
use crate::pb::counter_descriptor::{BuiltinCounterType, Unit};
use crate::pb::tracex::{track::Kind, Extra, Track as XTrack};
use crate::pb::track_descriptor::{
    ChildTracksOrdering, ProcessOrdering, SiblingMergeBehavior, StaticOrDynamicName, ThreadOrdering,
};
use crate::pb::{trace_packet::Data, CounterDescriptor, ProcessDescriptor, ThreadDescriptor};
use crate::pb::{TracePacket, TrackDescriptor};

/// First made-up pid or tid: far above real ids, and within Perfetto's 32-bit pids.
const SYNTHETIC_BASE: i64 = 1_000_000_000;

/// What a uuid stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum What {
    Process(ProcessId),
    Track(TrackId),
    Counter(CounterId),
    ThreadTime(ThreadId),
}

#[derive(Default)]
pub struct Tracks {
    next_uuid: u64,
    uuids: FxHashMap<What, u64>,
    /// The uuids of `What::Track`s (also in `uuids`) by index: found on every event, where
    /// hashing them was a twentieth of the writer's instructions.
    track_uuids: TrackMap<u64>,
    /// Written descriptors in order, with what they were, to write changed ones again.
    written: Vec<(What, TrackDescriptor, Option<XTrack>)>,
    pids: FxHashMap<ProcessId, i32>,
    used_pids: FxHashSet<i64>,
    tids: FxHashMap<ThreadId, i64>,
    used_tids: FxHashSet<i64>,
    next_synthetic: i64,
    sorted_processes: bool,
    sorted_threads: bool,
}

fn name(s: &str) -> Option<StaticOrDynamicName> {
    Some(StaticOrDynamicName::Name(s.to_owned()))
}

fn rank(v: i64) -> i32 {
    v.clamp(i32::MIN as i64, i32::MAX as i64) as i32
}

/// Rank of a GPU stream track (or of its overflow lane `level`) among its GPU's tracks.
fn stream_rank(stream: u32, level: u32) -> i32 {
    rank(stream.min(2_000_000) as i64 * 1000 + level.min(999) as i64)
}

impl Tracks {
    fn synthetic(&mut self, used: impl Fn(&Self, i64) -> bool) -> i64 {
        if self.next_synthetic == 0 {
            self.next_synthetic = SYNTHETIC_BASE;
        }
        while used(self, self.next_synthetic) {
            self.next_synthetic += 1;
        }
        self.next_synthetic += 1;
        self.next_synthetic - 1
    }

    /// The pid written for a process: its own when it is a usable, unused 32-bit pid.
    pub fn pid(&mut self, defs: &Defs, p: ProcessId) -> i32 {
        if let Some(&x) = self.pids.get(&p) {
            return x;
        }
        let pid = match defs.process(p).os_pid {
            Some(x) if (1..=i32::MAX as i64).contains(&x) && !self.used_pids.contains(&x) => x,
            _ => self.synthetic(|s, v| s.used_pids.contains(&v)),
        };
        self.used_pids.insert(pid);
        self.pids.insert(p, pid as i32);
        pid as i32
    }

    /// The tid written for a thread: its own when usable and unused in the whole trace (trace
    /// processor tells threads apart by tid alone).
    pub fn tid(&mut self, defs: &Defs, t: ThreadId) -> i64 {
        if let Some(&x) = self.tids.get(&t) {
            return x;
        }
        let tid = match defs.thread(t).os_tid {
            Some(x) if (1..=i32::MAX as i64).contains(&x) && !self.used_tids.contains(&x) => x,
            _ => self.synthetic(|s, v| s.used_tids.contains(&v)),
        };
        self.used_tids.insert(tid);
        self.tids.insert(t, tid);
        tid
    }

    fn uuid(&mut self, defs: &Defs, q: &mut Queue, what: What) -> u64 {
        let track = match what {
            What::Track(t) => Some(t),
            _ => None,
        };
        if let Some(&u) = track.and_then(|t| self.track_uuids.get(t)) {
            return u;
        }
        if let Some(&u) = self.uuids.get(&what) {
            return u;
        }
        // parents first: a descriptor refers to its parent's uuid
        let (desc, extra) = self.describe(defs, q, what);
        self.next_uuid += 1;
        let uuid = self.next_uuid;
        self.uuids.insert(what, uuid);
        if let Some(t) = track {
            self.track_uuids.insert(t, uuid);
        }
        let desc = TrackDescriptor {
            uuid: Some(uuid),
            ..desc
        };
        q.push(None, packet(&desc, &extra));
        self.written.push((what, desc, extra));
        uuid
    }

    pub fn process(&mut self, defs: &Defs, q: &mut Queue, p: ProcessId) -> u64 {
        self.uuid(defs, q, What::Process(p))
    }

    pub fn track(&mut self, defs: &Defs, q: &mut Queue, t: TrackId) -> u64 {
        match defs.track(t).kind {
            // a process's instants go on the process track itself, unless the track has a name
            // or identity of its own
            TrackKind::Process if plain(defs, t) => match defs.track(t).process {
                Some(p) => self.process(defs, q, p),
                None => self.uuid(defs, q, What::Track(t)),
            },
            _ => self.uuid(defs, q, What::Track(t)),
        }
    }

    pub fn counter(&mut self, defs: &Defs, q: &mut Queue, c: CounterId) -> u64 {
        self.uuid(defs, q, What::Counter(c))
    }

    /// The thread-time counter track of a thread (slice thread times).
    pub fn thread_time(&mut self, defs: &Defs, q: &mut Queue, t: ThreadId) -> u64 {
        self.uuid(defs, q, What::ThreadTime(t))
    }

    /// The (pid, tid) a stack sample on `track` is attributed to: the thread the track belongs
    /// to, when it is a thread of a process written as one.
    pub fn sample_task(
        &mut self,
        defs: &Defs,
        q: &mut Queue,
        track: TrackId,
    ) -> Option<(u32, u32)> {
        let th = defs.track_thread(track)?;
        let p = defs.thread(th).process;
        if !matches!(defs.process(p).kind, ProcessKind::Host) {
            return None;
        }
        self.track(defs, q, defs.thread(th).track);
        Some((self.pid(defs, p) as u32, self.tid(defs, th) as u32))
    }

    /// The uuid of a process's group: its process track, or a GPU's root track.
    fn parent_of(&mut self, defs: &Defs, q: &mut Queue, p: Option<ProcessId>) -> Option<u64> {
        p.map(|p| self.process(defs, q, p))
    }

    /// The descriptor (without uuid) and the tracex extension of `what`.
    fn describe(
        &mut self,
        defs: &Defs,
        q: &mut Queue,
        what: What,
    ) -> (TrackDescriptor, Option<XTrack>) {
        match what {
            What::Process(p) => self.describe_process(defs, p),
            What::Track(t) => self.describe_track(defs, q, t),
            What::Counter(c) => self.describe_counter(defs, q, c),
            What::ThreadTime(th) => {
                let parent = self.track(defs, q, defs.thread(th).track);
                let desc = TrackDescriptor {
                    parent_uuid: Some(parent),
                    counter: Some(CounterDescriptor {
                        r#type: Some(BuiltinCounterType::CounterThreadTimeNs as i32),
                        unit: Some(Unit::TimeNs as i32),
                        ..Default::default()
                    }),
                    ..Default::default()
                };
                let extra = XTrack {
                    kind: Some(Kind::ThreadTime as i32),
                    ..Default::default()
                };
                (desc, Some(extra))
            }
        }
    }

    fn describe_process(&mut self, defs: &Defs, p: ProcessId) -> (TrackDescriptor, Option<XTrack>) {
        let proc = defs.process(p);
        let mut x = XTrack {
            label: proc.label.map(|l| defs.str(l).to_owned()),
            sort_index: proc.sort_index,
            host: proc.host.map(|h| defs.str(h).to_owned()),
            meta: typed(defs, &proc.meta),
            ..Default::default()
        };
        let shown = defs.process_display_name(p);
        match proc.kind {
            ProcessKind::Device { device } => {
                x.kind = Some(Kind::Device as i32);
                x.device = Some(device);
                x.no_os_id = proc.os_pid.is_none().then_some(true);
                x.os_id = proc.os_pid;
                x.unnamed = proc.name.is_none().then_some(true);
                let shown = match (proc.name, proc.label) {
                    (None, None) => format!("GPU {device}"),
                    _ => shown,
                };
                let desc = TrackDescriptor {
                    static_or_dynamic_name: name(&shown),
                    child_ordering: Some(ChildTracksOrdering::Explicit as i32),
                    sibling_merge_behavior: Some(SiblingMergeBehavior::None as i32),
                    ..Default::default()
                };
                (desc, Some(x))
            }
            ProcessKind::Host => {
                let pid = self.pid(defs, p);
                x.kind = Some(Kind::Process as i32);
                if proc.os_pid != Some(pid as i64) {
                    x.no_os_id = proc.os_pid.is_none().then_some(true);
                    x.os_id = proc.os_pid;
                }
                // a name is made up only where trace processor would show a made-up pid
                let made_up = proc.name.is_none()
                    && (x.label.is_some() || x.no_os_id.is_some() || x.os_id.is_some());
                x.unnamed = made_up.then_some(true);
                let process_name = match proc.name {
                    Some(n) => Some(defs.str(n).to_owned()),
                    None if made_up => Some(shown),
                    None => None,
                };
                if proc.sort_index.is_some() {
                    self.sorted_processes = true;
                }
                let desc = TrackDescriptor {
                    process: Some(ProcessDescriptor {
                        pid: Some(pid),
                        process_name,
                        ..Default::default()
                    }),
                    sibling_order_rank: proc.sort_index.map(rank),
                    ..Default::default()
                };
                let needed = x
                    != XTrack {
                        kind: x.kind,
                        ..Default::default()
                    };
                (desc, needed.then_some(x))
            }
        }
    }

    fn describe_track(
        &mut self,
        defs: &Defs,
        q: &mut Queue,
        t: TrackId,
    ) -> (TrackDescriptor, Option<XTrack>) {
        let track = defs.track(t);
        let mut x = XTrack {
            label: track.label.map(|l| defs.str(l).to_owned()),
            sort_index: track.sort_index,
            unnamed: track.name.is_none().then_some(true),
            ..Default::default()
        };
        let shown = defs.track_display_name(t);
        let custom = |parent: Option<u64>, shown: &str, merge: bool| TrackDescriptor {
            parent_uuid: parent,
            static_or_dynamic_name: name(shown),
            sibling_merge_behavior: (!merge).then_some(SiblingMergeBehavior::None as i32),
            ..Default::default()
        };
        match track.kind {
            TrackKind::Thread(th) => self.describe_thread(defs, q, th),
            TrackKind::GpuStream { device, stream } => {
                x.kind = Some(Kind::GpuStream as i32);
                x.device = Some(device);
                x.stream = Some(stream);
                let parent = self.parent_of(defs, q, track.process);
                let shown = match (track.name, track.label) {
                    (None, None) => format!("Stream {stream}"),
                    _ => shown,
                };
                let mut desc = custom(parent, &shown, false);
                desc.sibling_order_rank = Some(stream_rank(stream, 0));
                (desc, Some(x))
            }
            TrackKind::Async => {
                x.kind = Some(Kind::Async as i32);
                let parent = self.parent_of(defs, q, track.process);
                (custom(parent, &shown, true), Some(x))
            }
            TrackKind::Process => {
                x.kind = Some(Kind::ProcessInstants as i32);
                let parent = self.parent_of(defs, q, track.process);
                (custom(parent, &shown, false), Some(x))
            }
            TrackKind::Global => {
                x.kind = Some(Kind::Global as i32);
                let shown = match (track.name, track.label) {
                    (None, None) => "Global".to_string(),
                    _ => shown,
                };
                (custom(None, &shown, false), Some(x))
            }
            TrackKind::Overflow { of, level } => {
                x.kind = Some(Kind::Overflow as i32);
                x.overflow_of = Some(self.track(defs, q, of));
                x.overflow_level = Some(level);
                let root = defs.root_track(t);
                let root_track = defs.track(root);
                match root_track.kind {
                    TrackKind::Thread(_) => {
                        // a sibling of the thread track, associated with the same thread
                        let parent = self.track(defs, q, root);
                        (custom(Some(parent), &shown, false), Some(x))
                    }
                    TrackKind::GpuStream { stream, .. } => {
                        let parent = self.parent_of(defs, q, root_track.process);
                        let mut desc = custom(parent, &shown, false);
                        desc.sibling_order_rank = Some(stream_rank(stream, level));
                        (desc, Some(x))
                    }
                    _ => {
                        // async lanes take their track's name, so Perfetto shows them as one
                        let parent = self.parent_of(defs, q, root_track.process);
                        let same = defs.track_display_name(root);
                        (custom(parent, &same, true), Some(x))
                    }
                }
            }
        }
    }

    fn describe_thread(
        &mut self,
        defs: &Defs,
        q: &mut Queue,
        th: ThreadId,
    ) -> (TrackDescriptor, Option<XTrack>) {
        let thread = defs.thread(th);
        let p = thread.process;
        let mut x = XTrack {
            kind: Some(Kind::Thread as i32),
            label: thread.label.map(|l| defs.str(l).to_owned()),
            sort_index: thread.sort_index,
            meta: typed(defs, &thread.meta),
            ..Default::default()
        };
        let shown = defs.track_display_name(thread.track);
        let parent = self.process(defs, q, p);
        if !matches!(defs.process(p).kind, ProcessKind::Host) {
            // a thread of a GPU: a plain track in the GPU's group
            x.no_os_id = thread.os_tid.is_none().then_some(true);
            x.os_id = thread.os_tid;
            x.unnamed = thread.name.is_none().then_some(true);
            let desc = TrackDescriptor {
                parent_uuid: Some(parent),
                static_or_dynamic_name: name(&shown),
                sibling_merge_behavior: Some(SiblingMergeBehavior::None as i32),
                ..Default::default()
            };
            return (desc, Some(x));
        }
        let pid = self.pid(defs, p);
        let tid = self.tid(defs, th);
        if thread.os_tid != Some(tid) {
            x.no_os_id = thread.os_tid.is_none().then_some(true);
            x.os_id = thread.os_tid;
        }
        let made_up = thread.name.is_none()
            && (x.label.is_some() || x.no_os_id.is_some() || x.os_id.is_some());
        x.unnamed = made_up.then_some(true);
        let thread_name = match thread.name {
            Some(n) => Some(defs.str(n).to_owned()),
            None if made_up => Some(shown),
            None => None,
        };
        if thread.sort_index.is_some() {
            self.sorted_threads = true;
        }
        let desc = TrackDescriptor {
            // trace processor goes by the pid; tracex by the parent
            parent_uuid: Some(parent),
            thread: Some(ThreadDescriptor {
                pid: Some(pid),
                tid: Some(tid),
                thread_name,
                ..Default::default()
            }),
            sibling_order_rank: thread.sort_index.map(rank),
            ..Default::default()
        };
        let needed = x
            != XTrack {
                kind: x.kind,
                ..Default::default()
            };
        (desc, needed.then_some(x))
    }

    fn describe_counter(
        &mut self,
        defs: &Defs,
        q: &mut Queue,
        c: CounterId,
    ) -> (TrackDescriptor, Option<XTrack>) {
        let def = defs.counter(c);
        let parent = self.parent_of(defs, q, def.process);
        let group = defs.str(def.name);
        let shown = match def.series {
            Some(s) => format!("{group} {}", defs.str(s)),
            None => group.to_owned(),
        };
        let unit = def.unit.map(|u| defs.str(u));
        let known = match unit {
            Some("ns") => Some(Unit::TimeNs),
            Some("bytes" | "byte" | "B") => Some(Unit::SizeBytes),
            Some("count" | "#") => Some(Unit::Count),
            _ => None,
        };
        let desc = TrackDescriptor {
            parent_uuid: parent,
            static_or_dynamic_name: name(&shown),
            counter: Some(CounterDescriptor {
                unit: known.map(|u| u as i32),
                unit_name: unit.map(str::to_owned),
                categories: def
                    .cat
                    .map(|c| defs.str(c).to_owned())
                    .into_iter()
                    .collect(),
                y_axis_share_key: def.series.map(|_| group.to_owned()),
                ..Default::default()
            }),
            sibling_merge_behavior: Some(SiblingMergeBehavior::None as i32),
            ..Default::default()
        };
        let x = XTrack {
            kind: Some(Kind::Counter as i32),
            counter_name: Some(group.to_owned()),
            series: def.series.map(|s| defs.str(s).to_owned()),
            unit: unit.map(str::to_owned),
            category: def.cat.map(|c| defs.str(c).to_owned()),
            label: def.label.map(|l| defs.str(l).to_owned()),
            global: def.process.is_none().then_some(true),
            ..Default::default()
        };
        (desc, Some(x))
    }

    /// Writes the processes and threads that have a name or metadata but no events, every
    /// descriptor whose content changed since it was written (late names), and the root
    /// descriptor that turns on explicit process and thread ordering when sort indexes exist.
    pub fn finish(&mut self, defs: &Defs, q: &mut Queue) {
        for i in 0..defs.processes.len() {
            let p = ProcessId(i as u32);
            let proc = defs.process(p);
            if proc.name.is_some() || proc.sort_index.is_some() || !proc.meta.is_empty() {
                self.process(defs, q, p);
            }
        }
        for i in 0..defs.threads.len() {
            let th = &defs.threads[i];
            if th.name.is_some() || th.sort_index.is_some() || !th.meta.is_empty() {
                self.track(defs, q, th.track);
            }
        }
        let mut i = 0;
        while i < self.written.len() {
            let (what, ref old, ref old_x) = self.written[i];
            let (old, old_x) = (old.clone(), old_x.clone());
            let (desc, x) = self.describe(defs, q, what);
            let desc = TrackDescriptor {
                uuid: old.uuid,
                ..desc
            };
            if desc != old || x != old_x {
                q.push(None, packet(&desc, &x));
                self.written[i] = (what, desc, x);
            }
            i += 1;
        }
        if self.sorted_processes || self.sorted_threads {
            let root = TrackDescriptor {
                uuid: Some(0),
                process_ordering: self
                    .sorted_processes
                    .then_some(ProcessOrdering::Explicit as i32),
                thread_ordering: self
                    .sorted_threads
                    .then_some(ThreadOrdering::Explicit as i32),
                ..Default::default()
            };
            q.push(None, packet(&root, &None));
        }
    }
}

/// A process-scoped track with nothing of its own: its events go on the process track.
fn plain(defs: &Defs, t: TrackId) -> bool {
    let tr = defs.track(t);
    tr.name.is_none() && tr.label.is_none() && tr.sort_index.is_none()
}

fn packet(desc: &TrackDescriptor, extra: &Option<XTrack>) -> TracePacket {
    TracePacket {
        data: Some(Data::TrackDescriptor(Box::new(desc.clone()))),
        tracex: extra.as_ref().map(|x| {
            Box::new(Extra {
                track: Some(x.clone()),
                ..Default::default()
            })
        }),
        ..Default::default()
    }
}
