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
use tracex_ir::{Defs, Diagnostics, FlowId, Location, StackId, StrId, TrackId, TrackKind};

use super::clean::{api_frame, Cleaner};
use super::lines::{Name, Tree, Weights};
use crate::diag as d;
use crate::options::Weight;

/// The thread (root track) of a call or a sample, as the join needs it. Calls and samples
/// refer to it by index: a million launches come from a handful of threads.
#[derive(Clone, Copy, Debug)]
pub struct Root {
    /// The OS pid: samples match launches of the same pid.
    pub pid: Option<i64>,
    /// The OS tid: `--weight gpu-us` matches per thread.
    pub tid: Option<i64>,
    /// Root frames (`--prefix`) of the thread.
    pub prefix: Option<StackId>,
}

/// A CUDA API call that takes part in the join.
#[derive(Clone, Debug)]
pub struct Call {
    /// Index of its thread in [`Gpu::roots`].
    pub root: u32,
    pub ts: i64,
    pub dur: i64,
    pub name: StrId,
    pub stack: Option<StackId>,
    /// A `cudaLaunchKernel` runtime call: a candidate for samples caught at a launch.
    pub launch: bool,
}

/// GPU work launched by a call.
#[derive(Clone, Debug)]
pub struct Work {
    pub name: StrId,
    pub ts: i64,
    pub dur: i64,
    pub kind: SliceKind,
}

/// A timed CPU sample whose stack contains a launch frame.
#[derive(Clone, Debug)]
pub struct AtLaunch {
    /// Index of its thread in [`Gpu::roots`].
    pub root: u32,
    /// Index of its cleaned stack in the [`Cleaner`].
    pub clean: u32,
    pub ts: i64,
    pub weight: i64,
}

#[derive(Default)]
pub struct Gpu {
    /// The threads of calls and samples, and their index by root track.
    pub roots: Vec<Root>,
    root_index: FxHashMap<TrackId, u32>,
    /// Added by [`Gpu::add_call`], which keeps `backtraces` true to them.
    calls: Vec<Call>,
    /// Whether any call has a backtrace: known as calls come, where a pass over a million
    /// calls to find out took 5 ms, up to four times, on the thread that ends a GPU merge
    /// alone (CUPTI calls have none).
    backtraces: bool,
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

/// A sampled thread: (OS pid, OS tid).
type Thread = (Option<i64>, Option<i64>);

/// One process's launches in time order, and where the last search in them ended.
#[derive(Default)]
struct Launches {
    by_time: Vec<(i64, u32)>,
    hint: usize,
}

/// The launch nearest `ts` among `launches` (sorted by time, then index), strictly closer than
/// `tolerance`; at equal distance the one that came first, as the reference does. `hint` is
/// where the previous search of these launches ended: samples come in time order, so the search
/// gallops forward from there instead of bisecting all launches (whose cache misses were the
/// join's cost at a million launches).
pub fn nearest(launches: &[(i64, u32)], ts: i64, tolerance: i64, hint: &mut usize) -> Option<u32> {
    let i = first_at_or_after(launches, ts, *hint);
    *hint = i;
    let mut best: Option<(i64, u32)> = launches.get(i).map(|&(t, c)| (t.saturating_sub(ts), c));
    if i > 0 {
        let before = launches[i - 1].0;
        // the first of the launches at that time
        let j = first_of_time(launches, i - 1);
        let (dist, c) = (ts.saturating_sub(before), launches[j].1);
        if best.is_none_or(|(bd, bc)| dist < bd || (dist == bd && c < bc)) {
            best = Some((dist, c));
        }
    }
    best.filter(|&(dist, _)| dist < tolerance).map(|(_, c)| c)
}

/// The first index whose time is at least `ts`, found by galloping forward from `from` when
/// every launch before `from` is earlier than `ts`, by bisection otherwise.
fn first_at_or_after(launches: &[(i64, u32)], ts: i64, from: usize) -> usize {
    let before = |k: usize| launches[k].0 < ts;
    if from > launches.len() || (from > 0 && !before(from - 1)) {
        return launches.partition_point(|&(t, _)| t < ts);
    }
    let mut step = 1;
    while from + step <= launches.len() && before(from + step - 1) {
        step *= 2;
    }
    let lo = from + step / 2;
    let hi = (from + step).min(launches.len());
    lo + launches[lo..hi].partition_point(|&(t, _)| t < ts)
}

/// The first index with the time of launch `k`, galloping back from `k`.
fn first_of_time(launches: &[(i64, u32)], k: usize) -> usize {
    let t = launches[k].0;
    let mut step = 1;
    while step <= k && launches[k - step].0 == t {
        step *= 2;
    }
    let lo = k.saturating_sub(step);
    lo + launches[lo..=k].partition_point(|&(u, _)| u < t)
}

/// A GPU time in µs as Python reads it from CUPTI JSON: the float nearest the decimal text of
/// `ns` / 1000 (what the input said, when it had at most three decimals). Not `ns as f64 /
/// 1000.0`: at epoch scale ns do not fit a double's 53 bits and that rounds twice.
fn json_us(ns: i64) -> f64 {
    let us = thousandths(ns.unsigned_abs());
    if ns < 0 {
        -us
    } else {
        us
    }
}

/// The double nearest `n / 1000`, ties to even: what parsing the decimal text of `n / 1000`
/// gives, without writing and parsing that text (it was most of the `gpu-us` fold's time).
fn thousandths(n: u64) -> f64 {
    if n < 1 << 53 {
        // `n` and 1000 are exact doubles and IEEE division rounds the exact quotient once
        return n as f64 / 1000.0;
    }
    let whole = n / 1000;
    if whole < 1 << 53 {
        // Unix-epoch ns: the µs have 44-53 bits, so the doubles there are the multiples of
        // 2^-s for the `s` bits the mantissa has left; the nearest is the quotient scaled by
        // 2^s, rounded as an integer (exact), then scaled back (exact: a power of two). The
        // search below took a tenth of the 20k-launch merge's fold.
        let s = whole.leading_zeros() - 11;
        let frac = (n % 1000) << s;
        let mut scaled = (whole << s) + frac / 1000;
        let rest = frac % 1000;
        if rest > 500 || (rest == 500 && scaled % 2 == 1) {
            scaled += 1;
        }
        return scaled as f64 / (1u64 << s) as f64;
    }
    // `n as f64` rounds first, so the quotient can be one step off the nearest double: the
    // nearest of it and its two neighbours, measured exactly, is the answer
    let q = n as f64 / 1000.0;
    let mut best = q;
    let mut best_err = u128::MAX;
    for bits in [q.to_bits() - 1, q.to_bits(), q.to_bits() + 1] {
        let err = thousandths_error(n, bits);
        // a tie is a value halfway between two doubles: the even one wins
        if err < best_err || (err == best_err && bits % 2 == 0) {
            (best, best_err) = (f64::from_bits(bits), err);
        }
    }
    best
}

/// `|d × 1000 − n| × 2^9` exactly, for the positive double `d` of `bits` near `n / 1000` with
/// `2^53 ≤ n < 2^64`: there `2^43 < d < 2^55`, so `d = m × 2^e` with `-9 ≤ e ≤ 2` and every
/// term fits 128 bits.
fn thousandths_error(n: u64, bits: u64) -> u128 {
    let m = u128::from(bits & ((1 << 52) - 1) | 1 << 52);
    let e = (bits >> 52) as i32 - 1075;
    debug_assert!((-9..=2).contains(&e), "{n} {bits}");
    let scaled = (m * 1000) << (e + 9);
    scaled.abs_diff(u128::from(n) << 9)
}

/// A CPU stack's time in µs as the script computes it: `timestamp_ns / 1000.0`.
fn cpu_us(ns: i64) -> f64 {
    ns as f64 / 1000.0
}

/// The weight the upstream merge gives a kernel: `int(end_us - start_us)` where `end_us =
/// start_us + dur_us`, all floats (so a kernel of 3 µs can weigh 2).
pub fn whole_us(ts: i64, dur: i64) -> i64 {
    let start = json_us(ts);
    let end = start + json_us(dur);
    (end - start) as i64
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
    /// Leaf frames by what they show: a few kernel names stand for a million works.
    leaf_names: FxHashMap<(SliceKind, StrId), Name>,
    sample_paths: FxHashMap<(Option<StackId>, u32), StackId>,
    pending: Option<Name>,
}

impl<'a> Builder<'a> {
    fn new(tree: &'a mut Tree) -> Self {
        Builder {
            tree,
            weights: Weights::default(),
            leaf_names: FxHashMap::default(),
            sample_paths: FxHashMap::default(),
            pending: None,
        }
    }

    /// The node of a stack caught at a launch: its root frames and cleaned frames.
    fn sample_path(&mut self, cleaner: &Cleaner, roots: &[Root], s: &AtLaunch) -> StackId {
        self.path(cleaner, roots[s.root as usize].prefix, s.clean)
    }

    /// The node of cleaned stack `clean` under the root frames `prefix`.
    fn path(&mut self, cleaner: &Cleaner, prefix: Option<StackId>, clean: u32) -> StackId {
        if let Some(&p) = self.sample_paths.get(&(prefix, clean)) {
            return p;
        }
        let frames = cleaner.get(clean).frames.iter().copied();
        let p = self
            .tree
            .extend(prefix, frames)
            .expect("has a launch frame");
        self.sample_paths.insert((prefix, clean), p);
        p
    }

    fn work_leaf(&mut self, defs: &Defs, works: &[Work], w: u32) -> Name {
        let work = &works[w as usize];
        self.leaf(defs, work.kind, work.name)
    }

    /// The leaf frame of GPU work of `kind` named `name`.
    fn leaf(&mut self, defs: &Defs, kind: SliceKind, name: StrId) -> Name {
        let key = (kind, name);
        if let Some(&n) = self.leaf_names.get(&key) {
            return n;
        }
        let n = self.tree.name(&gpu_frame(kind, defs.str(name)));
        self.leaf_names.insert(key, n);
        n
    }

    fn pending_leaf(&mut self) -> Name {
        let tree = &mut *self.tree;
        *self
            .pending
            .get_or_insert_with(|| tree.name("[GPU_Launch_Pending]"))
    }
}

/// Writes a zero byte into each page of the first `n` slots of `spare` (whose content stays
/// unset: the list's length does not change).
fn touch<T>(spare: &mut [std::mem::MaybeUninit<T>], n: usize) {
    let n = n.min(spare.len());
    let step = (4096 / size_of::<T>().max(1)).max(1);
    for slot in spare[..n].iter_mut().step_by(step) {
        // SAFETY: the slot is memory the Vec owns (its spare capacity) and at least one byte
        // long; writing a byte of an uninitialised `MaybeUninit` is allowed, and the Vec never
        // reads its spare capacity.
        unsafe { slot.as_mut_ptr().cast::<u8>().write_volatile(0) };
    }
}

/// Records of each of the join's lists that room is made for at the start. Address space
/// only: a block this large the allocator maps from the system, and its pages are touched as
/// records are written. Grown by doubling instead, the lists were copied at each step into
/// memory touched for the first time, and the GPU merge of a million launches took 0.1-0.15 s
/// more CPU; kept in chunks of 64Ki records, which the allocator serves from its arenas, they
/// saved a quarter of that.
const RESERVED: usize = 1 << 21;

impl Gpu {
    pub fn new(cleaner: Cleaner) -> Gpu {
        Gpu {
            cleaner,
            calls: Vec::with_capacity(RESERVED),
            works: Vec::with_capacity(RESERVED),
            edges: Vec::with_capacity(RESERVED),
            at_launch: Vec::with_capacity(RESERVED),
            ..Gpu::default()
        }
    }

    /// The index of thread `track` in [`Gpu::roots`], added the first time it is seen.
    pub fn root(&mut self, defs: &Defs, track: TrackId, prefix: Option<StackId>) -> u32 {
        let roots = &mut self.roots;
        *self.root_index.entry(track).or_insert_with(|| {
            let t = defs.track(track);
            let tid = match t.kind {
                TrackKind::Thread(th) => defs.thread(th).os_tid,
                _ => None,
            };
            roots.push(Root {
                pid: t.process.and_then(|p| defs.process(p).os_pid),
                tid,
                prefix,
            });
            roots.len() as u32 - 1
        })
    }

    /// Touches the pages that `calls` more calls and `works` more pieces of GPU work will
    /// fill, on a thread that is idle, so that the thread adding them takes no page faults.
    pub fn prefault(&mut self, calls: usize, works: usize) {
        touch(self.calls.spare_capacity_mut(), calls);
        touch(self.works.spare_capacity_mut(), works);
    }

    /// Adds `call`; gives its index.
    pub fn add_call(&mut self, call: Call) -> u32 {
        self.backtraces |= call.stack.is_some();
        self.calls.push(call);
        self.calls.len() as u32 - 1
    }

    /// Gives call `c` the stack `around` when it has none.
    pub fn lend_stack(&mut self, c: u32, around: Option<StackId>) {
        let call = &mut self.calls[c as usize];
        call.stack = call.stack.or(around);
        self.backtraces |= call.stack.is_some();
    }

    fn pid(&self, root: u32) -> Option<i64> {
        self.roots[root as usize].pid
    }

    /// Whether the trace has what the GPU view needs: samples caught at a launch and launch
    /// calls to match them with, or calls with backtraces joined to GPU work.
    pub fn possible(&self) -> bool {
        let launches = self.calls.iter().any(|c| c.launch);
        let traced = self.backtraces
            && self
                .edges
                .iter()
                .any(|&(c, _)| self.calls[c as usize].stack.is_some());
        (launches && !self.at_launch.is_empty()) || traced
    }

    /// Processes whose calls joined to GPU work carry backtraces: there, backtraces give the
    /// stacks and samples caught at launches are not matched.
    fn traced(&self) -> FxHashSet<Option<i64>> {
        // looking up the call of each join (in the order of the GPU work) misses the cache on
        // every one: 13 ms for a million launches, whose calls (CUPTI records) have none
        if !self.backtraces {
            return FxHashSet::default();
        }
        self.edges
            .iter()
            .map(|&(c, _)| &self.calls[c as usize])
            .filter(|c| c.stack.is_some())
            .map(|c| self.pid(c.root))
            .collect()
    }

    /// The weight the view uses unless told otherwise: samples when stacks come from samples
    /// caught at launches (as the reference), GPU time when they come from backtraces.
    pub fn default_weight(&self) -> Weight {
        let traced = self.traced();
        if self
            .at_launch
            .iter()
            .any(|s| !traced.contains(&self.pid(s.root)))
        {
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
        if weight == Weight::GpuUs {
            return self.fold_upstream(defs, diag, tree, sum);
        }
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
        let mut launches: FxHashMap<Option<i64>, Launches> = FxHashMap::default();
        for (i, c) in self.calls.iter().enumerate() {
            if c.launch {
                launches
                    .entry(self.pid(c.root))
                    .or_default()
                    .by_time
                    .push((c.ts, i as u32));
            }
        }
        for l in launches.values_mut() {
            l.by_time.sort_unstable();
        }
        let mut b = Builder::new(tree);
        let mut matched_calls = vec![false; self.calls.len()];
        for s in &self.at_launch {
            let pid = self.pid(s.root);
            if traced.contains(&pid) {
                sum.at_launch_unused += 1;
                continue;
            }
            sum.at_launch += 1;
            let call = launches
                .get_mut(&pid)
                .and_then(|l| nearest(&l.by_time, s.ts, tolerance, &mut l.hint));
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
            let path = b.sample_path(&self.cleaner, &self.roots, s);
            let node = b.tree.child(Some(path), leaf);
            let w = match (by_ns, work) {
                (false, _) => s.weight,
                (true, Some(w)) => self.works[w as usize].dur,
                (true, None) => 0,
            };
            b.weights.add(node, w);
        }
        let first = &first;
        let matched_calls = &matched_calls;
        self.fold_backtraces(
            defs,
            &mut b,
            &traced,
            &mut sum,
            |work| if by_ns { work.dur } else { 1 },
            |c, w| matched_calls[c as usize] && first[c as usize] == w,
        );
        self.finish_summary(defs, diag, &mut sum);
        (b.weights, sum)
    }

    /// Calls with backtraces, one line per piece of GPU work joined to them weighing
    /// `weigh(work)`; and the GPU work no stack covers (`covered` says which a sample took).
    fn fold_backtraces(
        &mut self,
        defs: &Defs,
        b: &mut Builder,
        traced: &FxHashSet<Option<i64>>,
        sum: &mut Summary,
        weigh: impl Fn(&Work) -> i64,
        covered: impl Fn(u32, u32) -> bool,
    ) {
        let mut i = 0;
        while i < self.edges.len() {
            let c = self.edges[i].0;
            let j = i + self.edges[i..].iter().take_while(|e| e.0 == c).count();
            let call = self.calls[c as usize].clone();
            sum.calls_with_gpu += 1;
            let path = match call.stack {
                Some(stack) if traced.contains(&self.pid(call.root)) => {
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
                        b.weights.add(node, weigh(work));
                    }
                    None if covered(c, w) => {}
                    None => {
                        sum.work_without_stack += 1;
                        sum.work_without_stack_ns += work.dur;
                    }
                }
            }
            i = j;
        }
    }

    /// Records what the join left out, and lists the kernels for `--summary`.
    fn finish_summary(&self, defs: &Defs, diag: &mut Diagnostics, sum: &mut Summary) {
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
    }

    /// `--weight gpu-us`: the current upstream `merge_gpu_cpu_trace.py`. CPU stacks caught at a
    /// launch are grouped by thread (pid, tid), threads in the order they first appear, each
    /// sorted by time; all the launches of a process (sorted by time) go to its first thread.
    /// A thread with as many stacks as launches pairs them in order. Otherwise the clock offset
    /// is the first launch's time minus the first stack's; for each stack (moved by the offset)
    /// the launches older than it by more than the tolerance are passed, and it pairs with the
    /// next one if that is within the tolerance. A pair whose launch has a kernel is a line
    /// `stack;[GPU_Kernel]name` weighing the kernel's whole µs ([`whole_us`]); other stacks are
    /// not written. Launches and kernels need a time and duration above 0, as there; a launch
    /// joined to several kernels takes the last.
    fn fold_upstream(
        &mut self,
        defs: &Defs,
        diag: &mut Diagnostics,
        tree: &mut Tree,
        mut sum: Summary,
    ) -> (Weights, Summary) {
        let tolerance_us = sum.tolerance_ns as f64 / 1000.0;
        let mut kernel = vec![NONE; self.calls.len()];
        for &(c, w) in &self.edges {
            let work = &self.works[w as usize];
            if work.kind == SliceKind::Kernel && work.ts > 0 && work.dur > 0 {
                kernel[c as usize] = w;
            }
        }
        let traced = self.traced();
        // threads in order of first appearance, each with its stacks (indices into at_launch)
        let mut threads: Vec<(Thread, Vec<usize>)> = Vec::new();
        let mut thread_of: FxHashMap<Thread, usize> = FxHashMap::default();
        // each root's thread (or that its process is traced), found once: roots are few, and
        // a look-up per stack cost a fifth of this fold
        let mut of_root: Vec<Option<Option<usize>>> = vec![None; self.roots.len()];
        for (i, s) in self.at_launch.iter().enumerate() {
            let t = *of_root[s.root as usize].get_or_insert_with(|| {
                let Root { pid, tid, .. } = self.roots[s.root as usize];
                (!traced.contains(&pid)).then(|| {
                    *thread_of.entry((pid, tid)).or_insert_with(|| {
                        threads.push(((pid, tid), Vec::new()));
                        threads.len() - 1
                    })
                })
            });
            let Some(t) = t else {
                sum.at_launch_unused += 1;
                continue;
            };
            sum.at_launch += 1;
            threads[t].1.push(i);
        }
        let mut launches: Vec<Vec<u32>> = vec![Vec::new(); threads.len()];
        for (c, call) in self.calls.iter().enumerate() {
            let call_pid = self.pid(call.root);
            if !(call.launch && call.ts > 0 && call.dur > 0 && call_pid.is_some_and(|p| p > 0)) {
                continue;
            }
            if let Some(t) = threads.iter().position(|((pid, _), _)| *pid == call_pid) {
                launches[t].push(c as u32);
            }
        }
        // Weights are summed by line first, (root frames, cleaned stack, work's kind and name):
        // a few hundred lines stand for tens of thousands of stacks, and each line's node is
        // then made once, where four look-ups per stack were a third of this fold.
        let mut lines: FxHashMap<(Option<StackId>, u32, SliceKind, StrId), i64> =
            FxHashMap::default();
        let mut used = vec![false; self.works.len()];
        for ((_, stacks), launches) in threads.iter_mut().zip(&mut launches) {
            stacks.sort_by_key(|&i| self.at_launch[i].ts);
            launches.sort_by_key(|&c| self.calls[c as usize].ts);
            let pairs = pair_upstream(
                &stacks
                    .iter()
                    .map(|&i| self.at_launch[i].ts)
                    .collect::<Vec<_>>(),
                &launches
                    .iter()
                    .map(|&c| (self.calls[c as usize].ts, kernel[c as usize] != NONE))
                    .collect::<Vec<_>>(),
                tolerance_us,
            );
            for (k, &i) in stacks.iter().enumerate() {
                let Some(l) = pairs[k] else {
                    sum.pending_no_launch += 1;
                    continue;
                };
                let w = kernel[launches[l] as usize];
                if w == NONE {
                    sum.pending_no_gpu += 1;
                    continue;
                }
                sum.matched += 1;
                used[w as usize] = true;
                let s = &self.at_launch[i];
                let work = &self.works[w as usize];
                let line = (
                    self.roots[s.root as usize].prefix,
                    s.clean,
                    work.kind,
                    work.name,
                );
                *lines.entry(line).or_default() += whole_us(work.ts, work.dur);
            }
        }
        let mut b = Builder::new(tree);
        // the upstream merge writes the line of a kernel shorter than 1 µs, with weight 0
        b.weights.keep_zero = true;
        for ((prefix, clean, kind, name), weight) in lines {
            let path = b.path(&self.cleaner, prefix, clean);
            let leaf = b.leaf(defs, kind, name);
            let node = b.tree.child(Some(path), leaf);
            b.weights.add(node, weight);
        }
        self.fold_backtraces(
            defs,
            &mut b,
            &traced,
            &mut sum,
            |work| whole_us(work.ts, work.dur),
            |_, w| used[w as usize],
        );
        self.finish_summary(defs, diag, &mut sum);
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
        tree.extend(self.roots[call.root as usize].prefix, frames)
            .expect("has the call frame")
    }
}

/// The upstream merge's pairing of one thread's stacks (times in ns, sorted) with its launches
/// (times in ns, sorted; whether each has a kernel): for each stack, the index of its launch.
/// Times are compared as that script compares them, in float µs.
pub fn pair_upstream(
    stacks: &[i64],
    launches: &[(i64, bool)],
    tolerance_us: f64,
) -> Vec<Option<usize>> {
    if launches.is_empty() {
        return vec![None; stacks.len()];
    }
    if stacks.len() == launches.len() {
        return (0..stacks.len()).map(Some).collect();
    }
    // each launch's time once: at epoch scale it takes exact 128-bit arithmetic
    let launch_us: Vec<f64> = launches.iter().map(|&(ts, _)| json_us(ts)).collect();
    let offset = launch_us[0] - cpu_us(stacks[0]);
    let mut next = 0;
    stacks
        .iter()
        .map(|&ts| {
            let cpu = cpu_us(ts) + offset;
            while next < launches.len() && cpu - launch_us[next] > tolerance_us {
                next += 1;
            }
            let &(_, has_kernel) = launches.get(next)?;
            if (cpu - launch_us[next]).abs() > tolerance_us {
                return None;
            }
            let l = next;
            // a launch without a kernel stays next: the script only moves on after a match
            if has_kernel {
                next += 1;
            }
            Some(l)
        })
        .collect()
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
    fn prefaulting_leaves_the_lists_as_they_were() {
        let mut gpu = Gpu::new(Cleaner::new(super::super::clean::Cleaning::Original));
        let call = |ts| Call {
            root: 0,
            ts,
            dur: 1,
            name: StrId(1),
            stack: None,
            launch: true,
        };
        gpu.add_call(call(5));
        gpu.prefault(100_000, 100_000);
        gpu.prefault(usize::MAX, 0);
        assert_eq!(gpu.calls.len(), 1);
        assert!(gpu.works.is_empty());
        assert_eq!(gpu.add_call(call(7)), 1);
        assert_eq!((gpu.calls[0].ts, gpu.calls[1].ts), (5, 7));
    }

    #[test]
    fn thousandths_are_the_parsed_decimal_text() {
        let parsed = |n: u64| -> f64 { format!("{}.{:03}", n / 1000, n % 1000).parse().unwrap() };
        // near the powers of two where doubles change step, near 2^53 and u64's end, at epoch
        // scale, and spread over the whole range by a fixed xorshift (`n as f64 / 1000.0` is
        // wrong for about a fifth of these)
        let mut cases: Vec<u64> = (40..64)
            .flat_map(|k| {
                let p = 1u64 << k;
                (0..2000).flat_map(move |d| [p.wrapping_add(d), p.wrapping_sub(d)])
            })
            .collect();
        cases.extend((0..2000).map(|d| u64::MAX - d));
        cases.extend((0..100_000).map(|d| 1_761_700_000_000_000_000 + d * 7_919));
        // halfway between two doubles: where 2^s thousandths end in 500 (s = 1 or 2, the µs
        // between 2^50 and 2^52, Unix-epoch ns of this century among them)
        for whole in [
            1u64 << 50,
            (1 << 50) + 1,
            1_761_700_000_000_000,
            (1 << 51) - 1,
        ] {
            cases.extend([125, 375, 625, 875].map(|r| whole * 1000 + r));
        }
        for whole in [
            1u64 << 51,
            (1 << 51) + 1,
            3_000_000_000_000_001,
            (1 << 52) - 1,
        ] {
            cases.extend([250, 750].map(|r| whole * 1000 + r));
        }
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        cases.extend((0..300_000).map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }));
        for n in cases {
            assert_eq!(thousandths(n).to_bits(), parsed(n).to_bits(), "{n}");
        }
    }

    #[test]
    fn a_stack_lent_to_a_call_makes_it_traced() {
        let call = |stack| Call {
            root: 0,
            ts: 10,
            dur: 5,
            name: StrId(1),
            stack,
            launch: false,
        };
        let joined = |first: Call| {
            let mut g = Gpu::default();
            g.roots.push(Root {
                pid: Some(7),
                tid: Some(7),
                prefix: None,
            });
            let c = g.add_call(first);
            g.works.push(Work {
                name: StrId(2),
                ts: 20,
                dur: 3,
                kind: SliceKind::Kernel,
            });
            g.edges.push((c, 0));
            (g, c)
        };
        let (mut g, c) = joined(call(None));
        assert!(!g.possible() && g.traced().is_empty());
        g.lend_stack(c, None);
        assert!(!g.possible() && g.traced().is_empty());
        g.lend_stack(c, Some(StackId(0)));
        assert!(g.possible());
        assert_eq!(g.traced(), FxHashSet::from_iter([Some(7)]));
        // a backtrace of its own, which a lent stack does not replace
        let (mut g, c) = joined(call(Some(StackId(3))));
        assert_eq!(g.traced(), FxHashSet::from_iter([Some(7)]));
        g.lend_stack(c, Some(StackId(0)));
        assert_eq!(g.calls[c as usize].stack, Some(StackId(3)));
    }

    #[test]
    fn whole_us_as_python_floats_give_it() {
        // at epoch scale a double steps by 0.25 µs: 2.9 µs after ...100.25 ends at ...103.25
        assert_eq!(whole_us(1_761_700_000_000_100_250, 2_900), 3);
        assert_eq!(whole_us(1_761_700_000_000_100_500, 700), 0);
        assert_eq!(whole_us(100, 200), 0);
        assert_eq!(whole_us(5_000, 7_999), 7);
        assert_eq!(json_us(-1_500), -1.5);
    }

    #[test]
    fn upstream_pairing() {
        let tol = 10.0; // µs
                        // as many stacks as launches: in order, whatever the times
        assert_eq!(
            pair_upstream(&[0, 5_000_000], &[(1, true), (2, false)], tol),
            vec![Some(0), Some(1)]
        );
        assert_eq!(pair_upstream(&[1, 2], &[], tol), vec![None, None]);
        // by time after the clock offset (first launch - first stack = 1000 µs): the stack at
        // 30 µs passes the launch at 1015 (older by more than 10 µs) and takes 1031; the one
        // at 100 µs finds none within 10 µs
        let stacks = [0, 30_000, 100_000];
        let launches = [
            (1_000_000, true),
            (1_015_000, true),
            (1_031_000, true),
            (1_200_000, true),
        ];
        assert_eq!(
            pair_upstream(&stacks, &launches, tol),
            vec![Some(0), Some(2), None]
        );
        // a launch without a kernel is not passed: the next stack may take it again
        let launches = [(1_000_000, false), (1_005_000, true)];
        assert_eq!(
            pair_upstream(&[0, 1_000, 2_000], &launches, tol),
            vec![Some(0), Some(0), Some(0)]
        );
    }

    #[test]
    fn nearest_within_tolerance_ties_to_the_first() {
        let near = |l: &[(i64, u32)], ts, tol| nearest(l, ts, tol, &mut 0);
        let l = [(100, 0), (200, 1), (200, 2), (300, 3)];
        assert_eq!(near(&l, 90, 50), Some(0));
        assert_eq!(near(&l, 190, 50), Some(1));
        assert_eq!(near(&l, 260, 50), Some(3));
        // equidistant from 200 and 300: the launch that came first
        assert_eq!(near(&l, 250, 51), Some(1));
        // the tolerance is exclusive, as in the reference
        assert_eq!(near(&l, 350, 50), None);
        assert_eq!(near(&l, 349, 50), Some(3));
        assert_eq!(near(&[], 5, 50), None);
        // equal distance, the later time came first in the input
        assert_eq!(near(&[(10, 5), (30, 4)], 20, 50), Some(4));
    }

    #[test]
    fn nearest_gives_the_same_launch_from_any_hint() {
        // runs of equal times, so that galloping back to the first of a time is exercised
        let mut l: Vec<(i64, u32)> = (0..200u32).map(|i| ((i / 7 * 10) as i64, i)).collect();
        l.sort_unstable();
        let brute = |ts: i64| {
            l.iter()
                .map(|&(t, c)| ((t - ts).abs(), c))
                .filter(|&(d, _)| d < 6)
                .min()
                .map(|(_, c)| c)
        };
        for ts in -20..320 {
            for hint in 0..=l.len() + 1 {
                let mut h = hint;
                assert_eq!(nearest(&l, ts, 6, &mut h), brute(ts), "ts {ts} hint {hint}");
                assert_eq!(h, l.partition_point(|&(t, _)| t < ts));
            }
        }
    }
}
