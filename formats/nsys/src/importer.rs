//! The state of one import: what was read up front (strings, enums, names), what is in flight
//! (launches waiting for their GPU work, open NVTX ranges per thread), and the two steps every
//! row goes through: `decode` (row → event, when the row becomes its stream's head) and
//! `on_emit` (side effects in time order, when the merge hands the event on).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::db::Row;
use rustc_hash::FxHashMap;
use tracex_ir::diag::kinds as ir_kinds;
use tracex_ir::order::OrderKey;
use tracex_ir::{
    Arg, Args, CounterId, Defs, DiagKind, Diagnostics, Error, Event, FlowId, ImportCtx, Instant,
    Location, Slice, StrId, TrackId, Value,
};

use crate::db::{BadValue, Cols};
use crate::diag as d;
use crate::enums::Enums;
use crate::identity::Identity;
use crate::nvtx::NvtxDefs;
use crate::options::ImportOptions;
use crate::plan::Kind;
use crate::stacks::Callchains;
use crate::strings::Strings;

/// What to do when a decoded event is emitted.
#[derive(Clone, Copy, Debug)]
pub enum Hook {
    None,
    /// GPU work of flow source `src`, row `rowid`: ends the flow of its launch, if any.
    Gpu {
        src: u8,
        rowid: i64,
    },
    /// A launch of GPU row `grow` of source `src` that starts at `gpu_start`.
    Launch {
        src: u8,
        grow: i64,
        gpu_start: i64,
    },
    /// An NVTX push/pop range (for the NVTX names of kernels launched inside it); `emit` false
    /// when the range itself is not wanted in the output.
    NvtxPush {
        end: i64,
        name: StrId,
        emit: bool,
    },
}

/// Why a row gave no event.
pub enum Skip {
    /// A value of the wrong type: counted, row skipped.
    Bad(BadValue),
    /// No global thread/process id: counted, row skipped.
    NoId(&'static str),
    /// An input or SQLite failure: the import stops.
    Fatal(Error),
}

impl From<BadValue> for Skip {
    fn from(b: BadValue) -> Skip {
        Skip::Bad(b)
    }
}

impl From<Error> for Skip {
    fn from(e: Error) -> Skip {
        Skip::Fatal(e)
    }
}

pub type Decoded = Result<Option<(Event, Hook)>, Skip>;

/// A launch whose GPU work has not started yet.
pub struct PendingLaunch {
    pub flow: FlowId,
    /// NVTX push/pop ranges open on the launching thread, outermost first (nvtx-kernel).
    pub nvtx: Vec<StrId>,
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

/// Interned names used on every row.
pub struct Keys {
    pub cat_runtime: StrId,
    pub cat_driver: StrId,
    pub cat_kernel: StrId,
    pub cat_memcpy: StrId,
    pub cat_memset: StrId,
    pub cat_sync: StrId,
    pub cat_graph: StrId,
    pub cat_nvtx: StrId,
    pub cat_nvtx_kernel: StrId,
    pub cat_cuda_event: StrId,
    pub cat_launch: StrId,
    pub launch: StrId,
    pub correlation_id: StrId,
    pub nvtx: StrId,
}

impl Keys {
    fn new(defs: &mut Defs) -> Keys {
        use tracex_ir::kind::cat;
        Keys {
            cat_runtime: defs.intern(cat::CUDA_RUNTIME),
            cat_driver: defs.intern(cat::CUDA_DRIVER),
            cat_kernel: defs.intern(cat::KERNEL),
            cat_memcpy: defs.intern(cat::MEMCPY),
            cat_memset: defs.intern(cat::MEMSET),
            cat_sync: defs.intern(cat::SYNC),
            cat_graph: defs.intern(cat::GRAPH),
            cat_nvtx: defs.intern(cat::NVTX),
            cat_nvtx_kernel: defs.intern(tracex_ir::kind::cat::NVTX_KERNEL),
            cat_cuda_event: defs.intern("cuda_event"),
            cat_launch: defs.intern("cuda_launch"),
            launch: defs.intern("launch"),
            correlation_id: defs.intern("correlation_id"),
            nvtx: defs.intern("nvtx"),
        }
    }
}

pub struct Importer<'c> {
    pub opts: ImportOptions,
    pub strings: Strings,
    pub enums: Enums,
    pub ids: Identity,
    pub nvtx: NvtxDefs,
    pub callchains: Callchains<'c>,
    pub keys: Keys,
    /// Flow sources (GPU tables) whose launches are read, by `src`.
    pub flow_sources: Vec<bool>,
    pending: FxHashMap<(u8, i64), PendingLaunch>,
    /// Open NVTX push/pop ranges per thread track: (end, name), innermost last.
    nvtx_open: FxHashMap<TrackId, Vec<(i64, StrId)>>,
    deferred: BinaryHeap<Reverse<Deferred>>,
    deferred_seq: u64,
    /// Counter series made so far, by a key of the module that made them.
    pub counters: FxHashMap<(u8, i64, i64), CounterId>,
    /// Running totals of CUDA memory per (host process key, device).
    pub memory_totals: FxHashMap<(i64, i64), i64>,
    /// Colours by NVTX name (`--nvtx-color-scheme`), cached.
    colors: FxHashMap<StrId, Option<StrId>>,
    /// Arg keys interned on first use, by the address of the static text (cheaper to hash
    /// than the text, and looked up for every argument of every row).
    arg_keys: FxHashMap<usize, StrId>,

    /// CUDA API display names (without the ABI suffix) by string id.
    pub api_names: FxHashMap<i64, (StrId, Option<i64>)>,
    pub metric_names: crate::counters::MetricNames,
    /// Memcpy slice names by copy kind.
    pub memcpy_names: FxHashMap<i64, StrId>,
    /// What decoding rows counted; `import` adds it to the context's diagnostics at the end.
    pub diag: Diagnostics,
}

impl<'c> Importer<'c> {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        opts: ImportOptions,
        strings: Strings,
        enums: Enums,
        ids: Identity,
        nvtx: NvtxDefs,
        callchains: Callchains<'c>,
        defs: &mut Defs,
    ) -> Importer<'c> {
        Importer {
            opts,
            strings,
            enums,
            ids,
            nvtx,
            callchains,
            keys: Keys::new(defs),
            flow_sources: Vec::new(),
            pending: FxHashMap::default(),
            nvtx_open: FxHashMap::default(),
            deferred: BinaryHeap::new(),
            deferred_seq: 0,
            counters: FxHashMap::default(),
            memory_totals: FxHashMap::default(),
            colors: FxHashMap::default(),
            arg_keys: FxHashMap::default(),

            api_names: FxHashMap::default(),
            metric_names: Default::default(),
            memcpy_names: FxHashMap::default(),
            diag: Diagnostics::default(),
        }
    }

    /// The interned arg key `k`.
    pub fn key(&mut self, defs: &mut Defs, k: &'static str) -> StrId {
        *self
            .arg_keys
            .entry(k.as_ptr() as usize)
            .or_insert_with(|| defs.intern(k))
    }

    pub fn arg(&mut self, defs: &mut Defs, args: &mut Args, k: &'static str, value: Value) {
        let key = self.key(defs, k);
        args.push(Arg { key, value });
    }

    /// A name from `StringIds`, or "[string N]" (counted) when the id is unknown.
    pub fn name(&mut self, defs: &mut Defs, id: i64, at: impl FnOnce() -> Location) -> StrId {
        match self.strings.intern(defs, id) {
            Some(s) => s,
            None => {
                self.diag.record(&d::UNKNOWN_STRING, at());
                defs.intern(&format!("[string {id}]"))
            }
        }
    }

    /// The colour `--nvtx-color-scheme` gives `name`.
    pub fn color_of(&mut self, defs: &mut Defs, name: StrId) -> Option<StrId> {
        if self.opts.nvtx_colors.is_empty() {
            return None;
        }
        if let Some(c) = self.colors.get(&name) {
            return *c;
        }
        let c = self
            .opts
            .nvtx_colors
            .color_of(defs.str(name))
            .map(str::to_string)
            .map(|c| defs.intern(&c));
        self.colors.insert(name, c);
        c
    }

    /// Turns one row into an event (or nothing).
    pub fn decode(&mut self, kind: &Kind, table: &str, row: &Row, ctx: &mut ImportCtx) -> Decoded {
        match kind {
            Kind::CudaApi => self.decode_cuda_api(table, row, ctx.defs),
            Kind::Cpu(spec) => self.decode_cpu(spec, table, row, ctx.defs),
            Kind::Gpu(spec) => self.decode_gpu(spec, table, row, ctx.defs),
            Kind::CudaEvent => self.decode_cuda_event(table, row, ctx.defs),
            Kind::Launch { src } => self.decode_launch(*src, row, ctx.defs),
            Kind::NvtxPushPop { emit } => {
                self.decode_nvtx_range(false, *emit, table, row, ctx.defs)
            }
            Kind::NvtxStartEnd => self.decode_nvtx_range(true, true, table, row, ctx.defs),
            Kind::NvtxMark => self.decode_nvtx_mark(table, row, ctx.defs),
            Kind::Projection => self.decode_projection(row, ctx.defs),
            Kind::Sample => self.decode_sample(table, row, ctx.defs),
            Kind::Sched => self.decode_sched(row, ctx.defs),
            Kind::GpuMetric => self.decode_gpu_metric(table, row, ctx.defs),
            Kind::MemoryUsage => self.decode_memory_usage(row, ctx.defs),
            Kind::Instant(spec) => self.decode_instant(spec, table, row, ctx.defs),
        }
    }

    /// Side effects of emitting `event`, in time order; returns what to emit (or nothing).
    pub fn on_emit(&mut self, mut event: Event, hook: Hook, defs: &mut Defs) -> Option<Event> {
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
            } => {
                let Event::Flow(f) = &mut event else {
                    return None;
                };
                // GPU work that started before (or with) its launch was already emitted
                // without a flow; a second launch with the same id gets none either.
                if gpu_start <= f.ts {
                    return None;
                }
                if self.pending.contains_key(&(src, grow)) {
                    self.diag
                        .record(&d::DUPLICATE_CORRELATION, crate::gpu::location(src, grow));
                    return None;
                }
                f.id = defs.new_flow_id();
                let nvtx = if self.opts.activities.contains(crate::Activity::NvtxKernel)
                    && src == crate::gpu::SRC_KERNEL
                {
                    self.open_nvtx_names(f.track, f.ts)
                } else {
                    Vec::new()
                };
                self.pending
                    .insert((src, grow), PendingLaunch { flow: f.id, nvtx });
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
                        if !p.nvtx.is_empty() {
                            let key = self.keys.nvtx;
                            let names: Vec<String> = p
                                .nvtx
                                .iter()
                                .map(|n| serde_json::to_string(defs.str(*n)).unwrap_or_default())
                                .collect();
                            s.args.push(Arg {
                                key,
                                value: Value::Json(format!("[{}]", names.join(",")).into()),
                            });
                        }
                        let end = Event::Flow(tracex_ir::FlowPoint {
                            id: p.flow,
                            role: tracex_ir::FlowRole::End,
                            track: s.track,
                            ts: s.ts,
                            bind: tracex_ir::FlowBind::Enclosing,
                            name: Some(self.keys.launch),
                            cat: Some(self.keys.cat_launch),
                        });
                        self.defer(end);
                    }
                    None => self
                        .diag
                        .record(&d::LAUNCH_NOT_FOUND, crate::gpu::location(src, rowid)),
                }
                Some(event)
            }
        }
    }

    /// Names of the NVTX push/pop ranges open on `track` at `ts`, outermost first.
    fn open_nvtx_names(&mut self, track: TrackId, ts: i64) -> Vec<StrId> {
        match self.nvtx_open.get_mut(&track) {
            Some(stack) => {
                stack.retain(|(e, _)| *e > ts);
                stack.iter().map(|(_, n)| *n).collect()
            }
            None => Vec::new(),
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

    /// Counts a skipped row.
    pub fn record_skip(diag: &mut Diagnostics, table: &str, rowid: i64, why: &Skip) {
        let at = Location::Row {
            table: table.to_string(),
            rowid,
        };
        match why {
            Skip::Bad(b) => diag.record_detail(&d::BAD_VALUE, at, b.describe()),
            Skip::NoId(col) => diag.record_detail(&d::MISSING_ID, at, format!("{col} is NULL")),
            Skip::Fatal(_) => {}
        }
    }

    /// `end - start` as a duration: `None` for an open range; a negative one is clamped to 0,
    /// counted, and kept in an arg.
    pub fn duration(
        &mut self,
        defs: &mut Defs,
        start: i64,
        end: Option<i64>,
        args: &mut Args,
        at: impl FnOnce() -> Location,
    ) -> Option<i64> {
        let end = match end {
            Some(e) => e,
            None => {
                self.diag.record(&ir_kinds::OPEN_SLICE, at());
                return None;
            }
        };
        let dur = end.saturating_sub(start);
        if dur < 0 {
            self.diag.record(&ir_kinds::SLICE_NEGATIVE_DURATION, at());
            self.arg(defs, args, "tracex_original_dur_ns", Value::Int(dur));
            return Some(0);
        }
        Some(dur)
    }
}

/// Where row `rowid` of `table` is, for diagnostics.
pub fn row_at(table: &str, rowid: i64) -> impl Fn() -> Location + Copy + '_ {
    move || Location::Row {
        table: table.to_string(),
        rowid,
    }
}

/// The start, end and thread of a CPU-side range: the first columns after the rowid.
pub fn thread_range(c: &mut Cols) -> Result<(i64, Option<i64>, i64), Skip> {
    let start = c.int("start")?;
    let end = c.opt_int("end")?;
    let Some(gtid) = c.opt_int("globalTid")? else {
        return Err(Skip::NoId("globalTid"));
    };
    Ok((start, end, gtid))
}

/// The parts of a slice or instant event.
pub struct Parts {
    pub track: TrackId,
    pub ts: i64,
    pub name: StrId,
    pub cat: StrId,
    pub args: Args,
}

impl Parts {
    /// A slice of duration `dur` (`None`: open) with these parts.
    pub fn slice(
        self,
        dur: Option<i64>,
        stack: Option<tracex_ir::StackId>,
        color: Option<StrId>,
    ) -> Event {
        let mut s = Slice::new(self.track, self.ts, 0, self.name);
        s.dur = dur;
        s.cat = Some(self.cat);
        s.args = self.args;
        s.stack = stack;
        s.color = color;
        Event::Slice(s)
    }

    /// The decoding of a row into an uncoloured instant with no hook.
    pub fn plain_instant(track: TrackId, ts: i64, name: StrId, cat: StrId, args: Args) -> Decoded {
        let parts = Parts {
            track,
            ts,
            name,
            cat,
            args,
        };
        Ok(Some((parts.instant(None), Hook::None)))
    }

    /// An instant with these parts.
    pub fn instant(self, color: Option<StrId>) -> Event {
        Event::Instant(Instant {
            track: self.track,
            ts: self.ts,
            name: self.name,
            cat: Some(self.cat),
            args: self.args,
            stack: None,
            color,
        })
    }
}

/// Records `kind` for `n` rows of `table`, the first of which is `first`.
pub fn record_rows(
    diag: &mut Diagnostics,
    kind: &'static DiagKind,
    table: &str,
    (n, first): (u64, i64),
    detail: Option<String>,
) {
    diag.record_n(
        kind,
        n,
        Location::Row {
            table: table.to_string(),
            rowid: first,
        },
        detail,
    );
}
