//! The join of CUDA calls and the GPU work they launched, by correlation id.

use tracex_ir::{Event, FlowBind, FlowPoint, FlowRole, ImportCtx, Location, Result, TrackId};

use crate::diag as d;

/// Name and category of the call → GPU work flows (Kineto's, which viewers know).
pub const FLOW_NAME: &str = "ac2g";

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
            ctx.diag.record_n(kind, self.count, at, Some(detail));
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
            let id = ctx.defs.new_flow_id();
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
    use tracex_ir::{Defs, Diagnostics, Progress};

    #[test]
    fn correlation_joins_by_id_and_counts_the_rest() {
        let mut defs = Defs::new();
        let mut diag = Diagnostics::default();
        let mut sink = MemSink::default();
        let progress = Progress::new();
        let mut ctx = ImportCtx::new(&mut defs, &mut diag, &mut sink, &progress);
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
        let get = |n| diag.get(n).unwrap();
        assert_eq!(get("cupti_duplicate_correlation").first, at(3));
        assert_eq!(get("cupti_gpu_before_call").first, at(5));
        let orphan = get("cupti_gpu_without_call");
        assert_eq!((orphan.count, &orphan.first), (2, &at(6)));
    }
}
