//! `tracex`: convert GPU and CPU performance traces between formats.

mod cli;
mod cmd;
mod filter;
mod formats;
mod input;
mod pipeline;
mod progress;

use std::process::ExitCode;

use clap::Parser;

/// Importers allocate many small argument lists and strings per event, often freed on another
/// thread (the sorter's merge); mimalloc serves that pattern faster than glibc's allocator.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    let quiet = cli.quiet;
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
            eprintln!("tracex: error: {e:#}");
            ExitCode::from(1)
        }
    }
}
