//! The join of CUDA calls and the GPU work they launched, by correlation id.

use tracex_ir::{Event, FlowBind, FlowPoint, FlowRole, ImportCtx, Result, TrackId};

use super::tally::{Loc, Tally};
use crate::diag as d;

/// Name and category of the call → GPU work flows (Kineto's, which viewers know).
pub const FLOW_NAME: &str = "ac2g";

/// A point waiting for its correlation partner: 32 bytes, as a million launches keep two
/// million of them until the end.
#[derive(Clone, Copy, Debug)]
struct Point {
    id: u64,
    ts: i64,
    /// Where the input has it (an event index or a line number, as the importer counts): also
    /// its arrival order, for reporting the first problem of a kind as the input has it.
    at: u64,
    track: TrackId,
}

/// Joins calls and GPU work by correlation id, at the end (records come in buffer order, not
/// in time order).
#[derive(Default)]
pub struct Correlation {
    calls: Vec<Point>,
    work: Vec<Point>,
}

/// Input bytes per record, at least, in the CUPTI inputs tracex reads (a Chrome JSON record
/// of a launch or a kernel is 150-300 bytes, a text record more).
const MIN_RECORD_BYTES: u64 = 256;

impl Correlation {
    /// Room for the points of an input of `bytes` bytes (0: unknown), so that the two vectors
    /// do not grow by copying: growing them was 5% of the 1M-launch merge's importing thread.
    /// Room never written is only address space.
    pub fn sized_for(bytes: u64) -> Correlation {
        let n = usize::try_from(bytes / MIN_RECORD_BYTES).unwrap_or(0);
        Correlation {
            calls: Vec::with_capacity(n),
            work: Vec::with_capacity(n),
        }
    }

    pub fn call(&mut self, id: u64, track: TrackId, ts: i64, at: u64) {
        self.calls.push(Point { id, ts, at, track });
    }

    pub fn work(&mut self, id: u64, track: TrackId, ts: i64, at: u64) {
        self.work.push(Point { id, ts, at, track });
    }

    /// Emits a two-point flow from each call to each piece of GPU work with its id. Both sides
    /// are sorted by id (stably: ids mostly come in order, so this is nearly linear) and merged.
    pub fn finish(mut self, ctx: &mut ImportCtx, loc: Loc) -> Result<()> {
        self.calls.sort_by_key(|p| p.id);
        self.work.sort_by_key(|p| p.id);
        let mut duplicate = Tally::default();
        for pair in self.calls.windows(2) {
            if pair[0].id == pair[1].id {
                duplicate.add(pair[1].at, || {
                    Some(format!("correlation id {}", pair[1].id))
                });
            }
        }
        duplicate.record(ctx, &d::DUPLICATE_CORRELATION, loc);
        let (mut orphan, mut backwards) = (Tally::default(), Tally::default());
        let name = Some(ctx.defs.intern(FLOW_NAME));
        let mut c = 0;
        for w in &self.work {
            // the first call with the id (the sort is stable)
            while c < self.calls.len() && self.calls[c].id < w.id {
                c += 1;
            }
            let Some(call) = self.calls.get(c).filter(|call| call.id == w.id) else {
                orphan.add(w.at, || Some(format!("correlation id {}", w.id)));
                continue;
            };
            if w.ts < call.ts {
                backwards.add(w.at, || Some(format!("correlation id {}", w.id)));
                continue;
            }
            // the correlation id, as Kineto's flows have it, unless taken
            let (id, renumbered) = ctx.defs.flow_id(Some(w.id));
            if renumbered {
                ctx.diag
                    .record(&tracex_ir::diag::kinds::FLOW_ID_RENUMBERED, loc(w.at));
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
        orphan.record(ctx, &d::GPU_WITHOUT_CALL, loc);
        backwards.record(ctx, &d::GPU_BEFORE_CALL, loc);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracex_ir::mem::MemSink;
    use tracex_ir::{Defs, Diagnostics, Location, Progress};

    #[test]
    fn correlation_joins_by_id_and_counts_the_rest() {
        let mut defs = Defs::new();
        let mut diag = Diagnostics::default();
        let mut sink = MemSink::default();
        let progress = Progress::new();
        let mut ctx = ImportCtx::new(&mut defs, &mut diag, &mut sink, &progress);
        let (cpu, gpu) = (TrackId(1), TrackId(2));
        let mut c = Correlation::default();
        let at = |l| l;
        c.work(7, gpu, 150, at(1)); // printed before its call, as buffers complete
        c.call(7, cpu, 100, at(2));
        c.call(7, cpu, 120, at(3)); // a second call with id 7
        c.call(8, cpu, 200, at(4));
        c.work(8, gpu, 190, at(5)); // starts before its call
        c.work(9, gpu, 300, at(6)); // no call
        c.work(5, gpu, 310, at(7)); // no call either, but later in the input
        c.finish(&mut ctx, Location::Line).unwrap();
        let ts: Vec<(FlowRole, i64)> = sink
            .events
            .iter()
            .map(|e| match e {
                Event::Flow(f) => (f.role, f.ts),
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(ts, [(FlowRole::Start, 100), (FlowRole::End, 150)]);
        let get = |n| diag.get(n).unwrap();
        assert_eq!(get("cupti_duplicate_correlation").first, Location::Line(3));
        assert_eq!(get("cupti_gpu_before_call").first, Location::Line(5));
        let orphan = get("cupti_gpu_without_call");
        assert_eq!((orphan.count, &orphan.first), (2, &Location::Line(6)));
    }
}
