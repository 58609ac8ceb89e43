//! A Kineto-shaped Chrome trace: per step, CPU ops on several threads, each launching a kernel
//! (`cuda_runtime` + `kernel` + an `ac2g` flow), kernels on GPU streams, a memory counter.
//! Timestamps are epoch µs with three decimals, as Kineto writes them.

use std::fs::File;
use std::io::{BufWriter, Write};

#[derive(clap::Args)]
pub struct Args {
    /// Number of trace events to write (approximately)
    #[arg(long, default_value_t = 2_000_000)]
    events: u64,
    /// Output path
    #[arg(long, short)]
    out: String,
}

fn us(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

pub fn run(a: &Args) -> anyhow::Result<()> {
    let mut w = BufWriter::with_capacity(1 << 20, File::create(&a.out)?);
    let n = write(&mut w, a.events)?;
    w.flush()?;
    eprintln!("tracex-gen: wrote {n} events to {}", a.out);
    Ok(())
}

/// Writes a trace of about `events` events to `w`; returns the exact number written.
pub fn write<W: Write>(mut w: W, events: u64) -> std::io::Result<u64> {
    writeln!(w, "{{\"schemaVersion\":1,\"deviceProperties\":[{{\"id\":0,\"name\":\"NVIDIA H100\"}}],\"traceEvents\":[")?;
    let base: u64 = 1_712_195_495_519_689_047;
    let pid = 4242;
    let mut n = 0u64;
    let mut corr = 1u64;
    let mut first = true;
    let mut sep = |w: &mut W| -> std::io::Result<()> {
        if !std::mem::take(&mut first) {
            w.write_all(b",\n")?;
        }
        Ok(())
    };
    let kernels = [
        "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>",
        "ampere_sgemm_128x64_tn",
        "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>",
        "void at::native::reduce_kernel<512, 1>",
    ];
    let mut t = base;
    while n < events {
        for th in 0..4u64 {
            let tid = 5000 + th;
            let op_start = t + th * 97;
            sep(&mut w)?;
            write!(w, "{{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::linear\",\"pid\":{pid},\"tid\":{tid},\"ts\":{},\"dur\":{},\"args\":{{\"External id\":{corr},\"Sequence number\":{n},\"Fwd thread id\":0}}}}", us(op_start), us(41_321))?;
            let launch = op_start + 1_203;
            sep(&mut w)?;
            write!(w, "{{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":{pid},\"tid\":{tid},\"ts\":{},\"dur\":{},\"args\":{{\"cbid\":211,\"correlation\":{corr},\"External id\":{corr}}}}}", us(launch), us(5_431))?;
            let stream = 7 + (th % 2) * 6;
            let kstart = launch + 20_000 + th * 3_000;
            sep(&mut w)?;
            write!(w, "{{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"{}\",\"pid\":0,\"tid\":{stream},\"ts\":{},\"dur\":{},\"args\":{{\"queued\":0,\"device\":0,\"context\":1,\"stream\":{stream},\"correlation\":{corr},\"registers per thread\":32,\"shared memory\":0,\"blocks per SM\":0.5,\"warps per SM\":2.0,\"grid\":[128,1,1],\"block\":[256,1,1]}}}}", kernels[(corr % 4) as usize], us(kstart), us(2_817))?;
            sep(&mut w)?;
            write!(w, "{{\"ph\":\"s\",\"id\":{corr},\"pid\":{pid},\"tid\":{tid},\"ts\":{},\"cat\":\"ac2g\",\"name\":\"ac2g\"}}", us(launch))?;
            sep(&mut w)?;
            write!(w, "{{\"ph\":\"f\",\"id\":{corr},\"pid\":0,\"tid\":{stream},\"ts\":{},\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"}}", us(kstart))?;
            corr += 1;
            n += 5;
        }
        sep(&mut w)?;
        write!(w, "{{\"ph\":\"C\",\"name\":\"GPU memory\",\"pid\":0,\"tid\":0,\"ts\":{},\"args\":{{\"allocated\":{},\"reserved\":{}}}}}", us(t), 1u64 << 30 | (n & 0xffff), 2u64 << 30)?;
        n += 1;
        t += 50_000;
    }
    for (tid, name) in [
        (5000, "MainThread"),
        (5001, "worker 1"),
        (5002, "worker 2"),
        (5003, "worker 3"),
    ] {
        sep(&mut w)?;
        write!(w, "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{pid},\"tid\":{tid},\"args\":{{\"name\":\"{name}\"}}}}")?;
    }
    writeln!(w, "\n],\"displayTimeUnit\":\"ns\"}}")?;
    Ok(n + 4)
}
