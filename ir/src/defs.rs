//! [`Defs`]: the definition tables of one trace. Importers add to them while they push events;
//! pipeline stages may add to them too (the overlap router its overflow tracks); sinks only read
//! them. Names can change until `finish`, so exporters write names last. Diagnostics are kept
//! apart, in [`crate::Diagnostics`], so that a sink can count them without changing definitions.

use crate::event::FlowId;
use crate::idset::IdSet;
use crate::model::{
    Arg, Args, Clock, CounterDef, CounterId, NamePriority, Process, ProcessId, StackId, Thread,
    ThreadId, Track, TrackId, TrackKind, Value,
};
use crate::stack::StackTable;
use crate::strings::{Interner, StrId};

#[derive(Debug, Default, Clone)]
pub struct Defs {
    pub strings: Interner,
    pub processes: Vec<Process>,
    pub threads: Vec<Thread>,
    pub tracks: Vec<Track>,
    pub counters: Vec<CounterDef>,
    pub stacks: StackTable,
    /// Trace-level metadata in input order (Chrome top-level keys, nsys export parameters).
    pub meta: Args,
    pub clock: Clock,
    next_flow: u64,
    next_renumbered_flow: u64,
    /// Every flow id handed out, so that ids kept from an input stay unique.
    used_flows: IdSet,
    global_track: Option<TrackId>,
    /// What changed in place, for copies kept on other threads ([`crate::mirror`]).
    pub(crate) changes: Changes,
}

/// The definitions changed in place (not appended) so far, in order: processes, threads and
/// tracks handed out by `*_mut`, and `set_meta` calls. Append-only; a reader keeps its place.
#[derive(Debug, Default, Clone)]
pub(crate) struct Changes {
    pub processes: Vec<u32>,
    pub threads: Vec<u32>,
    pub tracks: Vec<u32>,
    pub meta: u64,
}

impl Defs {
    pub fn new() -> Defs {
        Defs::default()
    }

    pub fn intern(&mut self, s: &str) -> StrId {
        self.strings.intern(s)
    }

    pub fn str(&self, id: StrId) -> &str {
        self.strings.get(id)
    }

    pub fn opt_str(&self, id: Option<StrId>) -> Option<&str> {
        id.map(|i| self.strings.get(i))
    }

    pub fn add_process(&mut self, p: Process) -> ProcessId {
        self.processes.push(p);
        ProcessId(self.processes.len() as u32 - 1)
    }

    pub fn process(&self, id: ProcessId) -> &Process {
        &self.processes[id.index()]
    }

    pub fn process_mut(&mut self, id: ProcessId) -> &mut Process {
        self.changes.processes.push(id.0);
        &mut self.processes[id.index()]
    }

    /// Adds a thread and its thread track. `thread.track` is filled in.
    pub fn add_thread(
        &mut self,
        process: ProcessId,
        os_tid: Option<i64>,
        label: Option<StrId>,
    ) -> ThreadId {
        let tid = ThreadId(self.threads.len() as u32);
        let track = self.add_track(Track {
            kind: TrackKind::Thread(tid),
            process: Some(process),
            name: None,
            label: None,
            sort_index: None,
        });
        self.threads.push(Thread {
            process,
            os_tid,
            label,
            name: None,
            name_priority: NamePriority::None,
            sort_index: None,
            meta: Args::new(),
            track,
        });
        tid
    }

    pub fn thread(&self, id: ThreadId) -> &Thread {
        &self.threads[id.index()]
    }

    pub fn thread_mut(&mut self, id: ThreadId) -> &mut Thread {
        self.changes.threads.push(id.0);
        &mut self.threads[id.index()]
    }

    pub fn add_track(&mut self, t: Track) -> TrackId {
        self.tracks.push(t);
        TrackId(self.tracks.len() as u32 - 1)
    }

    pub fn track(&self, id: TrackId) -> &Track {
        &self.tracks[id.index()]
    }

    pub fn track_mut(&mut self, id: TrackId) -> &mut Track {
        self.changes.tracks.push(id.0);
        &mut self.tracks[id.index()]
    }

    /// The thread a track belongs to, following overflow tracks to the track they spill from.
    pub fn track_thread(&self, id: TrackId) -> Option<ThreadId> {
        match self.track(self.root_track(id)).kind {
            TrackKind::Thread(t) => Some(t),
            _ => None,
        }
    }

    /// For an overflow track, the track it spills from; otherwise the track itself.
    pub fn root_track(&self, mut id: TrackId) -> TrackId {
        while let TrackKind::Overflow { of, .. } = self.track(id).kind {
            id = of;
        }
        id
    }

    /// The trace-wide track, if made.
    pub(crate) fn global_track_id(&self) -> Option<TrackId> {
        self.global_track
    }

    pub(crate) fn set_global_track_id(&mut self, t: Option<TrackId>) {
        self.global_track = t;
    }

    /// The one trace-wide track, for global instants.
    pub fn global_track(&mut self) -> TrackId {
        if let Some(t) = self.global_track {
            return t;
        }
        let t = self.add_track(Track {
            kind: TrackKind::Global,
            process: None,
            name: None,
            label: None,
            sort_index: None,
        });
        self.global_track = Some(t);
        t
    }

    pub fn add_counter(&mut self, c: CounterDef) -> CounterId {
        self.counters.push(c);
        CounterId(self.counters.len() as u32 - 1)
    }

    pub fn counter(&self, id: CounterId) -> &CounterDef {
        &self.counters[id.index()]
    }

    /// A new flow id, unique in this trace.
    pub fn new_flow_id(&mut self) -> FlowId {
        loop {
            self.next_flow += 1;
            if self.used_flows.insert(self.next_flow) {
                return FlowId(self.next_flow);
            }
        }
    }

    /// The id of a flow whose input gave it the id `source` (a Kineto correlation id, a Chrome
    /// flow id): kept when no other flow of this trace has it yet, as tools that join a launch to
    /// its kernel by flow id need. Otherwise (or without `source`) a new id; the flag says the
    /// source id was taken. Renumbered ids start at 2^32, above the 32-bit ids producers write.
    pub fn flow_id(&mut self, source: Option<u64>) -> (FlowId, bool) {
        let Some(src) = source else {
            return (self.new_flow_id(), false);
        };
        if self.used_flows.insert(src) {
            return (FlowId(src), false);
        }
        self.next_renumbered_flow = self.next_renumbered_flow.max(1 << 32);
        loop {
            self.next_renumbered_flow += 1;
            if self.used_flows.insert(self.next_renumbered_flow) {
                return (FlowId(self.next_renumbered_flow), true);
            }
        }
    }

    /// Sets a process name unless a name of higher priority is already there.
    pub fn set_process_name(&mut self, id: ProcessId, name: StrId, prio: NamePriority) {
        let p = self.process_mut(id);
        if prio >= p.name_priority {
            p.name = Some(name);
            p.name_priority = prio;
        }
    }

    /// Sets a thread name unless a name of higher priority is already there.
    pub fn set_thread_name(&mut self, id: ThreadId, name: StrId, prio: NamePriority) {
        let t = self.thread_mut(id);
        if prio >= t.name_priority {
            t.name = Some(name);
            t.name_priority = prio;
        }
    }

    /// Adds or replaces a trace metadata entry.
    pub fn set_meta(&mut self, key: &str, value: Value) {
        let key = self.intern(key);
        self.changes.meta += 1;
        set_arg(&mut self.meta, key, value);
    }

    pub fn meta(&self, key: &str) -> Option<&Value> {
        let k = self.strings.lookup(key)?;
        self.meta.iter().find(|a| a.key == k).map(|a| &a.value)
    }

    /// Frame names of a stack, root first.
    pub fn stack_names(&self, stack: StackId) -> Vec<&str> {
        self.stacks
            .path(stack)
            .into_iter()
            .map(|f| self.str(self.stacks.frame(f).name))
            .collect()
    }

    /// A display name for a track: the thread or track name, else a description of its kind.
    pub fn track_display_name(&self, id: TrackId) -> String {
        let t = self.track(id);
        match t.kind {
            TrackKind::Thread(th) => {
                let th = self.thread(th);
                match (th.name, th.os_tid, th.label) {
                    (Some(n), _, _) => self.str(n).to_string(),
                    (None, _, Some(l)) => self.str(l).to_string(),
                    (None, Some(tid), None) => format!("thread {tid}"),
                    (None, None, None) => "thread".to_string(),
                }
            }
            TrackKind::Overflow { of, level } => {
                format!("{} (overflow {level})", self.track_display_name(of))
            }
            _ => match (t.name, t.label) {
                (Some(n), _) => self.str(n).to_string(),
                (None, Some(l)) => self.str(l).to_string(),
                (None, None) => match t.kind {
                    TrackKind::GpuStream { stream, .. } => format!("stream {stream}"),
                    TrackKind::Async => "async".to_string(),
                    TrackKind::Process => "process".to_string(),
                    TrackKind::Global => "global".to_string(),
                    _ => unreachable!(),
                },
            },
        }
    }

    /// A display name for a process.
    pub fn process_display_name(&self, id: ProcessId) -> String {
        let p = self.process(id);
        match (p.name, p.label, p.os_pid) {
            (Some(n), _, _) => self.str(n).to_string(),
            (None, Some(l), _) => self.str(l).to_string(),
            (None, None, Some(pid)) => format!("process {pid}"),
            (None, None, None) => match p.kind {
                crate::model::ProcessKind::Device { device } => format!("device {device}"),
                crate::model::ProcessKind::Host => "process".to_string(),
            },
        }
    }
}

/// Sets `key` in `args`, replacing an existing entry with the same key.
pub fn set_arg(args: &mut Args, key: StrId, value: Value) {
    match args.iter_mut().find(|a| a.key == key) {
        Some(a) => a.value = value,
        None => args.push(Arg { key, value }),
    }
}

/// Texts of values that may be interned: they need the definitions (here, not in `model`,
/// which `defs` depends on).
impl Value {
    /// The text of a JSON value (`Json` or `JsonSym`).
    pub fn json<'a>(&'a self, defs: &'a Defs) -> Option<&'a str> {
        match self {
            Value::Json(s) => Some(s),
            Value::JsonSym(id) => Some(defs.str(*id)),
            _ => None,
        }
    }

    /// The text of a string value (`Str` or `Sym`).
    pub fn text<'a>(&'a self, defs: &'a Defs) -> Option<&'a str> {
        match self {
            Value::Str(s) => Some(s),
            Value::Sym(id) => Some(defs.str(*id)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Process;

    #[test]
    fn names_respect_priority() {
        let mut d = Defs::new();
        let p = d.add_process(Process::default());
        let t = d.add_thread(p, Some(7), None);
        let a = d.intern("guessed");
        let b = d.intern("explicit");
        d.set_thread_name(t, b, NamePriority::Explicit);
        d.set_thread_name(t, a, NamePriority::Inferred);
        assert_eq!(d.thread(t).name, Some(b));
        assert_eq!(d.track_display_name(d.thread(t).track), "explicit");
    }
}
