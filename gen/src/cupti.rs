//! A matching pair of GPU flame-graph inputs: the CPU stacks the eBPF uprobe profiler writes at
//! each `cudaLaunchKernel` (extended folded lines) and the CUPTI records of the same launches
//! (Chrome JSON as `cupti_trace_parser.py` lays it out, or the injection library's raw text).
//!
//! Each launch is a `cudaLaunchKernel` runtime call on one of a process's threads (a thread makes
//! one call at a time: its calls never overlap), followed by
//! its kernel on a stream; some `cudaGetLastError` calls come in between. Kernels run 1–6 µs and
//! at most 1024 wait in a stream's queue (a launch into a full queue blocks, as CUDA's does). Each uprobe
//! stack is taken 100–400 ns before its launch call starts (launches are 1.5–4.5 µs apart, so
//! the nearest launch is unambiguous); every 50th launch has no uprobe stack, and every 1000th
//! stack is from 20 ms before the first launch (no launch within 10 ms).

use std::fs::File;
use std::io::{BufWriter, Write};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum GpuFormat {
    /// CUPTI Chrome JSON (one event per line; kernels without pid/tid, as the parser writes)
    #[default]
    Json,
    /// The CUPTI injection library's raw text
    Text,
}

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Number of kernel launches
    #[arg(long, default_value_t = 100_000)]
    pub launches: u64,
    /// Processes the launches are spread over
    #[arg(long, default_value_t = 1)]
    pub processes: u64,
    /// Output path of the CPU stacks (extended folded)
    #[arg(long)]
    pub cpu: String,
    /// Output path of the CUPTI records
    #[arg(long)]
    pub gpu: String,
    /// Form of the CUPTI records
    #[arg(long, value_enum, default_value = "json")]
    pub gpu_format: GpuFormat,
}

/// A small deterministic generator (SplitMix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const KERNELS: &[&str] = &[
    "_Z13matmul_kernelPfS_S_ii",
    "_Z14softmax_kernelPfi",
    "_Z12accum_kernelPfS_i",
    "_Z15layernorm_kernelPfS_S_S_iii",
    "_Z12rope_kernelPfS_ii",
    "_Z11gelu_kernelPfi",
];

const CALLERS: &[&str] = &[
    "forward(Transformer*, int, int)",
    "forward_layer(Layer*, float*, int)",
    "attention(Layer*, KVCache*, int)",
    "mlp(Layer*, float*)",
    "generate(Transformer*, Tokenizer*, char const*, int)",
];

/// `ns` as µs the way Python prints `ns / 1000` (shortest float that reads back the same).
fn micros(ns: u64) -> String {
    let v = ns as f64 / 1000.0;
    let s = format!("{v:?}");
    if s.contains('.') || s.contains('e') {
        s
    } else {
        format!("{s}.0")
    }
}

struct Writers {
    cpu: BufWriter<File>,
    gpu: BufWriter<File>,
    format: GpuFormat,
    first: bool,
}

impl Writers {
    fn json_event(&mut self, body: std::fmt::Arguments) -> std::io::Result<()> {
        if !std::mem::take(&mut self.first) {
            self.gpu.write_all(b",\n")?;
        }
        self.gpu.write_fmt(body)
    }

    #[allow(clippy::too_many_arguments)]
    fn call(
        &mut self,
        name: &str,
        start: u64,
        dur: u64,
        cbid: u32,
        pid: u64,
        tid: u64,
        corr: u64,
    ) -> std::io::Result<()> {
        match self.format {
            GpuFormat::Json => self.json_event(format_args!(
                "{{\"name\": \"Runtime: {name}\", \"ph\": \"X\", \"ts\": {}, \"dur\": {}, \"tid\": {tid}, \"pid\": {pid}, \"cat\": \"CUDA_Runtime\", \"args\": {{\"cbid\": \"{cbid}\", \"correlationId\": {corr}}}}}",
                micros(start),
                micros(dur)
            )),
            GpuFormat::Text => writeln!(
                self.gpu,
                "RUNTIME [ {start}, {} ] duration {dur}, \"{name}\", cbid {cbid}, processId {pid}, threadId {tid}, correlationId {corr}",
                start + dur
            ),
        }
    }

    fn kernel(
        &mut self,
        name: &str,
        start: u64,
        dur: u64,
        stream: u64,
        corr: u64,
    ) -> std::io::Result<()> {
        match self.format {
            GpuFormat::Json => self.json_event(format_args!(
                "{{\"name\": \"Kernel: {name}\", \"ph\": \"X\", \"ts\": {}, \"dur\": {}, \"cat\": \"GPU_Kernel\", \"args\": {{\"correlationId\": {corr}}}}}",
                micros(start),
                micros(dur)
            )),
            GpuFormat::Text => write!(
                self.gpu,
                "CONCURRENT_KERNEL [ {start}, {} ] duration {dur}, \"{name}\", correlationId {corr}, cacheConfigRequested 0, cacheConfigExecuted 0\n\tgrid [ 64, 1, 1 ], block [ 256, 1, 1 ], cluster [ 0, 0, 0 ], sharedMemory (static 0, dynamic 0)\n\tdeviceId 0, contextId 1, streamId {stream}, graphId 0, graphNodeId 0, channelId 1, channelType COMPUTE\n",
                start + dur
            ),
        }
    }
}

pub fn run(a: &Args) -> anyhow::Result<()> {
    let mut w = Writers {
        cpu: BufWriter::with_capacity(1 << 20, File::create(&a.cpu)?),
        gpu: BufWriter::with_capacity(1 << 20, File::create(&a.gpu)?),
        format: a.gpu_format,
        first: true,
    };
    if w.format == GpuFormat::Json {
        w.gpu.write_all(b"{\"traceEvents\": [\n")?;
    } else {
        writeln!(w.gpu, "Enabling CUPTI_ACTIVITY_KIND_RUNTIME.")?;
        writeln!(w.gpu, "Enabling CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL.")?;
    }
    let mut rng = Rng(0x7ace_5eed);
    let processes = a.processes.max(1);
    let first: u64 = 1_761_700_000_000_000_000;
    let mut t = first;
    let mut corr = 1u64;
    let mut gpu_free = vec![t; processes as usize];
    let mut queues = vec![std::collections::VecDeque::new(); processes as usize];
    // when each (process, thread) is done with its last call: a thread makes one call at a time
    let mut thread_free = vec![[t; 2]; processes as usize];
    for i in 0..a.launches {
        let p = i % processes;
        let pid = 40_000 + p;
        let thread = (i / processes % 2) as usize;
        let tid = 2_830_733_312 + thread as u64 * 8_392_704;
        t += 1_500 + rng.below(3_000);
        t = t.max(thread_free[p as usize][thread]);
        let queue = &mut queues[p as usize];
        while queue.front().is_some_and(|&started| started <= t) {
            queue.pop_front();
        }
        if queue.len() >= 1024 {
            // the launch waits until the oldest queued kernel starts
            t = t.max(queue.pop_front().expect("full queue") + 1_000);
        }
        let kernel = KERNELS[rng.below(KERNELS.len() as u64) as usize];
        let caller = CALLERS[rng.below(CALLERS.len() as u64) as usize];
        let launch_dur = 2_000 + rng.below(3_000);
        w.call("cudaLaunchKernel_v7000", t, launch_dur, 211, pid, tid, corr)?;
        let kstart = gpu_free[p as usize].max(t + 5_000);
        let kdur = 1_000 + rng.below(5_000);
        gpu_free[p as usize] = kstart + kdur;
        queues[p as usize].push_back(kstart);
        w.kernel(kernel, kstart, kdur, 7 + p, corr)?;
        if i % 50 != 0 {
            let at = t - 100 - rng.below(300);
            // now and then a stack from before the first launch: nothing to match
            let at = if i % 1000 == 999 {
                first - 20_000_000 - i
            } else {
                at
            };
            writeln!(
                w.cpu,
                "{at} llm_infer {pid} {pid} {} _start;__libc_start_main;0x7f3a1c02a1ca;main;run_inference(Model*, Tokenizer*, char const*);{caller};__device_stub_{kernel}(...);cudaLaunchKernel",
                rng.below(16)
            )?;
        }
        corr += 1;
        thread_free[p as usize][thread] = t + launch_dur + 1;
        if i % 7 == 3 {
            // a call that launches nothing, between launches
            w.call(
                "cudaGetLastError_v3020",
                t + launch_dur + 100,
                150,
                10,
                pid,
                tid,
                corr,
            )?;
            corr += 1;
            thread_free[p as usize][thread] = t + launch_dur + 251;
        }
    }
    if w.format == GpuFormat::Json {
        w.gpu.write_all(b"\n], \"displayTimeUnit\": \"ms\", \"metadata\": {\"tool\": \"tracex-gen\", \"format\": \"Chrome Trace Format\"}}\n")?;
    }
    w.cpu.flush()?;
    w.gpu.flush()?;
    eprintln!(
        "tracex-gen: {} launches: CPU stacks in {}, CUPTI records in {}",
        a.launches, a.cpu, a.gpu
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A thread makes one call at a time: with overlapping calls, the flow from a launch would
    /// bind to whatever other call encloses its start, which no real CUPTI trace shows.
    #[test]
    fn calls_of_a_thread_never_overlap() {
        let dir = std::env::temp_dir().join(format!("tracex-gen-cupti-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (cpu, gpu) = (dir.join("cpu.txt"), dir.join("gpu.json"));
        run(&Args {
            launches: 20_000,
            processes: 1,
            cpu: cpu.to_string_lossy().into(),
            gpu: gpu.to_string_lossy().into(),
            gpu_format: GpuFormat::Json,
        })
        .unwrap();
        let trace: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&gpu).unwrap()).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let mut calls: std::collections::BTreeMap<(i64, i64), Vec<(f64, f64)>> = Default::default();
        for e in trace["traceEvents"].as_array().unwrap() {
            if e["cat"] == "CUDA_Runtime" {
                let (ts, dur) = (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap());
                let thread = (e["pid"].as_i64().unwrap(), e["tid"].as_i64().unwrap());
                calls.entry(thread).or_default().push((ts, ts + dur));
            }
        }
        assert_eq!(calls.len(), 2, "two threads");
        for (thread, mut spans) in calls {
            spans.sort_by(|a, b| a.partial_cmp(b).unwrap());
            // µs as doubles step by 0.25 at these times, and the text is such a double
            for pair in spans.windows(2) {
                assert!(pair[0].1 <= pair[1].0 + 0.5, "{thread:?}: {pair:?} overlap");
            }
        }
    }
}
