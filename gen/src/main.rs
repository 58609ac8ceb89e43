//! `tracex-gen`: writes large synthetic traces of each input format, for benchmarks
//! (`scripts/bench.sh`). Output is deterministic for given arguments.

mod chrome;
mod nsys;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(about = "Generate large synthetic traces for tracex benchmarks")]
struct Cli {
    #[command(subcommand)]
    what: What,
}

#[derive(Subcommand)]
enum What {
    /// A PyTorch-profiler-like Chrome JSON trace: CPU ops launching kernels with flows,
    /// GPU streams, counters
    Chrome(chrome::Args),
    /// An Nsight Systems SQLite export: NVTX ranges around CUDA launches, kernels on GPU
    /// streams, in two processes on two GPUs
    Nsys(nsys::Args),
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().what {
        What::Chrome(a) => chrome::run(&a),
        What::Nsys(a) => nsys::run(&a),
    }
}
