//! Command-line interface: the commands and their arguments. Format options are declared per
//! format ([`chrome`], [`folded`], [`nsys`], [`otf2`]), each with the one function that sets the
//! format crate's options from them.

mod chrome;
mod common;
mod flamegraph;
mod folded;
mod nsys;
#[cfg(feature = "otf2")]
mod otf2;

pub use common::CommonArgs;

use clap::{Args, Parser, Subcommand};
use tracex_ir::format::Options;

#[derive(Parser, Debug)]
#[command(
    name = "tracex",
    version,
    about = "Convert GPU and CPU performance traces between formats, without losing data",
    long_about = "Convert GPU and CPU performance traces between formats, without losing data.\n\n\
Inputs are recognised by their content (gzip is undone transparently): Nsight Systems SQLite\n\
exports, Chrome Trace Event JSON, Perfetto protobuf (TrackEvent), OTF2 archives, CUPTI\n\
records, folded stacks (plain and the eBPF uprobe profiler's extended lines). Several inputs\n\
become one timeline.\n\
Outputs are chosen by --to or by the output's file name: .pftrace / .pftrace.gz (Perfetto's\n\
own format), .json / .json.gz (Chrome JSON for Perfetto and chrome://tracing), .otf2 (Vampir),\n\
.folded (flame graphs), .svg (flame graph pictures).\n\n\
Examples:\n  tracex convert report.sqlite out.pftrace\n  tracex convert report.sqlite out.json\n  \
tracex convert trace.json.gz out.otf2\n  \
tracex convert cpu_results.txt gpu_results.json merged.folded\n  \
tracex convert report.sqlite gpu.svg\n  \
tracex convert runs/ --to chrome -o converted/\n  tracex info trace.json\n  \
tracex stats run_b*.sqlite --param 'run_b$p.sqlite' --events 'cudaMemcpy.*' --plot p.svg\n  \
tracex dump trace.json | less\n  tracex formats",
    long_version = crate::version::long(),
    propagate_version = true
)]
pub struct Cli {
    /// No progress bar and no summary on stderr (errors are still printed)
    #[arg(short, long, global = true)]
    pub quiet: bool,

    /// Stop with an error (exit 1, nothing written) when tracex's resident memory passes SIZE
    /// (e.g. 2G, 512M); by default there is no limit
    #[arg(long, global = true, value_name = "SIZE")]
    pub max_memory: Option<String>,

    /// Colour in messages: auto (when stderr is a terminal and NO_COLOR is unset), always, never
    #[arg(
        long,
        global = true,
        value_enum,
        value_name = "WHEN",
        default_value = "auto"
    )]
    pub color: crate::term::ColorWhen,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Convert one or more traces into one output: `tracex convert IN... OUT`
    Convert(ConvertArgs),
    /// Summarise a trace: event counts by kind, processes, threads, time span, diagnostics
    Info(InfoArgs),
    /// Print a trace as stable text (the form importer tests compare)
    Dump(DumpArgs),
    /// Durations of events by name and kind (count, total, mean, min, median, p95, max), per
    /// trace or across traces that vary in one parameter
    Stats(crate::cmd::stats::StatsArgs),
    /// List the supported formats
    Formats {
        /// List every diagnostic tracex can report instead
        #[arg(long)]
        diagnostics: bool,
    },
    /// Print a shell completion script: `tracex completions bash > /etc/bash_completion.d/tracex`
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff): `tracex man | man -l -`; with --dir, write one page per
    /// command there (tracex.1, tracex-convert.1, ...)
    Man {
        /// Write tracex.1 and a page per command into this folder instead
        #[arg(long, value_name = "DIR")]
        dir: Option<std::path::PathBuf>,
    },
}

#[derive(Args, Debug)]
pub struct ConvertArgs {
    /// Input traces, then the output path (`-` for stdin as the only input, or stdout as
    /// output). Batch mode: folders of traces (with --to, and optionally --out-dir)
    #[arg(required = true, num_args = 1.., value_name = "PATH")]
    pub paths: Vec<String>,

    /// Batch mode: write the conversions of every trace found under the input folders here,
    /// keeping their relative layout (default: beside each input)
    #[arg(short = 'o', long, value_name = "DIR")]
    pub out_dir: Option<String>,

    /// Batch mode: conversions run at once (default: the number of cores)
    #[arg(short, long, value_name = "N")]
    pub jobs: Option<usize>,

    /// Input format, instead of recognising it from the content
    #[arg(long, value_name = "FORMAT")]
    pub from: Option<String>,

    /// Output format, instead of taking it from the output's file name
    #[arg(long, value_name = "FORMAT")]
    pub to: Option<String>,

    /// Replace the output if it exists
    #[arg(short, long)]
    pub force: bool,

    /// How several inputs are lined up in time
    #[arg(long, value_enum, default_value = "clock")]
    pub align: crate::pipeline::Align,

    /// Print a machine-readable summary on stdout: inputs and their formats, event counts,
    /// diagnostics with locations, outputs, timings
    #[arg(long)]
    pub json: bool,

    /// Write the output as numbered, self-contained chunks (OUT.001.json, OUT.002.json, ...)
    /// each covering a time span (`10s`, `500ms`) or about a size (`100M`, `1G`); slices
    /// crossing a cut are split there and marked
    #[arg(long, value_name = "DURATION|SIZE")]
    pub split_by: Option<String>,

    /// Batch mode: convert only the I-th of N shards of the inputs (0 <= I < N; inputs in
    /// sorted order, every N-th from the I-th), e.g. `--shard $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT`
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,

    #[command(flatten)]
    pub common: CommonArgs,

    #[command(flatten, next_help_heading = "Chrome JSON")]
    pub chrome: chrome::ChromeArgs,

    #[command(flatten, next_help_heading = "Folded stacks (flame graphs)")]
    pub folded: folded::FoldedArgs,

    #[command(flatten, next_help_heading = "SVG flame graphs")]
    pub flamegraph: flamegraph::FlamegraphArgs,

    #[cfg(feature = "otf2")]
    #[command(flatten, next_help_heading = "OTF2")]
    pub otf2: otf2::Otf2Args,

    #[command(flatten, next_help_heading = "Nsight Systems")]
    pub nsys: nsys::NsysArgs,
}

impl ConvertArgs {
    /// The options of every format, from the command line, for a conversion of `inputs`.
    pub fn format_options(&self, inputs: &[String]) -> Options {
        let mut opts = Options::default();
        self.chrome.apply(&mut opts);
        // --gzip-level (declared with Chrome's flags) sets .pftrace.gz outputs too
        opts.get_mut::<tracex_perfetto::ExportOptions>().gzip_level = self.chrome.gzip_level;
        self.folded.apply(&mut opts);
        self.flamegraph.apply(&mut opts, inputs);
        self.nsys.apply(&mut opts);
        #[cfg(feature = "otf2")]
        self.otf2.apply(&mut opts);
        opts
    }
}

#[derive(Args, Debug)]
pub struct InfoArgs {
    /// The trace to summarise (`-` for stdin)
    pub input: String,

    /// Input format, instead of recognising it from the content
    #[arg(long, value_name = "FORMAT")]
    pub from: Option<String>,

    /// Print JSON for scripts
    #[arg(long)]
    pub json: bool,

    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Args, Debug)]
pub struct DumpArgs {
    /// The trace to print (`-` for stdin)
    pub input: String,

    /// Input format, instead of recognising it from the content
    #[arg(long, value_name = "FORMAT")]
    pub from: Option<String>,

    /// Leave out the diagnostics at the end
    #[arg(long)]
    pub no_diagnostics: bool,

    #[command(flatten)]
    pub common: CommonArgs,
}
