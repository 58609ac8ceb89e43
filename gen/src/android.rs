//! An Android system trace as Perfetto records it: atrace markers (nested thread slices, async
//! slices by cookie, counters) as ftrace `print` events in per-CPU bundles, a process tree, and
//! GPU counters. Threads move between CPUs and each window's bundles are written from the last
//! CPU to the first, so a slice's end often comes before its begin in the file, as in real
//! recordings (each CPU's buffer is read on its own).

use std::fs::File;
use std::io::{BufWriter, Write};

use prost::Message;
use tracex_perfetto::pb::gpu_counter_descriptor::GpuCounterSpec;
use tracex_perfetto::pb::gpu_counter_event::{gpu_counter, GpuCounter};
use tracex_perfetto::pb::process_tree::{Process, Thread};
use tracex_perfetto::pb::{
    trace_packet, FtraceEventBundle, GpuCounterDescriptor, GpuCounterEvent, PrintFtraceEvent,
    ProcessTree, TracePacket,
};

#[derive(clap::Args)]
pub struct Args {
    /// Number of atrace markers to write (approximately; GPU counter samples come on top)
    #[arg(long, default_value_t = 2_000_000)]
    markers: u64,
    /// Output path
    #[arg(long, short)]
    out: String,
}

const CPUS: u64 = 8;
const PROCESSES: u64 = 4;
const THREADS_PER_PROCESS: u64 = 8;
const GPU_COUNTERS: u32 = 16;
/// Markers per thread per window: a window's bundles hold every CPU's events of that time span.
const PER_WINDOW: u64 = 64;

pub fn run(a: &Args) -> anyhow::Result<()> {
    let mut w = BufWriter::with_capacity(1 << 20, File::create(&a.out)?);
    let (markers, samples) = write(&mut w, a.markers)?;
    w.flush()?;
    eprintln!(
        "tracex-gen: wrote {markers} atrace markers and {samples} GPU counter samples to {}",
        a.out
    );
    Ok(())
}

fn packet<W: Write>(w: &mut W, p: &TracePacket) -> std::io::Result<()> {
    let mut b = vec![0x0a];
    p.encode_length_delimited(&mut b)
        .expect("a Vec grows as needed");
    w.write_all(&b)
}

fn with(seq: u32, ts: Option<u64>, data: trace_packet::Data) -> TracePacket {
    TracePacket {
        timestamp: ts,
        optional_trusted_packet_sequence_id: Some(
            trace_packet::OptionalTrustedPacketSequenceId::TrustedPacketSequenceId(seq),
        ),
        data: Some(data),
        ..Default::default()
    }
}

/// One `FtraceEvent` with a `print` payload, encoded.
fn print_event(ts: u64, tid: u64, text: String) -> Vec<u8> {
    let mut b = Vec::with_capacity(text.len() + 24);
    prost::encoding::uint64::encode(1, &ts, &mut b);
    prost::encoding::uint32::encode(2, &(tid as u32), &mut b);
    let print = PrintFtraceEvent {
        ip: None,
        buf: Some(text),
    };
    prost::encoding::message::encode(3, &print, &mut b);
    b
}

/// Writes the trace; returns the number of markers and of GPU counter samples written.
pub fn write<W: Write>(mut w: W, markers: u64) -> std::io::Result<(u64, u64)> {
    let pid = |p: u64| 1000 + p * 100;
    let tree = ProcessTree {
        processes: (0..PROCESSES)
            .map(|p| Process {
                pid: Some(pid(p) as i32),
                ppid: Some(1),
                cmdline: vec![format!("com.example.app{p}")],
            })
            .collect(),
        threads: (0..PROCESSES)
            .flat_map(|p| {
                (0..THREADS_PER_PROCESS).map(move |t| Thread {
                    tid: Some((pid(p) + t) as i32),
                    name: Some(format!("worker-{t}")),
                    tgid: Some(pid(p) as i32),
                })
            })
            .collect(),
    };
    packet(
        &mut w,
        &with(1, None, trace_packet::Data::ProcessTree(Box::new(tree))),
    )?;
    let specs = (1..=GPU_COUNTERS)
        .map(|id| GpuCounterSpec {
            counter_id: Some(id),
            name: Some(format!("GPU counter {id}")),
            numerator_units: vec![37],
            ..Default::default()
        })
        .collect();
    let desc = GpuCounterEvent {
        counter_descriptor: Some(GpuCounterDescriptor { specs }),
        gpu_id: Some(0),
        ..Default::default()
    };
    let base: u64 = 5_000_000_000;
    packet(
        &mut w,
        &with(
            2,
            Some(base),
            trace_packet::Data::GpuCounterEvent(Box::new(desc)),
        ),
    )?;
    let names = [
        "Choreographer#doFrame",
        "traversal",
        "measure",
        "draw",
        "RenderThread::syncFrameState",
        "binder transaction",
    ];
    let threads = PROCESSES * THREADS_PER_PROCESS;
    let (mut written, mut samples) = (0u64, 0u64);
    let mut window = 0u64;
    // each thread: depth of its open slices
    while written < markers {
        let start = base + window * PER_WINDOW * 10_000;
        let mut per_cpu: Vec<Vec<(u64, Vec<u8>)>> = vec![Vec::new(); CPUS as usize];
        for th in 0..threads {
            let (p, t) = (th / THREADS_PER_PROCESS, th % THREADS_PER_PROCESS);
            let (tgid, tid) = (pid(p), pid(p) + t);
            let mut ts = start + th * 37;
            // slices nest 3 deep: B B B E E E, then an async pair and a counter
            for i in 0..PER_WINDOW / 8 {
                let cpu = ((th + i) % CPUS) as usize;
                let mut emit = |ts: u64, text: String, cpu: usize| {
                    per_cpu[cpu].push((ts, print_event(ts, tid, text)));
                };
                for d in 0..3 {
                    emit(
                        ts,
                        format!("B|{tgid}|{}", names[(d + i as usize) % names.len()]),
                        cpu,
                    );
                    ts += 1_000;
                }
                // the thread moved to the next CPU before its slices end
                let later = (cpu + 1) % CPUS as usize;
                for _ in 0..3 {
                    emit(ts, format!("E|{tgid}"), later);
                    ts += 1_000;
                }
                let cookie = window * 1_000 + th * 8 + i;
                emit(ts, format!("S|{tgid}|load|{cookie}"), later);
                emit(ts + 500, format!("C|{tgid}|queued|{}", i % 5), later);
                emit(ts + 2_500, format!("F|{tgid}|load|{cookie}"), later);
                ts += 3_000;
                written += 8;
            }
        }
        for cpu in (0..CPUS as usize).rev() {
            let mut events = std::mem::take(&mut per_cpu[cpu]);
            events.sort_by_key(|e| e.0);
            let bundle = FtraceEventBundle {
                cpu: Some(cpu as u32),
                event: events.into_iter().map(|e| e.1).collect(),
                ..Default::default()
            };
            packet(
                &mut w,
                &with(3, None, trace_packet::Data::FtraceEvents(Box::new(bundle))),
            )?;
        }
        // the GPU counters every 100 µs of the window
        for k in 0..(PER_WINDOW * 10_000 / 100_000) {
            let counters = (1..=GPU_COUNTERS)
                .map(|id| GpuCounter {
                    counter_id: Some(id),
                    value: Some(gpu_counter::Value::DoubleValue(
                        ((window + k) * id as u64 % 100) as f64 / 2.0,
                    )),
                })
                .collect();
            let e = GpuCounterEvent {
                counters,
                ..Default::default()
            };
            let ts = start + k * 100_000;
            packet(
                &mut w,
                &with(
                    2,
                    Some(ts),
                    trace_packet::Data::GpuCounterEvent(Box::new(e)),
                ),
            )?;
            samples += u64::from(GPU_COUNTERS);
        }
        window += 1;
    }
    Ok((written, samples))
}
