//! Options of the folded importer and exporter.

/// Which kind of folded text an input is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Dialect {
    /// Decided from the first line that is not blank or a comment.
    #[default]
    Auto,
    /// `frame;frame;leaf COUNT` (one or two counts).
    Plain,
    /// `timestamp_ns comm pid tid cpu frame;frame;...` (the eBPF uprobe profiler's lines).
    Extended,
}

/// Import options.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct ImportOptions {
    pub dialect: Dialect,
}

/// What becomes the stacks of the output.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Fold {
    /// GPU work if CUDA launches are joined to it and have CPU stacks, else samples if there
    /// are any, else timelines.
    #[default]
    Auto,
    /// GPU work by the CPU stack that launched it (`...;cudaLaunchKernel;[GPU_Kernel]name`).
    Gpu,
    /// Sample stacks, weights summed per stack.
    Samples,
    /// Per-track slice nesting, weighted by self time (or by calls).
    Timeline,
}

/// The count written after each stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Weight {
    /// Sample weights; in a timeline the number of calls; in the GPU view one per CPU stack
    /// caught at a launch (or per launch with a backtrace).
    Samples,
    /// Self time in ns (timelines).
    Ns,
    /// Self time in µs, rounded (timelines).
    Us,
    /// GPU time of the kernel or copy in ns (GPU view).
    GpuNs,
    /// The kernel's whole µs, with the current upstream `merge_gpu_cpu_trace.py`'s matching of
    /// CPU stacks to launches (GPU view; see `docs/formats/folded.md`).
    GpuUs,
}

/// Root frames naming where a stack was seen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Prefix {
    pub process: bool,
    pub thread: bool,
}

/// Export options.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ExportOptions {
    pub fold: Fold,
    /// `None`: the view's own default (`samples`, `ns` for timelines, and in the GPU view
    /// `samples` when stacks come from uprobe samples, `gpu-ns` when from backtraces).
    pub weight: Option<Weight>,
    pub prefix: Prefix,
    /// How far a CPU stack caught at a launch may be from the launch call (exclusive), in ns.
    pub tolerance_ns: i64,
    /// Print counts of the GPU join on stderr at the end.
    pub summary: bool,
}

/// The reference merge's default tolerance: 10 ms.
pub const DEFAULT_TOLERANCE_NS: i64 = 10_000_000;

impl Default for ExportOptions {
    fn default() -> Self {
        ExportOptions {
            fold: Fold::Auto,
            weight: None,
            prefix: Prefix::default(),
            tolerance_ns: DEFAULT_TOLERANCE_NS,
            summary: false,
        }
    }
}
