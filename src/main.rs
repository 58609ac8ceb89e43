//! `tracex`: convert GPU and CPU performance traces between formats.

#[cfg(feature = "mimalloc")]
mod allocator;
mod cli;
mod cmd;
mod filter;
mod formats;
mod input;
mod memlimit;
mod nsys_rep;
mod pipeline;
mod progress;
mod sched;
mod split;
mod term;
mod version;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};

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
    #[cfg(feature = "mimalloc")]
    allocator::init();
    // before any thread starts: they inherit it
    sched::init();
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
        Ok(()) => match std::env::var_os("TRACEX_FULL_EXIT") {
            // the instrumented build of scripts/pgo.sh writes its profile in the usual exit
            Some(_) => ExitCode::SUCCESS,
            None => exit_now(),
        },
        Err(e) => {
            // A closed pipe (`tracex convert x - | head`) is not a failure: end quietly.
            if broken_pipe(&e) {
                return ExitCode::SUCCESS;
            }
            term::error(format_args!("{e:#}"));
            ExitCode::from(1)
        }
    }
}

/// Ends a successful run at once: every output is written, flushed and in place, and the
/// conversion's threads have been joined. The usual exit tears the heap down first (mimalloc
/// collects and returns its arenas page by page, which the kernel then unmaps anyway), a
/// millisecond of the 40 ms of the 20k-launch GPU merge. `TRACEX_FULL_EXIT` (set by
/// `scripts/pgo.sh` for its training runs) keeps the usual exit: an instrumented build's
/// profile is written by an at-exit handler, and without it the profile-guided build was
/// optimised for a profile of failed runs only, and was a quarter slower than the plain one.
fn exit_now() -> ! {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    // SAFETY: `_exit` only ends the process, skipping at-exit handlers and destructors. Nothing
    // is left for them: outputs were flushed and renamed into place before `run` returned (an
    // output on stdout was flushed by its exporter, and again just above; stderr is not
    // buffered), temporary files are gone with their handles, and the threads still alive (the
    // `--max-memory` watchdog) hold no work.
    unsafe { libc::_exit(0) }
}

/// Whether the error is a write to a closed pipe, directly or inside the IR's error type (whose
/// I/O variant is transparent, so the chain never shows the `io::Error` itself).
fn broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        let io =
            c.downcast_ref::<std::io::Error>()
                .or(match c.downcast_ref::<tracex_ir::Error>() {
                    Some(tracex_ir::Error::Io(io)) => Some(io),
                    _ => None,
                });
        io.is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
