//! The state of one packet sequence (one writer): interned data, defaults, sequence-scoped
//! clocks, incremental counter values and the legacy thread descriptor. A packet that clears the
//! incremental state starts it afresh; until the first such packet (and after lost packets) the
//! state is invalid and packets that need it are skipped, as trace processor does.

use rustc_hash::FxHashMap;
use tracex_ir::{CounterId, Defs, StackId, StrId};

use super::clock::SequenceClocks;
use crate::pb::stack_sample::TaskContext;
use crate::pb::trace_packet::SequenceFlags;
use crate::pb::{
    InternedData, InternedGpuCounterDescriptor, SourceLocation, ThreadDescriptor, TracePacket,
    TracePacketDefaults,
};

#[derive(Default)]
pub struct Sequence {
    pub valid: bool,
    pub defaults: Option<TracePacketDefaults>,
    pub clocks: SequenceClocks,
    pub names: FxHashMap<u64, StrId>,
    pub cats: FxHashMap<u64, StrId>,
    pub keys: FxHashMap<u64, StrId>,
    pub strings: FxHashMap<u64, String>,
    pub functions: FxHashMap<u64, StrId>,
    paths: FxHashMap<u64, String>,
    /// Mapping iid → the module it names.
    pub mappings: FxHashMap<u64, Option<StrId>>,
    pub frames: FxHashMap<u64, crate::pb::Frame>,
    pub callstacks: FxHashMap<u64, Vec<u64>>,
    /// Callstacks already turned into IR stacks.
    pub stacks: FxHashMap<u64, Option<StackId>>,
    pub tasks: FxHashMap<u64, TaskContext>,
    pub cpus: FxHashMap<u64, Option<u32>>,
    pub sample_counters: FxHashMap<u64, Option<String>>,
    pub locations: FxHashMap<u64, SourceLocation>,
    pub log_bodies: FxHashMap<u64, String>,
    pub correlations: FxHashMap<u64, String>,
    /// GPU counter descriptors by iid (their gpu id and counters).
    pub gpu_counters: FxHashMap<u64, InternedGpuCounterDescriptor>,
    /// The IR counter of each counter id of a used descriptor, by iid, and whether its values
    /// look forwards.
    pub gpu_resolved: FxHashMap<u64, FxHashMap<u32, (CounterId, bool)>>,
    /// Running values of incremental counters, by track uuid.
    pub counters: FxHashMap<u64, f64>,
    pub int_counters: FxHashMap<u64, i64>,
    /// The legacy thread descriptor: the thread of events without a track.
    pub thread: Option<ThreadDescriptor>,
    /// Legacy delta timestamps (ns on MONOTONIC) and thread times (ns).
    pub legacy_ts: Option<i128>,
    pub legacy_thread_time: Option<i64>,
    /// The time of the last streamed profile sample (µs, MONOTONIC).
    pub legacy_sample_us: Option<i64>,
}

fn text(b: &Option<Vec<u8>>) -> String {
    String::from_utf8_lossy(b.as_deref().unwrap_or_default()).into_owned()
}

impl Sequence {
    /// A new generation of incremental state (clocks and the thread stay).
    pub fn clear(&mut self) {
        let clocks = std::mem::take(&mut self.clocks);
        let thread = self.thread.take();
        *self = Sequence {
            valid: true,
            clocks,
            thread,
            ..Default::default()
        };
    }

    pub fn intern(&mut self, defs: &mut Defs, d: &InternedData) {
        for e in &d.event_names {
            let s = defs.intern(e.name.as_deref().unwrap_or_default());
            self.names.insert(e.iid.unwrap_or(0), s);
        }
        for e in &d.event_categories {
            let s = defs.intern(e.name.as_deref().unwrap_or_default());
            self.cats.insert(e.iid.unwrap_or(0), s);
        }
        for e in &d.debug_annotation_names {
            let s = defs.intern(e.name.as_deref().unwrap_or_default());
            self.keys.insert(e.iid.unwrap_or(0), s);
        }
        for e in &d.debug_annotation_string_values {
            self.strings.insert(e.iid.unwrap_or(0), text(&e.str));
        }
        for e in &d.function_names {
            let s = defs.intern(&text(&e.str));
            self.functions.insert(e.iid.unwrap_or(0), s);
        }
        for e in &d.mapping_paths {
            self.paths.insert(e.iid.unwrap_or(0), text(&e.str));
        }
        for m in &d.mappings {
            let parts: Vec<&str> = m
                .path_string_ids
                .iter()
                .map_while(|p| self.paths.get(p).map(String::as_str))
                .collect();
            // one component is a module name as tracex writes it; several, a path
            let module = match parts.as_slice() {
                [] => None,
                [one] => Some(one.to_string()),
                many => Some(format!("/{}", many.join("/"))),
            };
            let module = module.map(|m| defs.intern(&m));
            self.mappings.insert(m.iid.unwrap_or(0), module);
        }
        for f in &d.frames {
            self.frames.insert(f.iid.unwrap_or(0), *f);
        }
        for c in &d.callstacks {
            self.callstacks
                .insert(c.iid.unwrap_or(0), c.frame_ids.clone());
            self.stacks.remove(&c.iid.unwrap_or(0));
        }
        for t in &d.stack_sample_task_contexts {
            self.tasks.insert(t.iid.unwrap_or(0), *t);
        }
        for c in &d.stack_sample_execution_contexts {
            self.cpus.insert(c.iid.unwrap_or(0), c.cpu);
        }
        for c in &d.stack_sample_counter_descriptors {
            self.sample_counters
                .insert(c.iid.unwrap_or(0), c.name.clone());
        }
        for l in &d.source_locations {
            self.locations.insert(l.iid.unwrap_or(0), l.clone());
        }
        for c in &d.correlation_id_str {
            self.correlations.insert(c.iid.unwrap_or(0), text(&c.str));
        }
        for g in &d.gpu_counter_descriptors {
            self.gpu_counters.insert(g.iid.unwrap_or(0), g.clone());
        }
        for b in &d.log_message_body {
            self.log_bodies
                .insert(b.iid.unwrap_or(0), b.body.clone().unwrap_or_default());
        }
    }

    /// The IR stack of interned callstack `iid` (frames bottom first); unknown frames are named
    /// by their address.
    pub fn stack(&mut self, defs: &mut Defs, iid: u64) -> Option<Option<StackId>> {
        if let Some(s) = self.stacks.get(&iid) {
            return Some(*s);
        }
        let frames = self.callstacks.get(&iid)?;
        let mut ids = Vec::with_capacity(frames.len());
        for f in frames {
            let (name, module) = match self.frames.get(f) {
                Some(fr) => {
                    let name = match fr.function_name_id.and_then(|n| self.functions.get(&n)) {
                        Some(&n) => n,
                        None => defs.intern(&format!("0x{:x}", fr.rel_pc.unwrap_or(0))),
                    };
                    let module = fr
                        .mapping_id
                        .and_then(|m| self.mappings.get(&m).copied().flatten());
                    (name, module)
                }
                None => (defs.intern("?"), None),
            };
            ids.push(defs.stacks.intern_frame(name, module));
        }
        let s = defs.stacks.intern_path(ids);
        self.stacks.insert(iid, s);
        Some(s)
    }
}

/// Whether a packet clears its sequence's incremental state, or needs it.
pub(super) fn flags(p: &TracePacket) -> (bool, bool) {
    let f = p.sequence_flags.unwrap_or(0);
    (
        p.incremental_state_cleared == Some(true)
            || f & SequenceFlags::SeqIncrementalStateCleared as u32 != 0,
        f & SequenceFlags::SeqNeedsIncrementalState as u32 != 0,
    )
}
