//! The statistics sink: durations of every slice by (kind, name), and for NVTX ranges on
//! threads the GPU time of the work launched inside them (followed through launch flows).
//! Reads the event stream once, in the IR's total order.

use rustc_hash::FxHashMap;
use tracex_ir::kind::{classify, SliceKind};
use tracex_ir::{Defs, Diagnostics, Event, FlowId, FlowRole, Sink, StrId, TrackId, TrackKind};

/// What one trace contributes: every duration, grouped.
#[derive(Default, Debug)]
pub struct TraceStats {
    /// Durations (ns) of slices by (kind, name). Open slices are not counted.
    pub slices: Vec<((SliceKind, String), Vec<i64>)>,
    /// For NVTX ranges on threads: per range instance, the summed duration of the GPU work
    /// launched inside it, by range name.
    pub nvtx_gpu: Vec<(String, Vec<i64>)>,
    pub first_ts: Option<i64>,
    pub last_ts: Option<i64>,
    pub open_slices: u64,
}

/// An NVTX range instance still waiting for the GPU work it launched.
struct Range {
    name: StrId,
    end: i64,
    gpu: i64,
    /// Launches started inside the range whose GPU work has not been seen yet.
    pending: u32,
    launched: bool,
    /// Still on its thread's stack of open ranges.
    open: bool,
}

#[derive(Default)]
pub struct StatsSink {
    durations: FxHashMap<(SliceKind, StrId), Vec<i64>>,
    nvtx_gpu: FxHashMap<StrId, Vec<i64>>,
    /// Open NVTX ranges per thread track (innermost last): indexes into `ranges`.
    open_ranges: FxHashMap<TrackId, Vec<usize>>,
    ranges: Vec<Option<Range>>,
    free: Vec<usize>,
    /// Launch flows started inside NVTX ranges: the ranges they count for.
    flows: FxHashMap<FlowId, Vec<usize>>,
    /// The last slice started on each track: (start, duration).
    last_slice: FxHashMap<TrackId, (i64, i64)>,
    first: Option<i64>,
    last: Option<i64>,
    open_slices: u64,
    pub result: Option<TraceStats>,
}

impl StatsSink {
    fn see(&mut self, start: i64, end: i64) {
        self.first = Some(self.first.map_or(start, |f| f.min(start)));
        self.last = Some(self.last.map_or(end, |l| l.max(end)));
    }

    /// Closes ranges on `track` that ended before `ts`; a finished range with no pending
    /// launches is counted now.
    fn close_ranges(&mut self, track: TrackId, ts: i64) {
        let Some(stack) = self.open_ranges.get_mut(&track) else {
            return;
        };
        let mut closed = Vec::new();
        while let Some(&i) = stack.last() {
            if self.ranges[i].as_ref().is_some_and(|r| r.end <= ts) {
                stack.pop();
                closed.push(i);
            } else {
                break;
            }
        }
        for i in closed {
            if let Some(r) = self.ranges[i].as_mut() {
                r.open = false;
            }
            self.retire_if_done(i);
        }
    }

    /// Counts a range once it is closed and all its launches reached the GPU.
    fn retire_if_done(&mut self, i: usize) {
        if self.ranges[i]
            .as_ref()
            .is_some_and(|r| !r.open && r.pending == 0)
        {
            let r = self.ranges[i].take().expect("live range");
            if r.launched {
                self.nvtx_gpu.entry(r.name).or_default().push(r.gpu);
            }
            self.free.push(i);
        }
    }

    fn new_range(&mut self, r: Range) -> usize {
        match self.free.pop() {
            Some(i) => {
                self.ranges[i] = Some(r);
                i
            }
            None => {
                self.ranges.push(Some(r));
                self.ranges.len() - 1
            }
        }
    }
}

impl Sink for StatsSink {
    fn event(&mut self, defs: &Defs, _: &mut Diagnostics, ev: Event) -> tracex_ir::Result<()> {
        match ev {
            Event::Slice(s) => {
                let kind = classify(defs.opt_str(s.cat));
                let Some(dur) = s.dur else {
                    self.open_slices += 1;
                    self.see(s.ts, s.ts);
                    return Ok(());
                };
                self.see(s.ts, s.ts + dur);
                self.durations.entry((kind, s.name)).or_default().push(dur);
                if let TrackKind::Thread(_) = defs.track(defs.root_track(s.track)).kind {
                    self.close_ranges(s.track, s.ts);
                    if kind == SliceKind::Nvtx {
                        let i = self.new_range(Range {
                            name: s.name,
                            end: s.ts + dur,
                            gpu: 0,
                            pending: 0,
                            launched: false,
                            open: true,
                        });
                        self.open_ranges.entry(s.track).or_default().push(i);
                    }
                }
                // A flow end binds to the slice that starts at its time on its track: GPU
                // streams, or plain threads of a device pid in Kineto-style traces.
                self.last_slice.insert(s.track, (s.ts, dur));
            }
            Event::Flow(f) => {
                self.see(f.ts, f.ts);
                match f.role {
                    FlowRole::Start => {
                        self.close_ranges(f.track, f.ts);
                        if let Some(stack) = self.open_ranges.get(&f.track) {
                            let owners: Vec<usize> = stack.clone();
                            for &i in &owners {
                                if let Some(r) = self.ranges[i].as_mut() {
                                    r.pending += 1;
                                    r.launched = true;
                                }
                            }
                            if !owners.is_empty() {
                                self.flows.insert(f.id, owners);
                            }
                        }
                    }
                    FlowRole::Step => {}
                    FlowRole::End => {
                        if let Some(owners) = self.flows.remove(&f.id) {
                            let gpu = match self.last_slice.get(&f.track) {
                                Some(&(start, dur)) if f.ts >= start && f.ts <= start + dur => dur,
                                _ => 0,
                            };
                            for i in owners {
                                if let Some(r) = self.ranges[i].as_mut() {
                                    r.gpu += gpu;
                                    r.pending -= 1;
                                }
                                self.retire_if_done(i);
                            }
                        }
                    }
                }
            }
            Event::Instant(i) => self.see(i.ts, i.ts),
            Event::Counter(c) => self.see(c.ts, c.ts),
            Event::Sample(s) => {
                if let Some(t) = s.ts {
                    self.see(t, t);
                }
            }
        }
        Ok(())
    }

    fn finish(&mut self, defs: &Defs, _: &mut Diagnostics) -> tracex_ir::Result<()> {
        // Ranges still open, or whose launches never reached the GPU in the trace, count with
        // what they got.
        self.open_ranges.clear();
        for i in 0..self.ranges.len() {
            if let Some(r) = self.ranges[i].as_mut() {
                r.pending = 0;
                r.open = false;
            }
            self.retire_if_done(i);
        }
        let mut slices: Vec<((SliceKind, String), Vec<i64>)> = std::mem::take(&mut self.durations)
            .into_iter()
            .map(|((k, n), v)| ((k, defs.str(n).to_string()), v))
            .collect();
        slices.sort_by(|a, b| a.0.cmp(&b.0));
        let mut nvtx_gpu: Vec<(String, Vec<i64>)> = std::mem::take(&mut self.nvtx_gpu)
            .into_iter()
            .map(|(n, v)| (defs.str(n).to_string(), v))
            .collect();
        nvtx_gpu.sort_by(|a, b| a.0.cmp(&b.0));
        self.result = Some(TraceStats {
            slices,
            nvtx_gpu,
            first_ts: self.first,
            last_ts: self.last,
            open_slices: self.open_slices,
        });
        Ok(())
    }
}
