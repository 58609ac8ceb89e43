//! [`TraceBuilder`]: build small traces in code, for exporter tests and examples.

use crate::defs::Defs;
use crate::event::{
    CounterValue, Event, FlowBind, FlowPoint, FlowRole, Instant, Num, Sample, Slice,
};
use crate::mem::Trace;
use crate::model::{
    Arg, CounterDef, CounterId, NamePriority, Process, ProcessId, ProcessKind, StackId, Track,
    TrackId, TrackKind, Value,
};

#[derive(Default)]
pub struct TraceBuilder {
    pub defs: Defs,
    pub events: Vec<Event>,
}

impl TraceBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    /// A host process with an OS pid and a name.
    pub fn process(&mut self, pid: i64, name: &str) -> ProcessId {
        let name = self.defs.intern(name);
        self.defs.add_process(Process {
            os_pid: Some(pid),
            name: Some(name),
            name_priority: NamePriority::Explicit,
            ..Process::default()
        })
    }

    /// A GPU shown as a process.
    pub fn device(&mut self, device: u32, name: &str) -> ProcessId {
        let name = self.defs.intern(name);
        self.defs.add_process(Process {
            kind: ProcessKind::Device { device },
            name: Some(name),
            name_priority: NamePriority::Explicit,
            ..Process::default()
        })
    }

    /// A named thread; returns its track.
    pub fn thread(&mut self, p: ProcessId, tid: i64, name: &str) -> TrackId {
        let t = self.defs.add_thread(p, Some(tid), None);
        let n = self.defs.intern(name);
        self.defs.set_thread_name(t, n, NamePriority::Explicit);
        self.defs.thread(t).track
    }

    pub fn gpu_stream(&mut self, device_process: ProcessId, device: u32, stream: u32) -> TrackId {
        self.defs.add_track(Track {
            kind: TrackKind::GpuStream { device, stream },
            process: Some(device_process),
            name: None,
            label: None,
            sort_index: None,
        })
    }

    pub fn async_track(&mut self, p: ProcessId, name: &str) -> TrackId {
        let n = self.defs.intern(name);
        self.defs.add_track(Track {
            kind: TrackKind::Async,
            process: Some(p),
            name: Some(n),
            label: None,
            sort_index: None,
        })
    }

    /// Adds a complete slice and returns it for further setting (`.args`, `.cat`).
    pub fn slice(&mut self, track: TrackId, ts: i64, dur: i64, name: &str) -> &mut Slice {
        let name = self.defs.intern(name);
        self.events
            .push(Event::Slice(Slice::new(track, ts, dur, name)));
        match self.events.last_mut() {
            Some(Event::Slice(s)) => s,
            _ => unreachable!(),
        }
    }

    /// Adds an argument to the last event added, if it has args.
    pub fn arg(&mut self, key: &str, value: Value) -> &mut Self {
        let key = self.defs.intern(key);
        match self.events.last_mut() {
            Some(Event::Slice(s)) => s.args.push(Arg { key, value }),
            Some(Event::Instant(i)) => i.args.push(Arg { key, value }),
            _ => {}
        }
        self
    }

    pub fn cat(&mut self, cat: &str) -> &mut Self {
        let c = self.defs.intern(cat);
        match self.events.last_mut() {
            Some(Event::Slice(s)) => s.cat = Some(c),
            Some(Event::Instant(i)) => i.cat = Some(c),
            _ => {}
        }
        self
    }

    pub fn instant(&mut self, track: TrackId, ts: i64, name: &str) {
        let name = self.defs.intern(name);
        self.events
            .push(Event::Instant(Instant::new(track, ts, name)));
    }

    pub fn counter(&mut self, p: ProcessId, name: &str, series: &str) -> CounterId {
        let name = self.defs.intern(name);
        let series = Some(self.defs.intern(series));
        self.defs.add_counter(CounterDef {
            process: Some(p),
            name,
            series,
            label: None,
            unit: None,
            cat: None,
        })
    }

    pub fn count(&mut self, counter: CounterId, ts: i64, value: Num) {
        self.events
            .push(Event::Counter(CounterValue { counter, ts, value }));
    }

    /// A two-point flow between enclosing slices.
    pub fn flow(&mut self, from: (TrackId, i64), to: (TrackId, i64), name: &str) {
        let id = self.defs.new_flow_id();
        let name = Some(self.defs.intern(name));
        for (role, (track, ts)) in [(FlowRole::Start, from), (FlowRole::End, to)] {
            self.events.push(Event::Flow(FlowPoint {
                id,
                role,
                track,
                ts,
                bind: FlowBind::Enclosing,
                name,
                cat: None,
            }));
        }
    }

    /// The stack with these frame names, root first.
    pub fn stack(&mut self, frames: &[&str]) -> Option<StackId> {
        let ids: Vec<_> = frames
            .iter()
            .map(|f| {
                let n = self.defs.intern(f);
                self.defs.stacks.intern_frame(n, None)
            })
            .collect();
        self.defs.stacks.intern_path(ids)
    }

    pub fn sample(&mut self, track: TrackId, ts: Option<i64>, frames: &[&str], weight: i64) {
        let stack = self.stack(frames);
        self.events.push(Event::Sample(Sample {
            track,
            ts,
            stack,
            weight,
            cpu: None,
            name: None,
        }));
    }

    pub fn finish(self) -> Trace {
        Trace {
            defs: self.defs,
            diag: Default::default(),
            events: self.events,
        }
    }
}
