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
    /// Arrival order, for reporting the first problem of a kind as the input has it.
    seq: usize,
    at: Location,
}

impl Point {
    fn push(list: &mut Vec<Point>, id: u64, track: TrackId, ts: i64, at: Location) {
        let seq = list.len();
        list.push(Point {
            id,
            track,
            ts,
            seq,
            at,
        });
    }
}

/// The count and first occurrence (in input order) of one diagnostic kind.
#[derive(Default)]
struct Tally {
    count: u64,
    first: Option<(usize, Location, String)>,
}

impl Tally {
    fn add(&mut self, p: &Point, detail: impl FnOnce() -> String) {
        self.count += 1;
        if self.first.as_ref().is_none_or(|f| p.seq < f.0) {
            self.first = Some((p.seq, p.at.clone(), detail()));
        }
    }

    fn record(self, ctx: &mut ImportCtx, kind: &'static tracex_ir::DiagKind) {
        if let Some((_, at, detail)) = self.first {
            ctx.defs.diag.record_n(kind, self.count, at, Some(detail));
        }
    }
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
        Point::push(&mut self.calls, id, track, ts, at);
    }

    pub fn work(&mut self, id: u64, track: TrackId, ts: i64, at: Location) {
        Point::push(&mut self.work, id, track, ts, at);
    }

    /// Emits a two-point flow from each call to each piece of GPU work with its id. Both sides
    /// are sorted by id (stably: ids mostly come in order, so this is nearly linear) and merged.
    pub fn finish(mut self, ctx: &mut ImportCtx) -> Result<()> {
        self.calls.sort_by_key(|p| p.id);
        self.work.sort_by_key(|p| p.id);
        let mut duplicate = Tally::default();
        for pair in self.calls.windows(2) {
            if pair[0].id == pair[1].id {
                duplicate.add(&pair[1], || format!("correlation id {}", pair[1].id));
            }
        }
        duplicate.record(ctx, &d::DUPLICATE_CORRELATION);
        let (mut orphan, mut backwards) = (Tally::default(), Tally::default());
        let name = Some(ctx.defs.intern(FLOW_NAME));
        let mut c = 0;
        for w in &self.work {
            // the first call with the id (the sort is stable)
            while c < self.calls.len() && self.calls[c].id < w.id {
                c += 1;
            }
            let Some(call) = self.calls.get(c).filter(|call| call.id == w.id) else {
                orphan.add(w, || format!("correlation id {}", w.id));
                continue;
            };
            if w.ts < call.ts {
                backwards.add(w, || format!("correlation id {}", w.id));
                continue;
            }
            // the correlation id, as Kineto's flows have it, unless taken
            let (id, renumbered) = ctx.defs.flow_id(Some(w.id));
            if renumbered {
                ctx.defs
                    .diag
                    .record(&tracex_ir::diag::kinds::FLOW_ID_RENUMBERED, w.at.clone());
            }
            for (role, p) in [(FlowRole::Start, call), (FlowRole::End, w)] {
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
        orphan.record(ctx, &d::GPU_WITHOUT_CALL);
        backwards.record(ctx, &d::GPU_BEFORE_CALL);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracex_ir::mem::MemSink;
    use tracex_ir::{Defs, Progress};

    #[test]
    fn correlation_joins_by_id_and_counts_the_rest() {
        let mut defs = Defs::new();
        let mut sink = MemSink::default();
        let progress = Progress::new();
        let mut ctx = ImportCtx::new(&mut defs, &mut sink, &progress);
        let (cpu, gpu) = (TrackId(1), TrackId(2));
        let mut c = Correlation::default();
        let at = |l| Location::Line(l);
        c.work(7, gpu, 150, at(1)); // printed before its call, as buffers complete
        c.call(7, cpu, 100, at(2));
        c.call(7, cpu, 120, at(3)); // a second call with id 7
        c.call(8, cpu, 200, at(4));
        c.work(8, gpu, 190, at(5)); // starts before its call
        c.work(9, gpu, 300, at(6)); // no call
        c.work(5, gpu, 310, at(7)); // no call either, but later in the input
        c.finish(&mut ctx).unwrap();
        let ts: Vec<(FlowRole, i64)> = sink
            .events
            .iter()
            .map(|e| match e {
                Event::Flow(f) => (f.role, f.ts),
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(ts, [(FlowRole::Start, 100), (FlowRole::End, 150)]);
        let get = |n| defs.diag.get(n).unwrap();
        assert_eq!(get("cupti_duplicate_correlation").first, at(3));
        assert_eq!(get("cupti_gpu_before_call").first, at(5));
        let orphan = get("cupti_gpu_without_call");
        assert_eq!((orphan.count, &orphan.first), (2, &at(6)));
    }
}
