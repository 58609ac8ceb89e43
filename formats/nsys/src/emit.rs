//! What happens when the merge emits a decoded event, in time order: a launch opens its flow
//! and waits for its GPU work, which closes the flow (and, for `nvtx-kernel`, is named by the
//! NVTX push/pop ranges open on the launching thread); flow ends are made here and wait in a
//! queue for their place in the order. Memory: launches whose GPU work has not started yet.

use std::cmp::Reverse;
use std::collections::hash_map::Entry;
use std::collections::BinaryHeap;

use rustc_hash::FxHashMap;
use tracex_ir::order::OrderKey;
use tracex_ir::{
    push_arg, Defs, Diagnostics, Event, FlowBind, FlowId, FlowPoint, FlowRole, StrId, TrackId,
    Value,
};

use crate::catalogue::{flow_source_table, SRC_KERNEL};
use crate::decoded::Hook;
use crate::diag::{self as d, row_at};
use crate::importer::Keys;

/// A launch whose GPU work has not started yet.
struct PendingLaunch {
    flow: FlowId,
    /// The NVTX push/pop ranges open on the launching thread (nvtx-kernel), by their number
    /// in [`NvtxStacks`]; 0 for none.
    nvtx: u32,
}

/// The distinct stacks of NVTX range names kernels were launched in, each with its `nvtx`
/// argument (a JSON array, outermost first) written once: a million kernels are launched under
/// a handful of stacks.
#[derive(Default)]
struct NvtxStacks {
    number: FxHashMap<Vec<StrId>, u32>,
    /// The JSON of stack `n` at `n - 1`, interned.
    json: Vec<StrId>,
    scratch: Vec<StrId>,
}

impl NvtxStacks {
    /// The number of the stack of ranges open on `track` at `ts` (0: none open).
    fn open_at(
        &mut self,
        open: &mut FxHashMap<TrackId, Vec<(i64, StrId)>>,
        track: TrackId,
        ts: i64,
        defs: &mut Defs,
    ) -> u32 {
        let Some(stack) = open.get_mut(&track) else {
            return 0;
        };
        stack.retain(|(e, _)| *e > ts);
        if stack.is_empty() {
            return 0;
        }
        self.scratch.clear();
        self.scratch.extend(stack.iter().map(|(_, n)| *n));
        if let Some(&n) = self.number.get(&self.scratch[..]) {
            return n;
        }
        let names: Vec<String> = (self.scratch.iter())
            .map(|n| serde_json::to_string(defs.str(*n)).unwrap_or_default())
            .collect();
        self.json
            .push(defs.intern(&format!("[{}]", names.join(","))));
        let n = self.json.len() as u32;
        self.number.insert(self.scratch.clone(), n);
        n
    }

    /// The `nvtx` argument of stack `n` (not 0): its JSON text, interned.
    fn json(&self, n: u32) -> StrId {
        self.json[n as usize - 1]
    }
}

/// An event made at emission time for a later (or equal) point in the order.
struct Deferred {
    key: OrderKey,
    event: Event,
}

impl PartialEq for Deferred {
    fn eq(&self, o: &Self) -> bool {
        self.key == o.key
    }
}
impl Eq for Deferred {}
impl PartialOrd for Deferred {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Deferred {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.key.cmp(&o.key)
    }
}

/// The launch join at emission time.
pub struct Emitter {
    /// Flow sources (GPU tables) whose launches are read, by `src`.
    flow_sources: Vec<bool>,
    /// Whether kernels are named by the NVTX ranges around their launch.
    nvtx_kernel: bool,
    pending: FxHashMap<(u8, i64), PendingLaunch>,
    /// Open NVTX push/pop ranges per thread track: (end, name), innermost last.
    nvtx_open: FxHashMap<TrackId, Vec<(i64, StrId)>>,
    nvtx_stacks: NvtxStacks,
    deferred: BinaryHeap<Reverse<Deferred>>,
    deferred_seq: u64,
}

impl Emitter {
    /// `flow_sources`: the flow sources whose launches are read.
    pub fn new(flow_sources: &[u8], nvtx_kernel: bool) -> Emitter {
        let mut sources = Vec::new();
        for &src in flow_sources {
            let src = src as usize;
            if sources.len() <= src {
                sources.resize(src + 1, false);
            }
            sources[src] = true;
        }
        Emitter {
            flow_sources: sources,
            nvtx_kernel,
            pending: FxHashMap::default(),
            nvtx_open: FxHashMap::default(),
            nvtx_stacks: NvtxStacks::default(),
            deferred: BinaryHeap::new(),
            deferred_seq: 0,
        }
    }

    /// Side effects of emitting `event`, in time order; returns what to emit (or nothing).
    pub fn on_emit(
        &mut self,
        mut event: Event,
        hook: Hook,
        keys: &Keys,
        defs: &mut Defs,
        diag: &mut Diagnostics,
    ) -> Option<Event> {
        match hook {
            Hook::None => Some(event),
            Hook::NvtxPush { end, name, emit } => {
                if let Event::Slice(s) = &event {
                    let stack = self.nvtx_open.entry(s.track).or_default();
                    stack.retain(|(e, _)| *e > s.ts);
                    stack.push((end, name));
                }
                emit.then_some(event)
            }
            Hook::Launch {
                src,
                grow,
                gpu_start,
                correlation,
            } => {
                let Event::Flow(f) = &mut event else {
                    return None;
                };
                // GPU work that started before (or with) its launch was already emitted
                // without a flow; a second launch with the same id gets none either.
                if gpu_start <= f.ts {
                    return None;
                }
                // one look-up finds a duplicate and keeps the place for the launch
                let slot = match self.pending.entry((src, grow)) {
                    Entry::Occupied(_) => {
                        let at = row_at(flow_source_table(src), grow);
                        diag.record(&d::DUPLICATE_CORRELATION, at());
                        return None;
                    }
                    Entry::Vacant(slot) => slot,
                };
                // the correlation id, as Kineto's flows have it, unless another process used it
                let (id, renumbered) = defs.flow_id(correlation);
                if renumbered {
                    let at = row_at(flow_source_table(src), grow);
                    diag.record(&tracex_ir::diag::kinds::FLOW_ID_RENUMBERED, at());
                }
                f.id = id;
                let nvtx = if self.nvtx_kernel && src == SRC_KERNEL {
                    (self.nvtx_stacks).open_at(&mut self.nvtx_open, f.track, f.ts, defs)
                } else {
                    0
                };
                slot.insert(PendingLaunch { flow: f.id, nvtx });
                Some(event)
            }
            Hook::Gpu { src, rowid } => {
                let Event::Slice(s) = &mut event else {
                    return Some(event);
                };
                if !self
                    .flow_sources
                    .get(src as usize)
                    .copied()
                    .unwrap_or(false)
                {
                    return Some(event);
                }
                match self.pending.remove(&(src, rowid)) {
                    Some(p) => {
                        if p.nvtx != 0 {
                            let stack = self.nvtx_stacks.json(p.nvtx);
                            push_arg(&mut s.args, keys.nvtx, || Value::JsonSym(stack));
                        }
                        let end = Event::Flow(FlowPoint {
                            id: p.flow,
                            role: FlowRole::End,
                            track: s.track,
                            ts: s.ts,
                            bind: FlowBind::Enclosing,
                            name: Some(keys.launch),
                            cat: Some(keys.cat_launch),
                        });
                        self.defer(end);
                    }
                    None => {
                        let at = row_at(flow_source_table(src), rowid);
                        diag.record(&d::LAUNCH_NOT_FOUND, at());
                    }
                }
                Some(event)
            }
        }
    }

    fn defer(&mut self, event: Event) {
        self.deferred_seq += 1;
        let key = OrderKey::of(&event, u64::MAX / 2 + self.deferred_seq);
        self.deferred.push(Reverse(Deferred { key, event }));
    }

    /// The key of the next deferred event.
    pub fn next_deferred(&self) -> Option<OrderKey> {
        self.deferred.peek().map(|Reverse(d)| d.key)
    }

    pub fn pop_deferred(&mut self) -> Option<Event> {
        self.deferred.pop().map(|Reverse(d)| d.event)
    }

    /// Launches whose GPU work never came (none in a consistent file).
    pub fn pending_launches(&self) -> usize {
        self.pending.len()
    }
}
