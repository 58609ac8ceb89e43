//! The join of CUDA calls and the GPU work they launched, by correlation id.

use tracex_ir::{
    Defs, Diagnostics, Event, FlowBind, FlowPoint, FlowRole, ImportCtx, Result, StrId, TrackId,
};

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

/// Joins calls and GPU work by correlation id. Records come in buffer order, not in time
/// order, but a process's calls come with increasing ids: while they do, a piece of GPU work is
/// joined to its call as it comes, found by a search back from the last call, and its flow goes
/// out with it. The rest waits for the end. Emitting every flow at the end had left the
/// importing thread alone for 2 ms of the 20k-launch GPU merge, and the sorter with its last
/// chunks of flows to sort then; during the import that thread waits for the reader thread.
#[derive(Default)]
pub struct Correlation {
    /// Every call, in input order.
    calls: Vec<Point>,
    /// Whether some call's id was not above the one before it: then `calls` may be out of id
    /// order or hold an id twice, and GPU work waits for the end.
    unordered: bool,
    /// GPU work not joined as it came: its call had not come, or calls were not in id order.
    waiting: Vec<Point>,
    backwards: Tally,
    /// The flows' name and category, interned at the first flow.
    name: Option<StrId>,
}

/// Input bytes per record, at least, in the CUPTI inputs tracex reads (a Chrome JSON record
/// of a launch or a kernel is 150-300 bytes, a text record more).
const MIN_RECORD_BYTES: u64 = 256;

impl Correlation {
    /// Room for the calls of an input of `bytes` bytes (0: unknown), so that the vector does
    /// not grow by copying: growing it was 5% of the 1M-launch merge's importing thread. Room
    /// never written is only address space.
    pub fn sized_for(bytes: u64) -> Correlation {
        let n = usize::try_from(bytes / MIN_RECORD_BYTES).unwrap_or(0);
        Correlation {
            calls: Vec::with_capacity(n),
            ..Correlation::default()
        }
    }

    pub fn call(&mut self, id: u64, track: TrackId, ts: i64, at: u64) {
        if self.calls.last().is_some_and(|last| last.id >= id) {
            self.unordered = true;
        }
        self.calls.push(Point { id, ts, at, track });
    }

    /// GPU work with correlation id `id`: the two points of its flow when its call is known
    /// already, to be emitted after the work itself.
    #[allow(clippy::too_many_arguments)]
    pub fn work(
        &mut self,
        defs: &mut Defs,
        diag: &mut Diagnostics,
        loc: Loc,
        id: u64,
        track: TrackId,
        ts: i64,
        at: u64,
    ) -> Option<[Event; 2]> {
        let work = Point { id, ts, at, track };
        if !self.unordered {
            if let Some(call) = last_with_id(&self.calls, id) {
                let call = *call;
                return self.join(defs, diag, loc, &call, &work);
            }
        }
        self.waiting.push(work);
        None
    }

    /// The flow from `call` to `work`, unless the work starts before its call.
    fn join(
        &mut self,
        defs: &mut Defs,
        diag: &mut Diagnostics,
        loc: Loc,
        call: &Point,
        work: &Point,
    ) -> Option<[Event; 2]> {
        if work.ts < call.ts {
            self.backwards
                .add(work.at, || Some(format!("correlation id {}", work.id)));
            return None;
        }
        // the correlation id, as Kineto's flows have it, unless taken
        let (id, renumbered) = defs.flow_id(Some(work.id));
        if renumbered {
            diag.record(&tracex_ir::diag::kinds::FLOW_ID_RENUMBERED, loc(work.at));
        }
        let name = Some(*self.name.get_or_insert_with(|| defs.intern(FLOW_NAME)));
        let point = |role, p: &Point| {
            Event::Flow(FlowPoint {
                id,
                role,
                track: p.track,
                ts: p.ts,
                bind: FlowBind::Enclosing,
                name,
                cat: name,
            })
        };
        Some([point(FlowRole::Start, call), point(FlowRole::End, work)])
    }

    /// Joins the GPU work that waited to the first call with its id, and counts what cannot be
    /// joined. Both sides are sorted by id (stably: ids mostly come in order, so this is nearly
    /// linear) and merged.
    pub fn finish(mut self, ctx: &mut ImportCtx, loc: Loc) -> Result<()> {
        if self.unordered {
            self.calls.sort_by_key(|p| p.id);
            let mut duplicate = Tally::default();
            for pair in self.calls.windows(2) {
                if pair[0].id == pair[1].id {
                    duplicate.add(pair[1].at, || {
                        Some(format!("correlation id {}", pair[1].id))
                    });
                }
            }
            duplicate.record(ctx, &d::DUPLICATE_CORRELATION, loc);
        }
        let mut waiting = std::mem::take(&mut self.waiting);
        waiting.sort_by_key(|p| p.id);
        let mut orphan = Tally::default();
        let mut c = 0;
        for w in &waiting {
            // the first call with the id (the sort is stable)
            while c < self.calls.len() && self.calls[c].id < w.id {
                c += 1;
            }
            let Some(&call) = self.calls.get(c).filter(|call| call.id == w.id) else {
                orphan.add(w.at, || Some(format!("correlation id {}", w.id)));
                continue;
            };
            if let Some(flow) = self.join(ctx.defs, ctx.diag, loc, &call, w) {
                flow.into_iter().try_for_each(|e| ctx.emit(e))?;
            }
        }
        orphan.record(ctx, &d::GPU_WITHOUT_CALL, loc);
        std::mem::take(&mut self.backwards).record(ctx, &d::GPU_BEFORE_CALL, loc);
        Ok(())
    }
}

/// The call with id `id` in `calls` (sorted by id, without duplicates), found by galloping
/// back from the last: GPU work comes soon after its launch.
fn last_with_id(calls: &[Point], id: u64) -> Option<&Point> {
    let n = calls.len();
    let (mut step, mut hi) = (1, n);
    // every call from `hi` on has a greater id
    while step <= n && calls[n - step].id > id {
        hi = n - step;
        step *= 2;
    }
    let lo = n.saturating_sub(step);
    let i = lo + calls[lo..hi].partition_point(|c| c.id < id);
    calls.get(i).filter(|c| c.id == id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracex_ir::mem::MemSink;
    use tracex_ir::{Defs, Diagnostics, Location, Progress};

    /// Feeds `records` ((is call, id, ts), at = index + 1) to a correlation and gives the flow
    /// points emitted ((role, ts), in order) and the diagnostics.
    fn join(records: &[(bool, u64, i64)]) -> (Vec<(FlowRole, i64)>, Diagnostics) {
        let mut defs = Defs::new();
        let mut diag = Diagnostics::default();
        let mut sink = MemSink::default();
        let progress = Progress::new();
        let (cpu, gpu) = (TrackId(1), TrackId(2));
        let mut c = Correlation::default();
        let mut events = Vec::new();
        for (i, &(is_call, id, ts)) in records.iter().enumerate() {
            let at = i as u64 + 1;
            if is_call {
                c.call(id, cpu, ts, at);
            } else if let Some(flow) = c.work(&mut defs, &mut diag, Location::Line, id, gpu, ts, at)
            {
                events.extend(flow);
            }
        }
        let mut ctx = ImportCtx::new(&mut defs, &mut diag, &mut sink, &progress);
        c.finish(&mut ctx, Location::Line).unwrap();
        events.extend(sink.events);
        let points = events
            .iter()
            .map(|e| match e {
                Event::Flow(f) => (f.role, f.ts),
                _ => unreachable!(),
            })
            .collect();
        (points, diag)
    }

    #[test]
    fn correlation_joins_by_id_and_counts_the_rest() {
        let (points, diag) = join(&[
            (false, 7, 150), // printed before its call, as buffers complete
            (true, 7, 100),
            (true, 7, 120), // a second call with id 7
            (true, 8, 200),
            (false, 8, 190), // starts before its call
            (false, 9, 300), // no call
            (false, 5, 310), // no call either, but later in the input
        ]);
        assert_eq!(points, [(FlowRole::Start, 100), (FlowRole::End, 150)]);
        let get = |n| diag.get(n).unwrap();
        assert_eq!(get("cupti_duplicate_correlation").first, Location::Line(3));
        assert_eq!(get("cupti_gpu_before_call").first, Location::Line(5));
        let orphan = get("cupti_gpu_without_call");
        assert_eq!((orphan.count, &orphan.first), (2, &Location::Line(6)));
    }

    #[test]
    fn work_after_its_call_is_joined_as_it_comes_while_ids_increase() {
        let (points, diag) = join(&[
            (true, 1, 10),
            (true, 2, 20),
            (false, 1, 30), // joined at once
            (false, 3, 40), // its call comes next: joined at the end
            (true, 3, 35),
            (true, 4, 45),
            (false, 4, 50), // joined at once
            (false, 2, 60), // a second piece of work of call 2, joined at once
        ]);
        use FlowRole::{End, Start};
        assert_eq!(
            points,
            [
                (Start, 10),
                (End, 30),
                (Start, 45),
                (End, 50),
                (Start, 20),
                (End, 60),
                (Start, 35),
                (End, 40)
            ]
        );
        assert!(diag.get("cupti_duplicate_correlation").is_none());
    }

    #[test]
    fn once_ids_go_back_work_waits_and_takes_the_first_call_with_its_id() {
        let (points, diag) = join(&[
            (true, 5, 10),
            (true, 5, 20), // a duplicate: from here on, work waits
            (true, 3, 30),
            (false, 5, 40),
            (false, 3, 50),
        ]);
        use FlowRole::{End, Start};
        assert_eq!(points, [(Start, 30), (End, 50), (Start, 10), (End, 40)]);
        let dup = diag.get("cupti_duplicate_correlation").unwrap();
        assert_eq!((dup.count, &dup.first), (1, &Location::Line(2)));
    }

    #[test]
    fn the_search_back_finds_every_call_and_no_missing_one() {
        let calls: Vec<Point> = (0..300u64)
            .map(|i| Point {
                id: i * 2 + 1,
                ts: 0,
                at: i,
                track: TrackId(0),
            })
            .collect();
        for n in 0..calls.len() {
            for id in 0..(2 * n as u64 + 3) {
                let found = last_with_id(&calls[..n], id).map(|p| p.id);
                let want = (id % 2 == 1 && id < 2 * n as u64).then_some(id);
                assert_eq!(found, want, "{n} calls, id {id}");
            }
        }
    }
}
