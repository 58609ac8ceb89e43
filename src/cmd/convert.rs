//! `tracex convert IN... OUT`: inputs into one output (folders make a batch: `batch`).

use anyhow::bail;

use super::conversion::{convert_one, output_format};
use crate::cli::ConvertArgs;

pub fn run(args: &ConvertArgs, quiet: bool) -> anyhow::Result<()> {
    let (out, ins) = args.paths.split_last().expect("clap requires one path");
    if ins.is_empty() {
        bail!("give the output path after the input(s): tracex convert IN... OUT (or folders with --to for a batch)");
    }
    let format = output_format(out, args.to.as_deref())?;
    convert_one(ins, out, format, args, quiet)
}
