//! Folded-stack options on the command line, and what they set in `tracex-folded`'s options.

use clap::ValueEnum;
use tracex_folded::options::{Dialect, ExportOptions, Fold, ImportOptions, Weight};
use tracex_ir::format::Options;

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum FoldArg {
    /// GPU work if launches are joined to it and have CPU stacks, else samples, else timelines
    Auto,
    /// GPU work by the CPU stack that launched it: `...;cudaLaunchKernel;[GPU_Kernel]name`
    Gpu,
    /// Sample stacks, weights summed per stack
    Samples,
    /// Slice nesting on each thread and GPU stream, weighted by self time
    Timeline,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum WeightArg {
    /// Sample weights; calls in a timeline; CPU stacks caught at launches in the GPU view
    Samples,
    /// Self time in ns (timelines)
    Ns,
    /// Self time in µs, rounded (timelines)
    Us,
    /// GPU time of each kernel or copy in ns (GPU view)
    GpuNs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PrefixArg {
    Process,
    Thread,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum DialectArg {
    Auto,
    /// `frame;frame;leaf COUNT`
    Plain,
    /// `timestamp_ns comm pid tid cpu frame;frame;...` (eBPF uprobe profiler)
    Extended,
}

#[derive(clap::Args, Debug, Clone)]
pub struct FoldedArgs {
    /// What the output's stacks are made of
    #[arg(long, value_enum, value_name = "VIEW", default_value = "auto")]
    pub fold: FoldArg,

    /// The count after each stack (default: samples; ns for timelines; gpu-ns for GPU work
    /// found through backtraces)
    #[arg(long, value_enum, value_name = "WEIGHT")]
    pub weight: Option<WeightArg>,

    /// Root frames naming where each stack ran: process, thread, or process,thread
    #[arg(long, value_enum, value_delimiter = ',', value_name = "FRAMES")]
    pub prefix: Vec<PrefixArg>,

    /// GPU view: how close in time (ms, exclusive) a CPU stack caught at cudaLaunchKernel must be
    /// to the launch call it is matched with
    #[arg(long, value_name = "MS", default_value_t = 10.0, value_parser = tolerance_ms)]
    pub tolerance_ms: f64,

    /// GPU view: print matched and unmatched stacks, kernel counts and GPU time on stderr
    #[arg(long)]
    pub summary: bool,

    /// Which folded text the input is (default: from its first line)
    #[arg(long, value_enum, value_name = "DIALECT", default_value = "auto")]
    pub folded_input: DialectArg,
}

/// A tolerance: a non-negative, finite number of milliseconds.
fn tolerance_ms(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(ms) if ms.is_finite() && ms >= 0.0 => Ok(ms),
        _ => Err(format!(
            "{text:?} is not a non-negative number of milliseconds"
        )),
    }
}

impl FoldedArgs {
    pub fn apply(&self, opts: &mut Options) {
        let e = opts.get_mut::<ExportOptions>();
        e.fold = match self.fold {
            FoldArg::Auto => Fold::Auto,
            FoldArg::Gpu => Fold::Gpu,
            FoldArg::Samples => Fold::Samples,
            FoldArg::Timeline => Fold::Timeline,
        };
        e.weight = self.weight.map(|w| match w {
            WeightArg::Samples => Weight::Samples,
            WeightArg::Ns => Weight::Ns,
            WeightArg::Us => Weight::Us,
            WeightArg::GpuNs => Weight::GpuNs,
        });
        e.prefix.process = self.prefix.contains(&PrefixArg::Process);
        e.prefix.thread = self.prefix.contains(&PrefixArg::Thread);
        e.tolerance_ns = (self.tolerance_ms * 1e6).round() as i64;
        e.summary = self.summary;
        opts.get_mut::<ImportOptions>().dialect = match self.folded_input {
            DialectArg::Auto => Dialect::Auto,
            DialectArg::Plain => Dialect::Plain,
            DialectArg::Extended => Dialect::Extended,
        };
    }
}
