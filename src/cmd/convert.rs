//! `tracex convert IN... OUT`: inputs into one output (folders make a batch: `batch`).

use anyhow::bail;

use super::conversion::{convert_one, output_format};
use crate::cli::ConvertArgs;

pub fn run(args: &ConvertArgs, quiet: bool) -> anyhow::Result<()> {
    let (out, ins) = args.paths.split_last().expect("clap requires one path");
    if ins.is_empty() {
        bail!("give the output path after the input(s): tracex convert IN... OUT (or folders with --to for a batch)");
    }
    if args.shard.is_some() {
        bail!("--shard splits the inputs of a batch (folders, or -o DIR); this is one conversion");
    }
    let format = output_format(out, args.to.as_deref())?;
    let started = std::time::Instant::now();
    let report = convert_one(ins, out, format, args, quiet)?;
    if args.json {
        super::report::print(&[report], &[], 0, started.elapsed().as_secs_f64());
    }
    Ok(())
}
