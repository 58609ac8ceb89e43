//! GPU work by the CPU stack that launched it.
//!
//! Calls are CUDA API slices; works are kernel, copy and set slices; a flow from a call to a work
//! joins them (CUPTI correlation ids, nsys correlation ids). A call's CPU stack is its own
//! backtrace (nsys `CUDA_CALLCHAINS`), or the stack of a CPU sample caught at the launch (the
//! eBPF uprobe on `cudaLaunchKernel`): each such sample is matched to the `cudaLaunchKernel`
//! runtime call nearest in time in its process, within the tolerance, by binary search over the
//! process's launches sorted by time. In a process where calls carry backtraces, those are used
//! and samples are not matched.

use rustc_hash::{FxHashMap, FxHashSet};
use tracex_ir::kind::SliceKind;
use tracex_ir::{Defs, Diagnostics, FlowId, Location, StackId, StrId};

use super::clean::{api_frame, Cleaner};
use super::lines::{Name, Tree, Weights};
use crate::diag as d;
use crate::options::Weight;

/// A CUDA API call that takes part in the join.
#[derive(Clone, Debug)]
pub struct Call {
    /// The OS pid of the calling process: samples match launches of the same pid.
    pub pid: Option<i64>,
    pub ts: i64,
    pub name: StrId,
    pub stack: Option<StackId>,
    /// A `cudaLaunchKernel` runtime call: a candidate for samples caught at a launch.
    pub launch: bool,
    /// Root frames (`--prefix`) of the calling thread.
    pub prefix: Option<StackId>,
}

/// GPU work launched by a call.
#[derive(Clone, Debug)]
pub struct Work {
    pub name: StrId,
    pub dur: i64,
    pub kind: SliceKind,
}

/// A timed CPU sample whose stack contains a launch frame.
#[derive(Clone, Debug)]
pub struct AtLaunch {
    pub pid: Option<i64>,
    pub ts: i64,
    pub weight: i64,
    pub prefix: Option<StackId>,
    /// Index of its cleaned stack in the [`Cleaner`].
    pub clean: u32,
}

#[derive(Default)]
pub struct Gpu {
    pub calls: Vec<Call>,
    pub works: Vec<Work>,
    /// (call, work) pairs joined by a flow.
    pub edges: Vec<(u32, u32)>,
    /// Flows whose start bound to a call, until their end arrives.
    pub open_flows: FxHashMap<FlowId, u32>,
    pub at_launch: Vec<AtLaunch>,
    pub cleaner: Cleaner,
    /// Every kernel slice seen: count and total ns by name, for the summary.
    pub kernels: FxHashMap<StrId, (u64, i64)>,
}

/// Counts of the join, for `--summary` and tests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub tolerance_ns: i64,
    /// CPU stacks caught at a launch, and how they ended.
    pub at_launch: u64,
    pub matched: u64,
    pub pending_no_launch: u64,
    pub pending_no_gpu: u64,
    /// Samples caught at a launch in processes whose calls have backtraces (not used).
    pub at_launch_unused: u64,
    /// Calls joined to GPU work, and those whose stack came from a backtrace.
    pub calls_with_gpu: u64,
    pub calls_with_backtrace: u64,
    /// GPU work attributed to no CPU stack, and its total time.
    pub work_without_stack: u64,
    pub work_without_stack_ns: i64,
    /// Kernels seen in the trace: (name, count, total ns), most frequent first.
    pub kernels: Vec<(String, u64, i64)>,
}

const NONE: u32 = u32::MAX;

/// The launch nearest `ts` among `launches` (sorted by time, then index), strictly closer than
/// `tolerance`; at equal distance the one that came first, as the reference does.
pub fn nearest(launches: &[(i64, u32)], ts: i64, tolerance: i64) -> Option<u32> {
    let i = launches.partition_point(|&(t, _)| t < ts);
    let mut best: Option<(i64, u32)> = launches.get(i).map(|&(t, c)| (t.saturating_sub(ts), c));
    if i > 0 {
        let before = launches[i - 1].0;
        // the first of the launches at that time
        let j = launches[..i].partition_point(|&(t, _)| t < before);
        let (dist, c) = (ts.saturating_sub(before), launches[j].1);
        if best.is_none_or(|(bd, bc)| dist < bd || (dist == bd && c < bc)) {
            best = Some((dist, c));
        }
    }
    best.filter(|&(dist, _)| dist < tolerance).map(|(_, c)| c)
}

/// The leaf frame of a work item: `[GPU_Kernel]name`, `[GPU_Memcpy]name`, ...
fn gpu_frame(kind: SliceKind, name: &str) -> String {
    let tag = match kind {
        SliceKind::Kernel => "GPU_Kernel",
        SliceKind::Memcpy => "GPU_Memcpy",
        SliceKind::Memset => "GPU_Memset",
        _ => "GPU",
    };
    format!("[{tag}]{name}")
}

/// Builds output stacks, caching the nodes they share.
struct Builder<'a> {
    tree: &'a mut Tree,
    weights: Weights,
    leaf_names: FxHashMap<u32, Name>,
    sample_paths: FxHashMap<(Option<StackId>, u32), StackId>,
    pending: Option<Name>,
}

impl Builder<'_> {
    fn work_leaf(&mut self, defs: &Defs, works: &[Work], w: u32) -> Name {
        if let Some(&n) = self.leaf_names.get(&w) {
            return n;
        }
        let work = &works[w as usize];
        let n = self.tree.name(&gpu_frame(work.kind, defs.str(work.name)));
        self.leaf_names.insert(w, n);
        n
    }

    fn pending_leaf(&mut self) -> Name {
        let tree = &mut *self.tree;
        *self
            .pending
            .get_or_insert_with(|| tree.name("[GPU_Launch_Pending]"))
    }
}

impl Gpu {
    /// Whether the trace has what the GPU view needs: samples caught at a launch and launch
    /// calls to match them with, or calls with backtraces joined to GPU work.
    pub fn possible(&self) -> bool {
        let launches = self.calls.iter().any(|c| c.launch);
        let traced = self
            .edges
            .iter()
            .any(|&(c, _)| self.calls[c as usize].stack.is_some());
        (launches && !self.at_launch.is_empty()) || traced
    }

    /// Processes whose calls joined to GPU work carry backtraces: there, backtraces give the
    /// stacks and samples caught at launches are not matched.
    fn traced(&self) -> FxHashSet<Option<i64>> {
        self.edges
            .iter()
            .map(|&(c, _)| &self.calls[c as usize])
            .filter(|c| c.stack.is_some())
            .map(|c| c.pid)
            .collect()
    }

    /// The weight the view uses unless told otherwise: samples when stacks come from samples
    /// caught at launches (as the reference), GPU time when they come from backtraces.
    pub fn default_weight(&self) -> Weight {
        let traced = self.traced();
        if self.at_launch.iter().any(|s| !traced.contains(&s.pid)) {
            Weight::Samples
        } else {
            Weight::GpuNs
        }
    }

    /// The output stacks and weights of the GPU view.
    pub fn fold(
        &mut self,
        defs: &Defs,
        diag: &mut Diagnostics,
        tree: &mut Tree,
        weight: Weight,
        tolerance: i64,
    ) -> (Weights, Summary) {
        let by_ns = weight == Weight::GpuNs;
        let mut sum = Summary {
            tolerance_ns: tolerance,
            ..Summary::default()
        };
        self.edges.sort_unstable();
        self.edges.dedup();
        // The work a launch is matched to: its first kernel, else its first other work.
        let mut first = vec![NONE; self.calls.len()];
        for &(c, w) in &self.edges {
            let f = &mut first[c as usize];
            let is_kernel = |w: u32| self.works[w as usize].kind == SliceKind::Kernel;
            if *f == NONE || (!is_kernel(*f) && is_kernel(w)) {
                *f = w;
            }
        }
        let traced = self.traced();
        let mut launches: FxHashMap<Option<i64>, Vec<(i64, u32)>> = FxHashMap::default();
        for (i, c) in self.calls.iter().enumerate() {
            if c.launch {
                launches.entry(c.pid).or_default().push((c.ts, i as u32));
            }
        }
        for v in launches.values_mut() {
            v.sort_unstable();
        }
        let mut b = Builder {
            tree,
            weights: Weights::default(),
            leaf_names: FxHashMap::default(),
            sample_paths: FxHashMap::default(),
            pending: None,
        };
        let mut matched_calls = vec![false; self.calls.len()];
        for s in &self.at_launch {
            if traced.contains(&s.pid) {
                sum.at_launch_unused += 1;
                continue;
            }
            sum.at_launch += 1;
            let call = launches
                .get(&s.pid)
                .and_then(|l| nearest(l, s.ts, tolerance));
            let work = call.map(|c| first[c as usize]).filter(|&w| w != NONE);
            let leaf = match (call, work) {
                (_, Some(w)) => {
                    sum.matched += 1;
                    b.work_leaf(defs, &self.works, w)
                }
                (Some(_), None) => {
                    sum.pending_no_gpu += 1;
                    b.pending_leaf()
                }
                (None, _) => {
                    sum.pending_no_launch += 1;
                    b.pending_leaf()
                }
            };
            if let Some(c) = call {
                matched_calls[c as usize] = true;
            }
            let path = match b.sample_paths.get(&(s.prefix, s.clean)) {
                Some(&p) => p,
                None => {
                    let frames = self.cleaner.get(s.clean).frames.iter().copied();
                    let p = b.tree.extend(s.prefix, frames).expect("has a launch frame");
                    b.sample_paths.insert((s.prefix, s.clean), p);
                    p
                }
            };
            let node = b.tree.child(Some(path), leaf);
            let w = match (by_ns, work) {
                (false, _) => s.weight,
                (true, Some(w)) => self.works[w as usize].dur,
                (true, None) => 0,
            };
            b.weights.add(node, w);
        }
        // Calls with backtraces (and what no stack covers), one group of edges per call.
        let mut i = 0;
        while i < self.edges.len() {
            let c = self.edges[i].0;
            let j = i + self.edges[i..].iter().take_while(|e| e.0 == c).count();
            let call = self.calls[c as usize].clone();
            sum.calls_with_gpu += 1;
            let path = match call.stack {
                Some(stack) if traced.contains(&call.pid) => {
                    sum.calls_with_backtrace += 1;
                    Some(self.backtrace_path(defs, b.tree, &call, stack))
                }
                _ => None,
            };
            for &(_, w) in &self.edges[i..j] {
                let work = &self.works[w as usize];
                match path {
                    Some(p) => {
                        let leaf = b.work_leaf(defs, &self.works, w);
                        let node = b.tree.child(Some(p), leaf);
                        b.weights.add(node, if by_ns { work.dur } else { 1 });
                    }
                    None if matched_calls[c as usize] && first[c as usize] == w => {}
                    None => {
                        sum.work_without_stack += 1;
                        sum.work_without_stack_ns += work.dur;
                    }
                }
            }
            i = j;
        }
        let pending = sum.pending_no_gpu + sum.pending_no_launch;
        diag.record_n(
            &d::GPU_LAUNCH_PENDING,
            pending,
            Location::Nowhere,
            None::<String>,
        );
        diag.record_n(
            &d::GPU_WORK_WITHOUT_STACK,
            sum.work_without_stack,
            Location::Nowhere,
            Some(format!("{} ns of GPU time", sum.work_without_stack_ns)),
        );
        let mut kernels: Vec<(String, u64, i64)> = self
            .kernels
            .iter()
            .map(|(&n, &(count, ns))| (defs.str(n).to_string(), count, ns))
            .collect();
        kernels.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        sum.kernels = kernels;
        (b.weights, sum)
    }

    /// A backtrace cleaned as the reference cleans uprobe stacks, cut after the call's own
    /// frame (frames below it are inside the CUDA libraries), which is added if missing.
    fn backtrace_path(
        &mut self,
        defs: &Defs,
        tree: &mut Tree,
        call: &Call,
        stack: StackId,
    ) -> StackId {
        let api = tree.name(api_frame(defs.str(call.name)));
        let cleaned = self.cleaner.clean(defs, tree, stack);
        let mut frames = self.cleaner.get(cleaned).frames.clone();
        match frames.iter().rposition(|&f| f == api) {
            Some(k) => frames.truncate(k + 1),
            None => frames.push(api),
        }
        tree.extend(call.prefix, frames)
            .expect("has the call frame")
    }
}

impl Summary {
    /// The text `--summary` prints.
    pub fn render(&self) -> String {
        let ms = |ns: i64| ns as f64 / 1e6;
        let mut s = String::from("tracex: GPU flame graph summary\n");
        s.push_str(&format!(
            "  CPU stacks caught at a launch: {} (matched to GPU work {}, unmatched {}: {} with no launch within {} ms in their process, {} whose launch has no GPU work)\n",
            self.at_launch,
            self.matched,
            self.pending_no_launch + self.pending_no_gpu,
            self.pending_no_launch,
            ms(self.tolerance_ns),
            self.pending_no_gpu,
        ));
        if self.at_launch_unused > 0 {
            s.push_str(&format!(
                "  samples at a launch not used (their process has backtraces): {}\n",
                self.at_launch_unused
            ));
        }
        s.push_str(&format!(
            "  calls joined to GPU work: {} ({} with a backtrace); GPU work without a CPU stack: {} ({:.3} ms, not in the output)\n",
            self.calls_with_gpu,
            self.calls_with_backtrace,
            self.work_without_stack,
            ms(self.work_without_stack_ns),
        ));
        let total: i64 = self.kernels.iter().map(|k| k.2).sum();
        let count: u64 = self.kernels.iter().map(|k| k.1).sum();
        s.push_str(&format!(
            "  GPU kernels: {count}, total kernel time {:.3} ms\n",
            ms(total)
        ));
        for (name, n, ns) in &self.kernels {
            s.push_str(&format!("    {n:>8}  {:>12.3} ms  {name}\n", ms(*ns)));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_within_tolerance_ties_to_the_first() {
        let l = [(100, 0), (200, 1), (200, 2), (300, 3)];
        assert_eq!(nearest(&l, 90, 50), Some(0));
        assert_eq!(nearest(&l, 190, 50), Some(1));
        assert_eq!(nearest(&l, 260, 50), Some(3));
        // equidistant from 200 and 300: the launch that came first
        assert_eq!(nearest(&l, 250, 51), Some(1));
        // the tolerance is exclusive, as in the reference
        assert_eq!(nearest(&l, 350, 50), None);
        assert_eq!(nearest(&l, 349, 50), Some(3));
        assert_eq!(nearest(&[], 5, 50), None);
        // equal distance, the later time came first in the input
        assert_eq!(nearest(&[(10, 5), (30, 4)], 20, 50), Some(4));
    }
}
