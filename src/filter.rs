//! Filters for every conversion and for stats: a time window, processes, event names, kinds of
//! activity. A pipeline stage placed after the overlap router, so it sees events in time order
//! with every track nested. Slices cut by the window are clipped and marked in args (whose keys
//! it interns: the one definition it adds); a flow whose slice is filtered out is dropped with
//! it.

use anyhow::{bail, Context};
use regex::Regex;
use rustc_hash::{FxHashMap, FxHashSet};
use tracex_ir::defs::set_arg;
use tracex_ir::kind::{classify, SliceKind};
use tracex_ir::{
    CounterValue, Defs, Diagnostics, Event, FlowBind, FlowId, FlowRole, Location, ProcessId,
    ProcessKind, Result, Stage, TrackId, Value,
};

tracex_ir::kinds! {
    CLIPPED = "filter_clipped", Info,
        "a slice crossed the edge of --time-range; it was clipped to the window and marked with tracex_clipped, tracex_original_ts and tracex_original_dur args";
    FLOW_CUT = "filter_flow_cut", Info,
        "a flow started inside the filtered trace but its end was filtered out; the start is kept without an end";
    COUNTER_CARRIED = "filter_counter_carried", Info,
        "a counter's last value before --time-range was repeated at the window start, so its level there is known";
}

/// What passes.
#[derive(Clone, Debug, Default)]
pub struct FilterSpec {
    /// `[start, end)` in ns; `None` = open on that side.
    pub start: Option<i64>,
    pub end: Option<i64>,
    /// The window is relative to the first event (else in the trace's own time).
    pub relative: bool,
    pub pids: Vec<String>,
    pub include: Vec<Regex>,
    pub exclude: Vec<Regex>,
    /// Kinds of activity to keep (empty: all) and to drop (`--activity -samples`).
    pub activity: Vec<String>,
    pub activity_out: Vec<String>,
}

/// Words of `--activity` that every format understands: slice kinds (by category), and kinds
/// of events. Format-specific words (nsys tables such as `sched`) are accepted too; the filter
/// matches any word against an event's category as well (`cuda_event` → `cuda-event`).
pub const ACTIVITIES: &[&str] = &[
    "cuda-api",
    "kernel",
    "memcpy",
    "memset",
    "sync",
    "nvtx",
    "nvtx-kernel",
    "osrt",
    "mpi",
    "library",
    "other",
    "samples",
    "counters",
    "instants",
    "flows",
];

/// The names an event answers to in `--activity`: its kind, its category (with `_` as `-`),
/// and the category without a `cuda-`/`gpu-` prefix.
fn activity_names(kind: SliceKind, cat: Option<&str>) -> Vec<String> {
    let mut v = vec![kind.name().to_string()];
    if let Some(c) = cat {
        for part in c.split(',') {
            let n = part.trim().to_ascii_lowercase().replace('_', "-");
            if let Some(short) = n.strip_prefix("cuda-").or_else(|| n.strip_prefix("gpu-")) {
                v.push(short.to_string());
            }
            v.push(n);
        }
    }
    v
}

impl FilterSpec {
    pub fn is_empty(&self) -> bool {
        self.start.is_none()
            && self.end.is_none()
            && self.pids.is_empty()
            && self.include.is_empty()
            && self.exclude.is_empty()
            && self.activity.is_empty()
            && self.activity_out.is_empty()
    }

    /// Parses `A:B` (either side may be empty) with unit suffixes ns, us, ms, s.
    pub fn set_time_range(&mut self, text: &str, absolute: bool) -> anyhow::Result<()> {
        let Some((a, b)) = text.split_once(':') else {
            bail!("--time-range {text:?}: expected A:B, e.g. 1.5s:2s or 100ms: or :250us");
        };
        let parse = |s: &str| -> anyhow::Result<Option<i64>> {
            if s.trim().is_empty() {
                return Ok(None);
            }
            tracex_ir::time::parse_duration(s)
                .map(Some)
                .with_context(|| {
                    format!("--time-range: {s:?} is not a time (e.g. 12ms, 3.5s, 100us, 42ns)")
                })
        };
        self.start = parse(a)?;
        self.end = parse(b)?;
        if let (Some(s), Some(e)) = (self.start, self.end) {
            if e <= s {
                bail!("--time-range {text:?}: the end is not after the start");
            }
        }
        self.relative = !absolute;
        Ok(())
    }

    /// `list`: words to keep, `-word` to drop, `all`; each word known to the filter or to a
    /// format (`extra`, e.g. nsys table names).
    pub fn set_activity(&mut self, list: &[String], extra: &[&str]) -> anyhow::Result<()> {
        for a in list {
            let (out, word) = match a.strip_prefix('-') {
                Some(w) => (true, w),
                None => (false, a.as_str()),
            };
            if word == "all" {
                continue;
            }
            let word = if word == "metrics" { "counters" } else { word };
            if !ACTIVITIES.contains(&word) && !extra.contains(&word) {
                let mut known: Vec<&str> = ACTIVITIES.to_vec();
                known.extend(extra.iter().filter(|w| !ACTIVITIES.contains(w)));
                bail!("--activity {word:?}: one of all, {}", known.join(", "));
            }
            if out {
                self.activity_out.push(word.to_string());
            } else {
                self.activity.push(word.to_string());
            }
        }
        Ok(())
    }

    /// Whether something answering to `names` passes `--activity`.
    fn activity_ok_any(&self, names: &[String]) -> bool {
        let listed = |l: &Vec<String>| names.iter().any(|n| l.contains(n));
        (self.activity.is_empty() || listed(&self.activity)) && !listed(&self.activity_out)
    }

    fn activity_ok(&self, what: &str) -> bool {
        self.activity_ok_any(&[what.to_string()])
    }

    fn name_ok(&self, name: &str) -> bool {
        (self.include.is_empty() || self.include.iter().any(|r| r.is_match(name)))
            && !self.exclude.iter().any(|r| r.is_match(name))
    }
}

pub struct Filter<S> {
    inner: S,
    spec: FilterSpec,
    /// The window in the trace's time, fixed at the first timed event when relative.
    window: Option<(i64, i64)>,
    /// Per track, open slices (end, kept) innermost last: for binding flow points.
    open: FxHashMap<TrackId, Vec<(i64, bool)>>,
    process_ok: FxHashMap<ProcessId, bool>,
    flows_kept: FxHashSet<FlowId>,
    /// Each counter's last value before the window start, emitted at the start.
    carried: FxHashMap<tracex_ir::CounterId, CounterValue>,
    carried_done: bool,
}

impl<S: Stage> Filter<S> {
    pub fn new(inner: S, spec: FilterSpec) -> Self {
        let window = (!spec.relative)
            .then(|| (spec.start.unwrap_or(i64::MIN), spec.end.unwrap_or(i64::MAX)));
        Filter {
            inner,
            spec,
            window,
            open: FxHashMap::default(),
            process_ok: FxHashMap::default(),
            flows_kept: FxHashSet::default(),
            carried: FxHashMap::default(),
            carried_done: false,
        }
    }

    fn window(&mut self, first_ts: i64) -> (i64, i64) {
        *self.window.get_or_insert_with(|| {
            let s = self
                .spec
                .start
                .map_or(i64::MIN, |a| first_ts.saturating_add(a));
            let e = self
                .spec
                .end
                .map_or(i64::MAX, |b| first_ts.saturating_add(b));
            (s, e)
        })
    }

    fn process_ok(&mut self, defs: &Defs, p: Option<ProcessId>) -> bool {
        if self.spec.pids.is_empty() {
            return true;
        }
        let Some(p) = p else {
            return true;
        };
        *self.process_ok.entry(p).or_insert_with(|| {
            let proc = defs.process(p);
            // GPU work is not tied to one host process in the IR: devices are always kept.
            if matches!(proc.kind, ProcessKind::Device { .. }) {
                return true;
            }
            let pid = proc.os_pid.map(|p| p.to_string());
            let label = defs.opt_str(proc.label);
            self.spec
                .pids
                .iter()
                .any(|want| Some(want.as_str()) == pid.as_deref() || Some(want.as_str()) == label)
        })
    }

    fn track_ok(&mut self, defs: &Defs, track: TrackId) -> bool {
        self.process_ok(defs, defs.track(track).process)
    }

    /// Emits counters carried to the window start, once.
    fn flush_carried(&mut self, defs: &mut Defs, diag: &mut Diagnostics, start: i64) -> Result<()> {
        if self.carried_done {
            return Ok(());
        }
        self.carried_done = true;
        let mut v: Vec<CounterValue> = self.carried.drain().map(|(_, c)| c).collect();
        v.sort_by_key(|c| c.counter);
        for mut c in v {
            c.ts = start;
            diag.record(&COUNTER_CARRIED, Location::Nowhere);
            self.inner.push(defs, diag, Event::Counter(c))?;
        }
        Ok(())
    }

    /// Whether the slice a flow point binds to (the innermost open slice containing it) was kept.
    fn bound_slice_kept(&mut self, track: TrackId, ts: i64) -> bool {
        match self.open.get_mut(&track) {
            Some(stack) => {
                while stack.last().is_some_and(|&(end, _)| end < ts) {
                    stack.pop();
                }
                stack.last().is_none_or(|&(_, kept)| kept)
            }
            None => true,
        }
    }

    fn keep_slice(
        &mut self,
        defs: &mut Defs,
        diag: &mut Diagnostics,
        s: &mut tracex_ir::Slice,
        (ws, we): (i64, i64),
    ) -> bool {
        let end = s.end_or(i64::MAX);
        let kind = classify(defs.opt_str(s.cat));
        // overlaps [ws, we); a zero-length slice at ws counts
        let in_window = (end > ws || (s.ts >= ws && end == s.ts)) && s.ts < we;
        let keep = in_window
            && self.track_ok(defs, s.track)
            && self
                .spec
                .activity_ok_any(&activity_names(kind, defs.opt_str(s.cat)))
            && self.spec.name_ok(defs.str(s.name));
        self.open.entry(s.track).or_default().push((end, keep));
        if !keep {
            return false;
        }
        let clipped_start = s.ts < ws;
        let clipped_end = end > we;
        if clipped_start || clipped_end {
            let what = match (clipped_start, clipped_end) {
                (true, true) => "both",
                (true, false) => "start",
                _ => "end",
            };
            let mut marks = vec![
                ("tracex_clipped", Value::str(what)),
                ("tracex_original_ts", Value::Int(s.ts)),
            ];
            if let Some(d) = s.dur {
                marks.push(("tracex_original_dur", Value::Int(d)));
            }
            for (k, v) in marks {
                let key = defs.intern(k);
                set_arg(&mut s.args, key, v);
            }
            let new_start = s.ts.max(ws);
            if s.dur.is_some() || clipped_end {
                s.dur = Some(end.min(we) - new_start);
            }
            s.ts = new_start;
            diag.record(&CLIPPED, Location::Nowhere);
        }
        true
    }

    fn keep_flow(&mut self, defs: &Defs, f: &tracex_ir::FlowPoint, (ws, we): (i64, i64)) -> bool {
        let in_window = f.ts >= ws && f.ts < we;
        match f.role {
            FlowRole::Start => {
                let ok = in_window
                    && (self.spec.activity_ok("flows") || self.spec.activity_ok("cuda-api"))
                    && !self.spec.activity_out.iter().any(|a| a == "flows")
                    && self.track_ok(defs, f.track)
                    && self.bound_slice_kept(f.track, f.ts);
                if ok {
                    self.flows_kept.insert(f.id);
                }
                ok
            }
            FlowRole::Step | FlowRole::End => {
                if !self.flows_kept.contains(&f.id) {
                    return false;
                }
                let ok = in_window
                    && self.track_ok(defs, f.track)
                    && (f.bind == FlowBind::Next || self.bound_slice_kept(f.track, f.ts));
                if !ok {
                    self.flows_kept.remove(&f.id);
                    // the start is already out: the chain ends at its last kept point
                    return false;
                }
                if f.role == FlowRole::End {
                    self.flows_kept.remove(&f.id);
                }
                true
            }
        }
    }
}

impl<S: Stage> Stage for Filter<S> {
    fn push(&mut self, defs: &mut Defs, diag: &mut Diagnostics, mut ev: Event) -> Result<()> {
        let ts = ev.ts();
        let timed = !matches!(&ev, Event::Sample(s) if s.ts.is_none());
        let w = if timed {
            self.window(ts)
        } else {
            (i64::MIN, i64::MAX)
        };
        // Carried counter values go at the window start, after the slices, instants and flow
        // points of that instant (the total order puts counters after them).
        let after_start =
            ts > w.0 || (ts == w.0 && matches!(ev, Event::Counter(_) | Event::Sample(_)));
        if timed && after_start && !self.carried_done {
            self.flush_carried(defs, diag, w.0)?;
        }
        let keep = match &mut ev {
            Event::Slice(s) => self.keep_slice(defs, diag, s, w),
            Event::Instant(i) => {
                let mut names = activity_names(classify(defs.opt_str(i.cat)), defs.opt_str(i.cat));
                names.push("instants".into());
                let kind_ok = self.spec.activity_ok_any(&names);
                kind_ok
                    && ts >= w.0
                    && ts < w.1
                    && self.track_ok(defs, i.track)
                    && self.spec.name_ok(defs.str(i.name))
            }
            Event::Counter(c) => {
                let def = defs.counter(c.counter);
                let (process, name) = (def.process, def.name);
                let mut names = activity_names(SliceKind::Other, defs.opt_str(def.cat));
                names.retain(|n| n != "other");
                names.push("counters".into());
                let ok = self.spec.activity_ok_any(&names)
                    && self.process_ok(defs, process)
                    && self.spec.name_ok(defs.str(name));
                if ok && ts < w.0 {
                    self.carried.insert(c.counter, *c);
                }
                ok && ts >= w.0 && ts < w.1
            }
            Event::Sample(s) => {
                s.ts.is_none_or(|t| t >= w.0 && t < w.1)
                    && self.spec.activity_ok("samples")
                    && self.track_ok(defs, s.track)
            }
            Event::Flow(f) => {
                let kept = self.flows_kept.contains(&f.id);
                let keep = self.keep_flow(defs, f, w);
                if kept && !keep {
                    diag.record(&FLOW_CUT, Location::Nowhere);
                }
                keep
            }
        };
        if keep {
            self.inner.push(defs, diag, ev)?;
        }
        Ok(())
    }

    fn end(&mut self, defs: &mut Defs, diag: &mut Diagnostics) -> Result<()> {
        if let Some((ws, _)) = self.window {
            self.flush_carried(defs, diag, ws)?;
        }
        self.inner.end(defs, diag)
    }
}
