//! `tracex-gen`: writes large synthetic traces of each input format, for benchmarks
//! (`scripts/bench.sh`). Output is deterministic for given arguments.

use tracex_gen::{android, chrome, cupti, nsys};

mod measure;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(about = "Generate large synthetic traces for tracex benchmarks")]
struct Cli {
    #[command(subcommand)]
    what: What,
}

#[derive(Subcommand)]
enum What {
    /// An Android system trace (Perfetto protobuf): atrace markers in per-CPU ftrace bundles out
    /// of time order, a process tree, GPU counters
    Android(android::Args),
    /// A PyTorch-profiler-like Chrome JSON trace: CPU ops launching kernels with flows,
    /// GPU streams, counters
    Chrome(chrome::Args),
    /// A matching pair of GPU flame-graph inputs: uprobe CPU stacks at each cudaLaunchKernel
    /// (extended folded) and the CUPTI records of the launches (JSON or text)
    Cupti(cupti::Args),
    /// Time the Chrome importer against plain serde_json typed parsing of the same file
    Measure(measure::Args),
    /// An Nsight Systems SQLite export: NVTX ranges around CUDA launches, kernels on GPU
    /// streams, in two processes on two GPUs
    Nsys(nsys::Args),
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().what {
        What::Android(a) => android::run(&a),
        What::Chrome(a) => chrome::run(&a),
        What::Cupti(a) => cupti::run(&a),
        What::Measure(a) => measure::run(&a),
        What::Nsys(a) => nsys::run(&a),
    }
}
