//! `tracex`: convert GPU and CPU performance traces between formats.

mod cli;
mod cmd;
mod filter;
mod formats;
mod input;
mod memlimit;
mod nsys_rep;
mod pipeline;
mod progress;
mod split;
mod term;
mod version;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};

/// Importers allocate many small argument lists and strings per event, often freed on another
/// thread (the sorter's merge); mimalloc serves that pattern faster than glibc's allocator.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `--max-memory SIZE`: the watchdog, started before any work.
fn start_memory_limit(size: Option<&str>) -> anyhow::Result<()> {
    let Some(text) = size else {
        return Ok(());
    };
    let limit = pipeline::parse_size(text)
        .filter(|&n| n > 0)
        .ok_or_else(|| anyhow::anyhow!("--max-memory {text:?}: expected a size like 2G or 512M"))?;
    memlimit::start(limit as u64)
}

fn main() -> ExitCode {
    // --color is known before clap parses, so that clap's errors are coloured as ours are
    let color = term::color_from_args(std::env::args_os());
    term::init(color);
    let cli = cli::Cli::command()
        .color(color.into())
        .try_get_matches()
        .and_then(|m| cli::Cli::from_arg_matches(&m))
        .unwrap_or_else(|e| e.exit());
    let quiet = cli.quiet;
    if let Err(e) = start_memory_limit(cli.max_memory.as_deref()) {
        term::error(format_args!("{e:#}"));
        return ExitCode::from(1);
    }
    let result = match &cli.command {
        // folders (or an output folder) make a batch, else one conversion
        cli::Command::Convert(a) => match cmd::batch::plan(a) {
            Ok(Some(plan)) => cmd::batch::run(a, &plan, quiet),
            Ok(None) => cmd::convert::run(a, quiet),
            Err(e) => Err(e),
        },
        cli::Command::Info(a) => cmd::info::run(a, quiet),
        cli::Command::Dump(a) => cmd::dump::run(a, quiet),
        cli::Command::Stats(a) => cmd::stats::run(a, quiet),
        cli::Command::Formats { diagnostics } => cmd::formats::run(*diagnostics),
        cli::Command::Completions { shell } => cmd::completions::completions(*shell),
        cli::Command::Man { dir } => cmd::completions::man(dir.as_deref()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // A closed pipe (`tracex dump x | head`) is not a failure.
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) {
                return ExitCode::SUCCESS;
            }
            term::error(format_args!("{e:#}"));
            ExitCode::from(1)
        }
    }
}
