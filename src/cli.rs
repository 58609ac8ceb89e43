//! Command-line interface.

use clap::{Args, Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "tracex",
    version,
    about = "Convert GPU and CPU performance traces between formats, without losing data",
    long_about = "Convert GPU and CPU performance traces between formats, without losing data.\n\n\
Inputs are recognised by their content (gzip is undone transparently): Chrome Trace Event JSON.\n\
Outputs are chosen by --to or by the output's file name: .json / .json.gz (Chrome JSON).\n\n\
Examples:\n  tracex convert trace.json.gz out.json\n  tracex info trace.json\n  tracex dump trace.json | less\n  tracex formats",
    propagate_version = true
)]
pub struct Cli {
    /// No progress bar and no summary on stderr (errors are still printed)
    #[arg(short, long, global = true)]
    pub quiet: bool,

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
    /// List the supported formats
    Formats {
        /// List every diagnostic tracex can report instead
        #[arg(long)]
        diagnostics: bool,
    },
}

#[derive(Args, Debug)]
pub struct ConvertArgs {
    /// Input traces, then the output path (`-` for stdin as the only input, or stdout as output)
    #[arg(required = true, num_args = 2.., value_name = "PATH")]
    pub paths: Vec<String>,

    /// Input format, instead of recognising it from the content
    #[arg(long, value_name = "FORMAT")]
    pub from: Option<String>,

    /// Output format, instead of taking it from the output's file name
    #[arg(long, value_name = "FORMAT")]
    pub to: Option<String>,

    /// Replace the output if it exists
    #[arg(short, long)]
    pub force: bool,

    #[command(flatten)]
    pub common: CommonArgs,

    #[command(flatten, next_help_heading = "Chrome JSON")]
    pub chrome: crate::formats::chrome::ChromeArgs,

    #[cfg(feature = "otf2")]
    #[command(flatten, next_help_heading = "OTF2")]
    pub otf2: crate::formats::otf2::Otf2Args,
}

/// Options shared by every command that reads traces.
#[derive(Args, Debug, Clone)]
pub struct CommonArgs {
    /// Fail (exit 1, no output) when the input has errors that were worked around
    #[arg(long)]
    pub strict: bool,

    /// Memory for reordering events before spilling to temporary files (e.g. 512M, 2G)
    #[arg(long, value_name = "SIZE", default_value = "256M")]
    pub mem_budget: String,
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
