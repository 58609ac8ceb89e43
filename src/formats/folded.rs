//! Folded stacks in the registry, and their command-line options.

use clap::ValueEnum;
use tracex_folded::options::{Dialect, Fold, Weight};
use tracex_ir::io::OutputTarget;
use tracex_ir::{EventOrder, ImportCtx, Result, Sink};

use super::{Format, InputKind};
use crate::input::Input;
use crate::options::Options;

fn import(input: &mut Input, opts: &Options, ctx: &mut ImportCtx) -> Result<()> {
    let r = input.take_reader()?;
    tracex_folded::import(r, &opts.folded_import, ctx)
}

fn export(target: &OutputTarget, opts: &Options) -> Result<Box<dyn Sink>> {
    Ok(Box::new(tracex_folded::Exporter::create(
        target,
        &opts.folded_export,
    )?))
}

pub static FORMAT: Format = Format {
    name: tracex_folded::NAME,
    aliases: &["collapsed", "flamegraph"],
    description: "Folded stacks (inferno, flamegraph.pl, speedscope); reads the uprobe profiler's extended lines too; writes GPU work by CPU stack",
    extensions: tracex_folded::EXTENSIONS,
    sniff: tracex_folded::sniff,
    import: Some(import),
    export: Some(export),
    // Extended lines are timed and need not be in order.
    order: EventOrder::Unsorted,
    input: InputKind::Stream,
    diagnostics: tracex_folded::DIAGNOSTICS,
    refines: None,
    select_activity: None,
};

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

/// Folded options on the command line.
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
        let e = &mut opts.folded_export;
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
        opts.folded_import.dialect = match self.folded_input {
            DialectArg::Auto => Dialect::Auto,
            DialectArg::Plain => Dialect::Plain,
            DialectArg::Extended => Dialect::Extended,
        };
    }
}
