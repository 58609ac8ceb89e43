//! `tracex completions SHELL` and `tracex man`: shell completions (clap_complete) and man pages
//! (clap_mangen), generated from the same definitions that parse the command line.

use std::io::Write;
use std::path::Path;

use anyhow::Context;
use clap::CommandFactory;

/// The command line, as clap knows it.
fn command() -> clap::Command {
    crate::cli::Cli::command()
}

pub fn completions(shell: clap_complete::Shell) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    clap_complete::generate(shell, &mut command(), "tracex", &mut out);
    out.flush()?;
    Ok(())
}

/// The man page on stdout, or with `dir` one page per command there.
pub fn man(dir: Option<&Path>) -> anyhow::Result<()> {
    let cmd = command();
    match dir {
        None => {
            let mut out = std::io::stdout().lock();
            clap_mangen::Man::new(cmd).render(&mut out)?;
            out.flush()?;
        }
        Some(d) => {
            std::fs::create_dir_all(d).with_context(|| format!("cannot create {}", d.display()))?;
            clap_mangen::generate_to(cmd, d)
                .with_context(|| format!("cannot write the man pages into {}", d.display()))?;
        }
    }
    Ok(())
}
