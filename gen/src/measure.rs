//! `tracex-gen measure`: times the Chrome importer against the serde_json baseline on one file,
//! so `scripts/bench.sh` can print both on the same machine and input.

use std::time::Instant;

use tracex_ir::{Defs, Diagnostics, ImportCtx, NullSink, Progress};

#[derive(clap::Args)]
pub struct Args {
    /// A Chrome JSON trace (plain, not gzip)
    file: String,
}

pub fn run(a: &Args) -> anyhow::Result<()> {
    let bytes = std::fs::read(&a.file)?;
    let mb = bytes.len() as f64 / 1e6;
    let t = Instant::now();
    let n = tracex_gen::baseline::parse(&bytes)?;
    let serde_s = t.elapsed().as_secs_f64();
    println!(
        "serde_json typed parse:   {n} events, {serde_s:.2} s, {:.1} MB/s",
        mb / serde_s
    );
    drop(bytes);
    // The importer streams from the file, as the CLI does.
    let t = Instant::now();
    let mut defs = Defs::new();
    let mut diag = Diagnostics::default();
    let mut sink = NullSink;
    let progress = Progress::new();
    let mut ctx = ImportCtx::new(&mut defs, &mut diag, &mut sink, &progress);
    let f = std::io::BufReader::with_capacity(1 << 20, std::fs::File::open(&a.file)?);
    tracex_chrome::import(f, &Default::default(), &mut ctx)?;
    let events = ctx.emitted();
    let ours = t.elapsed().as_secs_f64();
    println!(
        "tracex chrome import:     {events} IR events, {ours:.2} s, {:.1} MB/s",
        mb / ours
    );
    println!("ratio (tracex / serde):   {:.2}", serde_s / ours);
    Ok(())
}
