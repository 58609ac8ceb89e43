//! IR → folded stacks.
//!
//! The exporter reads the ordered, nested stream once and keeps what each view needs: sample
//! weights per (root frames, stack), self time per timeline stack, and the calls, GPU work and
//! launch-time samples of the GPU join. At `finish` it picks the view (`--fold`), writes the
//! lines sorted by stack, and moves the file into place. Memory: unique stacks, plus the calls,
//! flows and launch-time samples of the GPU join.

mod clean;
pub mod gpu;
mod lanes;
mod lines;
mod unordered;

use std::io::Write;

use rustc_hash::FxHashMap;
use tracex_ir::io::{OutFile, OutputTarget};
use tracex_ir::kind::{classify, SliceKind};
use tracex_ir::{
    ArgsRead, Defs, Diagnostics, Error, Event, FlowBind, FlowId, FlowPoint, FlowRole, Location,
    ProcessId, Result, Sample, Sink, Slice, StackId, StrId, TrackId, TrackKind, Value,
};

use crate::diag as d;
use crate::differential::{DIFF_AFTER, DIFF_BEFORE};
use crate::options::{ExportOptions, Fold, Weight};
use clean::{Cleaner, Cleaning};
use gpu::{AtLaunch, Call, Gpu, Work};
use lanes::{Lanes, Open, Role};
use lines::{Tree, Weights};
use unordered::{Part, Unordered};

pub use gpu::Summary;
pub use lines::Written;

/// Sample weights of one (root frames, stack): the weight, and a differential file's first column.
#[derive(Default, Clone, Copy)]
struct SampleWeight {
    main: i64,
    before: i64,
}

pub struct Exporter {
    out: Option<OutFile>,
    opts: ExportOptions,
    tree: Tree,
    lanes: Lanes,
    /// Whether the timeline view can be chosen: not when the GPU view is asked for (`--fold
    /// gpu`, or a GPU weight), where slices only bind flows to calls and GPU work, and their
    /// timeline stacks were a fifth of the exporter's work in a GPU merge.
    timeline: bool,
    gpu: Gpu,
    samples: FxHashMap<(Option<StackId>, StackId), SampleWeight>,
    /// Whether samples of differential files (named [`DIFF_BEFORE`] or [`DIFF_AFTER`]) and
    /// other samples were seen.
    differential_samples: bool,
    plain_samples: bool,
    samples_seen: u64,
    stackless_samples: u64,
    slices_seen: u64,
    non_thread_slices: u64,
    prefixes: FxHashMap<TrackId, Option<StackId>>,
    /// What each category is (and whether it is the CUDA runtime's), and which call names
    /// launch kernels: asked for every slice, answered once.
    kinds: FxHashMap<Option<StrId>, (SliceKind, bool)>,
    launch_names: FxHashMap<StrId, bool>,
    /// Flow points bound to the next slice on their track (`FlowBind::Next`), by root track.
    waiting: FxHashMap<TrackId, Vec<FlowPoint>>,
    trace_end: i64,
    written: Option<Written>,
    summary: Option<Summary>,
    /// Records of the events, when they come unordered ([`Sink::unordered`]).
    unordered: Option<Box<Unordered>>,
}

impl Exporter {
    pub fn create(target: &OutputTarget, opts: &ExportOptions) -> Result<Exporter> {
        Ok(Exporter {
            out: Some(OutFile::create(target)?),
            ..Exporter::new(opts)
        })
    }

    /// An exporter that writes nothing itself: [`Exporter::finish_into`] writes its lines
    /// wherever the caller wants (the SVG flame graph renders them).
    pub fn new(opts: &ExportOptions) -> Exporter {
        Exporter {
            out: None,
            opts: opts.clone(),
            tree: Tree::default(),
            lanes: Lanes::default(),
            timeline: !matches!(
                (opts.fold, opts.weight),
                (Fold::Gpu, _) | (Fold::Auto, Some(Weight::GpuNs | Weight::GpuUs))
            ),
            // the upstream merge that gpu-us reproduces cleans frames its own way
            gpu: Gpu::new(Cleaner::new(match opts.weight {
                Some(Weight::GpuUs) => Cleaning::Upstream,
                _ => Cleaning::Original,
            })),
            samples: FxHashMap::default(),
            differential_samples: false,
            plain_samples: false,
            samples_seen: 0,
            stackless_samples: 0,
            slices_seen: 0,
            non_thread_slices: 0,
            prefixes: FxHashMap::default(),
            kinds: FxHashMap::default(),
            launch_names: FxHashMap::default(),
            waiting: FxHashMap::default(),
            trace_end: i64::MIN,
            written: None,
            summary: None,
            unordered: None,
        }
    }

    /// Lines and total weight written (after `finish`).
    pub fn written(&self) -> Option<Written> {
        self.written
    }

    /// The counts of the GPU join (after `finish`, when the GPU view was written).
    pub fn summary(&self) -> Option<&Summary> {
        self.summary.as_ref()
    }

    /// The root frames of stacks seen on `root` (`--prefix process,thread`).
    fn prefix(&mut self, defs: &Defs, root: TrackId) -> Option<StackId> {
        root_frames(&mut self.tree, &mut self.prefixes, &self.opts, defs, root)
    }

    fn slice(&mut self, defs: &Defs, s: &Slice) {
        self.slices_seen += 1;
        self.trace_end = self.trace_end.max(s.end_or(s.ts));
        if !defs.track(s.track).is_strict() {
            self.non_thread_slices += 1;
            return;
        }
        let root = defs.root_track(s.track);
        let base = self.prefix(defs, root);
        let role = match self.part(defs, s) {
            Part::Api { launch } => {
                let call = launch.then(|| self.register_call(defs, root, s, s.stack));
                Role::Api {
                    name: s.name,
                    stack: s.stack,
                    call,
                }
            }
            Part::Gpu(kind) => Role::Gpu {
                name: s.name,
                dur: s.dur.unwrap_or(0),
                kind,
                work: None,
                correlation: correlation_arg(defs, s),
            },
            Part::Other => Role::Other,
        };
        let end = s.dur.map_or(i64::MAX, |d| s.ts.saturating_add(d));
        let name = self.timeline.then(|| self.tree.trace_name(defs, s.name));
        let open = self
            .lanes
            .push(s.track, root, s.ts, end, name, &mut self.tree, base, role);
        let start = open.start;
        // Flow points waiting for the next slice on this track bind to this one.
        if let Some(waiting) = self.waiting.get_mut(&root) {
            let (ready, later): (Vec<_>, Vec<_>) = waiting.drain(..).partition(|f| f.ts <= start);
            *waiting = later;
            for f in ready {
                let open = self
                    .lanes
                    .enclosing(root, start, |r| flow_rank(&f, r))
                    .expect("just opened");
                attach(
                    &mut self.gpu,
                    &mut self.prefixes,
                    defs,
                    open,
                    root,
                    &f,
                    None,
                );
            }
        }
    }

    /// What slice `s` (on a thread's or a stream's track) is to the GPU join; kernels are
    /// counted for the summary on the way.
    fn part(&mut self, defs: &Defs, s: &Slice) -> Part {
        let (kind, runtime) = *self.kinds.entry(s.cat).or_insert_with(|| {
            let cat = defs.opt_str(s.cat);
            let runtime = cat.is_some_and(|c| c.eq_ignore_ascii_case("cuda_runtime"));
            (classify(cat), runtime)
        });
        match kind {
            SliceKind::CudaApi => Part::Api {
                launch: runtime
                    && *self
                        .launch_names
                        .entry(s.name)
                        .or_insert_with(|| defs.str(s.name).contains("LaunchKernel")),
            },
            SliceKind::Kernel | SliceKind::Memcpy | SliceKind::Memset => {
                if kind == SliceKind::Kernel {
                    let k = self.gpu.kernels.entry(s.name).or_default();
                    k.0 += 1;
                    k.1 += s.dur.unwrap_or(0);
                }
                Part::Gpu(kind)
            }
            _ => Part::Other,
        }
    }

    /// An event that came unordered: counted as in order, and recorded for the join.
    fn unordered_event(&mut self, defs: &Defs, event: &Event) -> Result<()> {
        let Some(mut u) = self.unordered.take() else {
            return Ok(());
        };
        let done = match event {
            Event::Slice(s) => {
                self.slices_seen += 1;
                let part = if defs.track(s.track).is_strict() {
                    self.part(defs, s)
                } else {
                    self.non_thread_slices += 1;
                    Part::Other
                };
                let correlation = match part {
                    Part::Gpu(_) => correlation_arg(defs, s),
                    _ => None,
                };
                u.slice(defs, s, part, correlation)
            }
            Event::Flow(f) => u.flow(defs, f),
            Event::Sample(s) => {
                self.samples_seen += 1;
                if s.stack.is_none() {
                    self.stackless_samples += 1;
                }
                let clean = match (s.ts, s.stack) {
                    (Some(_), Some(stack)) => {
                        let clean = self.gpu.cleaner.clean(defs, &mut self.tree, stack);
                        self.gpu.cleaner.get(clean).launch.then_some(clean)
                    }
                    _ => None,
                };
                u.sample(defs, s, clean)
            }
            Event::Instant(_) | Event::Counter(_) => {
                u.other();
                Ok(())
            }
        };
        self.unordered = Some(u);
        done
    }

    fn register_call(
        &mut self,
        defs: &Defs,
        root: TrackId,
        s: &Slice,
        stack: Option<StackId>,
    ) -> u32 {
        let prefix = self.prefix(defs, root);
        let root = self.gpu.root(defs, root, prefix);
        self.gpu.add_call(Call {
            root,
            ts: s.ts,
            dur: s.dur.unwrap_or(0),
            name: s.name,
            stack,
            launch: true,
        })
    }

    fn flow(&mut self, defs: &Defs, f: &FlowPoint) {
        let root = defs.root_track(f.track);
        if f.bind == FlowBind::Next && f.role != FlowRole::Start {
            self.waiting.entry(root).or_default().push(*f);
            return;
        }
        let around = match f.role {
            FlowRole::Start => self.lanes.call_stack_at(root, f.ts),
            _ => None,
        };
        let rank = |r: &Role| flow_rank(f, r);
        let bound = if f.bind == FlowBind::Enclosing {
            // the flow binder put the point on the lane of its slice
            self.lanes.bound(f.track, f.ts, rank)
        } else {
            self.lanes.enclosing(root, f.ts, rank)
        };
        match bound {
            Some(open) => attach(
                &mut self.gpu,
                &mut self.prefixes,
                defs,
                open,
                root,
                f,
                around,
            ),
            None if f.role == FlowRole::End => {
                self.gpu.open_flows.remove(&f.id);
            }
            None => {}
        }
    }

    fn sample(&mut self, defs: &Defs, s: &Sample) {
        self.samples_seen += 1;
        if let Some(ts) = s.ts {
            self.trace_end = self.trace_end.max(ts);
        }
        let Some(stack) = s.stack else {
            self.stackless_samples += 1;
            return;
        };
        let root = defs.root_track(s.track);
        let prefix = self.prefix(defs, root);
        let name = defs.opt_str(s.name);
        let w = self.samples.entry((prefix, stack)).or_default();
        if name == Some(DIFF_BEFORE) {
            self.differential_samples = true;
            w.before += s.weight;
        } else {
            if name == Some(DIFF_AFTER) {
                self.differential_samples = true;
            } else {
                self.plain_samples = true;
            }
            w.main += s.weight;
        }
        if let Some(ts) = s.ts {
            let clean = self.gpu.cleaner.clean(defs, &mut self.tree, stack);
            if self.gpu.cleaner.get(clean).launch {
                let root = self.gpu.root(defs, root, prefix);
                self.gpu.at_launch.push(AtLaunch {
                    root,
                    clean,
                    ts,
                    weight: s.weight,
                });
            }
        }
    }

    /// The view to write and its weight, or why the requested one cannot be written.
    fn choose(&self) -> Result<(Fold, Weight)> {
        let has_samples = self.samples_seen > 0;
        let has_slices = !self.lanes.self_time.is_empty();
        let fold = match (self.opts.fold, self.opts.weight) {
            (Fold::Auto, Some(Weight::Ns | Weight::Us)) => Fold::Timeline,
            (Fold::Auto, Some(Weight::GpuNs | Weight::GpuUs)) => Fold::Gpu,
            (Fold::Auto, _) if self.gpu.possible() => Fold::Gpu,
            (Fold::Auto, _) if has_samples => Fold::Samples,
            (Fold::Auto, _) => Fold::Timeline,
            (f, _) => f,
        };
        let unsupported = |m: String| Err(Error::Unsupported(m));
        match fold {
            Fold::Gpu if !self.gpu.possible() => {
                return unsupported("folding GPU work by CPU stack needs CUDA launch calls joined to GPU work (flows) and CPU stacks for them: backtraces on the calls, or timed CPU samples caught at cudaLaunchKernel; this trace has neither".into());
            }
            Fold::Samples if !has_samples => {
                return unsupported("--fold samples: the trace has no samples".into());
            }
            Fold::Timeline if !has_slices => {
                return unsupported(if has_samples {
                    "the trace has no slices on threads or GPU streams to fold into a timeline flame graph (it has samples: use --fold samples)".into()
                } else {
                    "nothing to fold: the trace has no samples and no slices on threads or GPU streams".into()
                });
            }
            _ => {}
        }
        let weight = self.opts.weight.unwrap_or(match fold {
            Fold::Gpu => self.gpu.default_weight(),
            Fold::Timeline => Weight::Ns,
            _ => Weight::Samples,
        });
        let ok = match fold {
            Fold::Gpu => matches!(weight, Weight::Samples | Weight::GpuNs | Weight::GpuUs),
            Fold::Timeline => matches!(weight, Weight::Samples | Weight::Ns | Weight::Us),
            _ => weight == Weight::Samples,
        };
        if !ok {
            return unsupported(format!(
                "--weight {} does not apply to the {} view (GPU view: samples, gpu-ns or gpu-us; timelines: ns, us or samples; samples: samples)",
                weight_name(weight),
                fold_name(fold)
            ));
        }
        Ok((fold, weight))
    }

    fn sample_weights(&mut self, defs: &Defs, diag: &mut Diagnostics) -> Weights {
        let mut w = Weights {
            differential: self.differential_samples && !self.plain_samples,
            ..Weights::default()
        };
        if self.differential_samples && self.plain_samples {
            diag.record(&d::MIXED_DIFFERENTIAL, Location::Nowhere);
        }
        let mut keys: Vec<_> = self.samples.iter().map(|(k, v)| (*k, *v)).collect();
        keys.sort_unstable_by_key(|(k, _)| *k);
        for ((prefix, stack), sw) in keys {
            let node = self
                .tree
                .extend_with_trace_stack(defs, prefix, stack)
                .expect("a stack has a frame");
            w.add(node, sw.main);
            if w.differential {
                w.add_before(node, sw.before);
            }
        }
        w
    }

    fn timeline_weights(&mut self, weight: Weight) -> Weights {
        let mut w = Weights::default();
        for (&node, &(ns, calls)) in &self.lanes.self_time {
            w.add(
                node,
                match weight {
                    Weight::Samples => calls,
                    Weight::Us => (ns + 500) / 1000,
                    _ => ns,
                },
            );
        }
        w
    }
}

/// The root frames of stacks seen on `root` (`--prefix process,thread`), made once per root.
fn root_frames(
    tree: &mut Tree,
    prefixes: &mut FxHashMap<TrackId, Option<StackId>>,
    opts: &ExportOptions,
    defs: &Defs,
    root: TrackId,
) -> Option<StackId> {
    if let Some(&p) = prefixes.get(&root) {
        return p;
    }
    let mut names = Vec::new();
    let track = defs.track(root).clone();
    if opts.prefix.process {
        if let Some(p) = track.process {
            names.push(process_frame(defs, p));
        }
    }
    if opts.prefix.thread {
        names.push(match track.kind {
            TrackKind::Thread(th) => {
                let t = defs.thread(th);
                match (t.name, t.os_tid) {
                    (Some(n), Some(tid)) => format!("{} (tid {tid})", defs.str(n)),
                    _ => defs.track_display_name(root),
                }
            }
            _ => defs.track_display_name(root),
        });
    }
    let ids: Vec<_> = names.iter().map(|n| tree.name(n)).collect();
    let p = tree.extend(None, ids);
    prefixes.insert(root, p);
    p
}

/// The frame naming a process: `name (pid N)`, or what viewers would show.
fn process_frame(defs: &Defs, p: ProcessId) -> String {
    let proc = defs.process(p);
    match (proc.name, proc.os_pid) {
        (Some(n), Some(pid)) => format!("{} (pid {pid})", defs.str(n)),
        _ => defs.process_display_name(p),
    }
}

pub fn weight_name(w: Weight) -> &'static str {
    match w {
        Weight::Samples => "samples",
        Weight::Ns => "ns",
        Weight::Us => "us",
        Weight::GpuNs => "gpu-ns",
        Weight::GpuUs => "gpu-us",
    }
}

pub fn fold_name(f: Fold) -> &'static str {
    match f {
        Fold::Auto => "auto",
        Fold::Gpu => "gpu",
        Fold::Samples => "samples",
        Fold::Timeline => "timeline",
    }
}

/// Which of several slices starting together a flow point prefers: a start a CUDA call (a
/// kernel launch first), a step or end GPU work, first the work whose correlation id is the
/// flow's id (flows keep the input's correlation ids): CUPTI JSON has no streams, so kernels
/// that start together nest on one track, and only the id tells which is the launch's.
fn flow_rank(f: &FlowPoint, r: &Role) -> u8 {
    match (f.role, r) {
        (FlowRole::Start, Role::Api { call: Some(_), .. }) => 2,
        (FlowRole::Start, Role::Api { .. }) => 1,
        (FlowRole::Step | FlowRole::End, Role::Gpu { correlation, .. }) => {
            1 + u8::from(*correlation == Some(f.id.0))
        }
        _ => 0,
    }
}

/// The keys of the correlation id in a GPU slice's args (`correlationId` from CUPTI,
/// `correlation` from Kineto and tracex's nsys import): the only args folded output reads.
const CORRELATION_KEYS: &[&str] = &["correlationId", "correlation"];

/// The correlation id in a GPU slice's args.
fn correlation_arg(defs: &Defs, s: &Slice) -> Option<u64> {
    s.args.iter().find_map(|a| match &a.value {
        Value::Int(i) if CORRELATION_KEYS.contains(&defs.str(a.key)) => u64::try_from(*i).ok(),
        _ => None,
    })
}

/// Binds flow point `f` to the open slice `open` of `root`: a start on a CUDA call opens the
/// flow (a call without a backtrace takes `around`, that of a CUDA call it runs inside); a step
/// or end on GPU work joins the work to the flow's call.
#[allow(clippy::too_many_arguments)]
fn attach(
    gpu: &mut Gpu,
    prefixes: &mut FxHashMap<TrackId, Option<StackId>>,
    defs: &Defs,
    open: &mut Open,
    root: TrackId,
    f: &FlowPoint,
    around: Option<StackId>,
) {
    let id: FlowId = f.id;
    match (f.role, &mut open.role) {
        (FlowRole::Start, Role::Api { name, stack, call }) => {
            let c = *call.get_or_insert_with(|| {
                let prefix = prefixes.get(&root).copied().flatten();
                let root = gpu.root(defs, root, prefix);
                gpu.add_call(Call {
                    root,
                    ts: open.start,
                    dur: open.end.saturating_sub(open.start),
                    name: *name,
                    stack: *stack,
                    launch: false,
                })
            });
            gpu.lend_stack(c, around);
            gpu.open_flows.insert(id, c);
        }
        (
            FlowRole::Step | FlowRole::End,
            Role::Gpu {
                name,
                dur,
                kind,
                work,
                ..
            },
        ) => {
            let w = *work.get_or_insert_with(|| {
                gpu.works.push(Work {
                    name: *name,
                    ts: open.start,
                    dur: *dur,
                    kind: *kind,
                });
                gpu.works.len() as u32 - 1
            });
            let call = if f.role == FlowRole::End {
                gpu.open_flows.remove(&id)
            } else {
                gpu.open_flows.get(&id).copied()
            };
            if let Some(c) = call {
                gpu.edges.push((c, w));
            }
        }
        (FlowRole::End, _) => {
            gpu.open_flows.remove(&id);
        }
        _ => {}
    }
}

impl Sink for Exporter {
    fn event(&mut self, defs: &Defs, _: &mut Diagnostics, event: Event) -> Result<()> {
        if self.unordered.is_some() {
            return self.unordered_event(defs, &event);
        }
        match &event {
            Event::Slice(s) => self.slice(defs, s),
            Event::Flow(f) => self.flow(defs, f),
            Event::Sample(s) => self.sample(defs, s),
            Event::Instant(i) => self.trace_end = self.trace_end.max(i.ts),
            Event::Counter(c) => self.trace_end = self.trace_end.max(c.ts),
        }
        Ok(())
    }

    fn finish(&mut self, defs: &Defs, diag: &mut Diagnostics) -> Result<()> {
        let mut out = self.out.take().expect("finish once, after create");
        self.finish_into(defs, diag, &mut out)?;
        out.flush()?;
        out.commit()?;
        if self.opts.summary {
            if let Some(s) = &self.summary {
                eprint!("{}", s.render());
            }
        }
        Ok(())
    }

    fn args_read(&self) -> ArgsRead {
        ArgsRead::Only(CORRELATION_KEYS)
    }

    /// Yes for the GPU view (known from the options), which works out what it needs of the
    /// order itself ([`unordered`]).
    fn unordered(&mut self) -> bool {
        if self.timeline {
            return false;
        }
        self.unordered = Some(Box::default());
        true
    }

    fn begin_input(&mut self) {
        if let Some(u) = &mut self.unordered {
            u.begin_input();
        }
    }

    fn offsets(&mut self, offsets: &[i64]) {
        if let Some(u) = &mut self.unordered {
            u.set_offsets(offsets);
        }
    }
}

impl Exporter {
    /// Picks the view, writes its lines to `out` and says what was written: the view, its
    /// weight, the line count and total.
    pub fn finish_into(
        &mut self,
        defs: &Defs,
        diag: &mut Diagnostics,
        out: &mut dyn Write,
    ) -> Result<(Fold, Weight, Written)> {
        if let Some(u) = self.unordered.take() {
            let (tree, prefixes, opts) = (&mut self.tree, &mut self.prefixes, &self.opts);
            let mut prefix = |root| root_frames(tree, prefixes, opts, defs, root);
            u.resolve(&mut self.gpu, &mut prefix, defs, diag)?;
        }
        self.lanes.close_all(self.trace_end);
        diag.record_n(
            &d::OPEN_SLICE,
            self.lanes.closed_open,
            Location::Nowhere,
            None::<String>,
        );
        let (fold, weight) = self.choose()?;
        let weights = match fold {
            Fold::Gpu => {
                let (w, summary) =
                    self.gpu
                        .fold(defs, diag, &mut self.tree, weight, self.opts.tolerance_ns);
                let unused =
                    self.samples_seen - self.gpu.at_launch.len() as u64 + summary.at_launch_unused;
                diag.record_n(&d::NOT_FOLDED, unused, Location::Nowhere, Some("samples"));
                self.summary = Some(summary);
                w
            }
            Fold::Samples => {
                diag.record_n(
                    &d::SAMPLE_WITHOUT_STACK,
                    self.stackless_samples,
                    Location::Nowhere,
                    None::<String>,
                );
                diag.record_n(
                    &d::NOT_FOLDED,
                    self.slices_seen,
                    Location::Nowhere,
                    Some("slices"),
                );
                self.sample_weights(defs, diag)
            }
            _ => {
                diag.record_n(
                    &d::NON_THREAD_SLICES,
                    self.non_thread_slices,
                    Location::Nowhere,
                    None::<String>,
                );
                diag.record_n(
                    &d::NOT_FOLDED,
                    self.samples_seen,
                    Location::Nowhere,
                    Some("samples"),
                );
                self.timeline_weights(weight)
            }
        };
        let written = lines::write(&self.tree, &weights, diag, out)?;
        if written.lines == 0 {
            return Err(Error::Unsupported(format!(
                "nothing to write: every stack of the {} view has weight 0 with --weight {}",
                fold_name(fold),
                weight_name(weight)
            )));
        }
        self.written = Some(written);
        Ok((fold, weight, written))
    }
}
