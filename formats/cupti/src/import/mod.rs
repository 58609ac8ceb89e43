//! CUPTI activity records → IR, from either form: the raw text of the injection library
//! ([`text`]) or the Chrome JSON made from it ([`json`], read by the Chrome importer).
//!
//! Both map to the same IR: API calls are slices on the calling thread (`cuda_runtime`,
//! `cuda_driver`); kernels and copies are slices on a GPU stream track of a device process
//! (`kernel`, `gpu_memcpy`); a flow goes from each call to the GPU work with its correlation id.
//! Mapping and losses: `docs/formats/cupti.md`.

pub mod json;
pub mod record;
pub mod text;

use std::io::{Cursor, Read};

use rustc_hash::FxHashMap;
use tracex_ir::{
    Defs, Event, FlowBind, FlowPoint, FlowRole, ImportCtx, Location, NamePriority, Process,
    ProcessId, ProcessKind, Result, Track, TrackId, TrackKind,
};

use crate::diag as d;

/// Category of CUPTI overhead slices.
pub const CAT_OVERHEAD: &str = "cupti_overhead";
/// Category of CUPTI memory (allocation) instants.
pub const CAT_MEMORY: &str = "cupti_memory";
/// Name and category of the call → GPU work flows (Kineto's, which viewers know).
pub const FLOW_NAME: &str = "ac2g";
/// CUPTI's "no stream" id, used for GPU work whose stream the input does not give.
pub const UNKNOWN_STREAM: u32 = u32::MAX;

/// Reads CUPTI records (text or Chrome JSON, told apart by the first byte that is not
/// whitespace) from `reader` into `ctx`.
pub fn import<R: Read>(mut reader: R, ctx: &mut ImportCtx) -> Result<()> {
    let mut head = Vec::new();
    let mut chunk = [0u8; 4096];
    let first = loop {
        let n = reader.read(&mut chunk)?;
        head.extend_from_slice(&chunk[..n]);
        if let Some(b) = head.iter().find(|b| !b.is_ascii_whitespace()) {
            break Some(*b);
        }
        if n == 0 {
            break None;
        }
    };
    let input = Cursor::new(head).chain(reader);
    match first {
        Some(b'{' | b'[') => json::import(input, ctx),
        _ => text::import(input, ctx),
    }
}

/// Device processes and their stream tracks.
#[derive(Default)]
pub struct Devices {
    processes: FxHashMap<u32, ProcessId>,
    streams: FxHashMap<(u32, u32), TrackId>,
    process_tracks: FxHashMap<u32, TrackId>,
}

impl Devices {
    pub fn process(&mut self, defs: &mut Defs, device: u32) -> ProcessId {
        *self.processes.entry(device).or_insert_with(|| {
            let name = defs.intern(&format!("GPU {device}"));
            let p = defs.add_process(Process {
                kind: ProcessKind::Device { device },
                ..Process::default()
            });
            defs.set_process_name(p, name, NamePriority::Inferred);
            p
        })
    }

    /// The track of a stream of a device; [`UNKNOWN_STREAM`] gets the name `unknown stream`.
    pub fn stream(&mut self, defs: &mut Defs, device: u32, stream: u32) -> TrackId {
        if let Some(&t) = self.streams.get(&(device, stream)) {
            return t;
        }
        let process = self.process(defs, device);
        let name = (stream == UNKNOWN_STREAM).then(|| defs.intern("unknown stream"));
        let t = defs.add_track(Track {
            kind: TrackKind::GpuStream { device, stream },
            process: Some(process),
            name,
            label: None,
            sort_index: None,
        });
        self.streams.insert((device, stream), t);
        t
    }

    /// The device-wide track (memory operations).
    pub fn process_track(&mut self, defs: &mut Defs, device: u32) -> TrackId {
        if let Some(&t) = self.process_tracks.get(&device) {
            return t;
        }
        let process = self.process(defs, device);
        let t = defs.add_track(Track {
            kind: TrackKind::Process,
            process: Some(process),
            name: None,
            label: None,
            sort_index: None,
        });
        self.process_tracks.insert(device, t);
        t
    }
}

/// A point waiting for its correlation partner.
#[derive(Clone, Debug)]
struct Point {
    id: u64,
    track: TrackId,
    ts: i64,
    at: Location,
}

/// Joins calls and GPU work by correlation id, at the end (records come in buffer order, not
/// in time order).
#[derive(Default)]
pub struct Correlation {
    calls: Vec<Point>,
    work: Vec<Point>,
}

impl Correlation {
    pub fn call(&mut self, id: u64, track: TrackId, ts: i64, at: Location) {
        self.calls.push(Point { id, track, ts, at });
    }

    pub fn work(&mut self, id: u64, track: TrackId, ts: i64, at: Location) {
        self.work.push(Point { id, track, ts, at });
    }

    /// Emits a two-point flow from each call to each piece of GPU work with its id.
    pub fn finish(self, ctx: &mut ImportCtx) -> Result<()> {
        let mut by_id: FxHashMap<u64, Point> = FxHashMap::default();
        for c in self.calls {
            if let Some(first) = by_id.get(&c.id) {
                let at = first.at.clone();
                ctx.defs.diag.record_detail(
                    &d::DUPLICATE_CORRELATION,
                    c.at,
                    format!("correlation id {} first at {at}", c.id),
                );
                continue;
            }
            by_id.insert(c.id, c);
        }
        let name = Some(ctx.defs.intern(FLOW_NAME));
        for w in self.work {
            let Some(c) = by_id.get(&w.id) else {
                ctx.defs.diag.record_detail(
                    &d::GPU_WITHOUT_CALL,
                    w.at,
                    format!("correlation id {}", w.id),
                );
                continue;
            };
            if w.ts < c.ts {
                ctx.defs.diag.record_detail(
                    &d::GPU_BEFORE_CALL,
                    w.at,
                    format!("correlation id {}", w.id),
                );
                continue;
            }
            let id = ctx.defs.new_flow_id();
            for (role, p) in [(FlowRole::Start, c), (FlowRole::End, &w)] {
                ctx.emit(Event::Flow(FlowPoint {
                    id,
                    role,
                    track: p.track,
                    ts: p.ts,
                    bind: FlowBind::Enclosing,
                    name,
                    cat: name,
                }))?;
            }
        }
        Ok(())
    }
}
