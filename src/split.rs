//! `--split-by DURATION|SIZE`: one output as numbered, self-contained chunks (`out.001.json`,
//! `out.002.json`, ...) for viewers with size limits. Each chunk is a complete trace of the
//! output format written by its own exporter, which reads the same definitions: every name and
//! metadata is in every chunk. A slice crossing a cut is split there, both parts marked; a
//! counter's last value is repeated at the start of the next chunk; a flow crossing a cut keeps
//! its start and loses the rest (counted).
//!
//! By duration the cuts are known in advance and events stream through. By size the cut is
//! where the chunk's estimated size reaches the target, so a chunk's events are held until it
//! is full (memory: about one chunk); the estimate is the bytes per unit of the chunks written
//! so far (the first assumes 2 bytes per unit); the units estimate each event's bytes
//! from its arguments and, for samples, the stack frames new to the chunk with their names.

use std::path::{Path, PathBuf};

use anyhow::bail;
use rustc_hash::{FxHashMap, FxHashSet};
use tracex_ir::defs::set_arg;
use tracex_ir::format::{ExportSink, Format, Options};
use tracex_ir::io::OutputTarget;
use tracex_ir::{
    CounterId, CounterValue, Defs, Diagnostics, Event, FlowId, FlowRole, Location, Result, Sample,
    Sink, Slice, StackId, StrId, Value,
};

tracex_ir::kinds! {
    SPLIT_SLICE_CUT = "split_slice_cut", Info,
        "a slice crossed a cut between --split-by chunks; it was split there and each part marked with tracex_split (end: continues in the next chunk, start: began in an earlier one, both), tracex_original_ts and tracex_original_dur args";
    SPLIT_FLOW_CUT = "split_flow_cut", Info,
        "a flow crossed a cut between --split-by chunks; its start stays in the earlier chunk, its later points were left out";
    SPLIT_COUNTER_CARRIED = "split_counter_carried", Info,
        "a counter's last value was repeated at the start of the next --split-by chunk, so its level there is known";
}

/// How to cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitBy {
    /// Each chunk covers this many ns, from the first event.
    Duration(i64),
    /// Each chunk is about this many bytes.
    Size(u64),
}

impl SplitBy {
    pub fn parse(text: &str) -> anyhow::Result<SplitBy> {
        let t = text.trim();
        let timed = ["ns", "us", "µs", "ms", "s"].iter().any(|u| t.ends_with(u));
        if timed {
            if let Some(d) = tracex_ir::time::parse_duration(t).filter(|&d| d > 0) {
                return Ok(SplitBy::Duration(d));
            }
        } else if t.ends_with(|c: char| c.is_ascii_alphabetic()) {
            if let Some(s) = crate::pipeline::parse_size(t).filter(|&s| s > 0) {
                return Ok(SplitBy::Size(s as u64));
            }
        }
        bail!("--split-by {text:?}: expected a duration (10s, 500ms, 250us) or a size (100M, 1G, 512k)")
    }
}

/// `out` with the chunk number before its format's extension: `a.json.gz` → `a.003.json.gz`.
pub fn numbered(out: &Path, format: &Format, n: u32) -> PathBuf {
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let lower = name.to_ascii_lowercase();
    let ext = format
        .extensions
        .iter()
        .filter(|e| lower.ends_with(*e) && lower.len() > e.len())
        .max_by_key(|e| e.len())
        .map_or(0, |e| e.len());
    let (stem, ext) = name.split_at(name.len() - ext);
    out.with_file_name(format!("{stem}.{n:03}{ext}"))
}

/// Bytes on disk under `p` (a file, or an archive directory).
pub fn disk_size(p: &Path) -> u64 {
    match std::fs::symlink_metadata(p) {
        Ok(m) if m.is_dir() => std::fs::read_dir(p)
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .map(|e| disk_size(&e.path()))
                    .sum()
            })
            .unwrap_or(0),
        Ok(m) => m.len(),
        Err(_) => 0,
    }
}

/// The argument keys of the marks, interned before the conversion (a sink never adds to the
/// definitions).
#[derive(Clone, Copy)]
pub struct Marks {
    split: StrId,
    original_ts: StrId,
    original_dur: StrId,
}

impl Marks {
    pub fn intern(defs: &mut Defs) -> Marks {
        Marks {
            split: defs.intern("tracex_split"),
            original_ts: defs.intern("tracex_original_ts"),
            original_dur: defs.intern("tracex_original_dur"),
        }
    }
}

struct Chunk {
    sink: ExportSink,
    /// Where it ends (exclusive): known in advance by duration, set at the cut by size.
    end: Option<i64>,
    events: u64,
    /// Events held until the cut (by size).
    held: Vec<Event>,
    flows: FxHashSet<FlowId>,
    /// By size: the chunk's weight so far (see [`Splitter::weigh`]) and the stack nodes its
    /// samples use, which an output writes once per chunk (Chrome `stackFrames`).
    units: u64,
    stack_nodes: FxHashSet<StackId>,
}

pub struct Splitter<'a> {
    by: SplitBy,
    out: PathBuf,
    format: &'static Format,
    opts: &'a Options,
    force: bool,
    marks: Marks,
    chunk: Option<Chunk>,
    /// The first event's time: chunk k covers `origin + k·D ..` by duration.
    origin: Option<i64>,
    /// Parts of slices cut off the previous chunk, to open the next one with.
    carried: Vec<Slice>,
    counters: FxHashMap<CounterId, CounterValue>,
    written: Vec<PathBuf>,
    bytes: u64,
    events: u64,
    /// The weight of the chunks written, for bytes per unit (by size).
    units: u64,
    committed: bool,
}

impl<'a> Splitter<'a> {
    pub fn new(
        by: SplitBy,
        out: &Path,
        format: &'static Format,
        opts: &'a Options,
        force: bool,
        marks: Marks,
    ) -> Splitter<'a> {
        Splitter {
            by,
            out: out.to_path_buf(),
            format,
            opts,
            force,
            marks,
            chunk: None,
            origin: None,
            carried: Vec::new(),
            counters: FxHashMap::default(),
            written: Vec::new(),
            bytes: 0,
            events: 0,
            units: 0,
            committed: false,
        }
    }

    /// The chunk files written, in order.
    pub fn outputs(&self) -> &[PathBuf] {
        &self.written
    }

    fn open(
        &mut self,
        defs: &Defs,
        diag: &mut Diagnostics,
        start: i64,
        end: Option<i64>,
    ) -> Result<()> {
        let path = numbered(&self.out, self.format, self.written.len() as u32 + 1);
        let export = self.format.export.as_ref().expect("an output format");
        let taken = (export.paths)(&path)
            .into_iter()
            .any(|p| p.symlink_metadata().is_ok());
        if taken && !self.force {
            return Err(tracex_ir::Error::Unsupported(format!(
                "{} exists; use --force to replace it",
                path.display()
            )));
        }
        let sink = (export.create)(&OutputTarget::Path(path.clone()), self.opts)?;
        self.written.push(path);
        self.chunk = Some(Chunk {
            sink,
            end,
            events: 0,
            held: Vec::new(),
            flows: FxHashSet::default(),
            units: 0,
            stack_nodes: FxHashSet::default(),
        });
        if self.written.len() > 1 {
            let mut carried: Vec<CounterValue> = self.counters.values().copied().collect();
            carried.sort_by_key(|c| c.counter);
            for mut c in carried {
                c.ts = start;
                diag.record(&SPLIT_COUNTER_CARRIED, Location::Nowhere);
                self.forward(defs, diag, Event::Counter(c))?;
            }
            for s in std::mem::take(&mut self.carried) {
                self.forward(defs, diag, Event::Slice(s))?;
            }
        }
        Ok(())
    }

    /// Cuts the open chunk at `cut`: held events go out clipped, the chunk is finished.
    fn close(&mut self, defs: &Defs, diag: &mut Diagnostics, cut: i64) -> Result<()> {
        let Some(mut chunk) = self.chunk.take() else {
            return Ok(());
        };
        chunk.end = Some(cut);
        let held = std::mem::take(&mut chunk.held);
        self.chunk = Some(chunk);
        for e in held {
            self.forward(defs, diag, e)?;
        }
        let mut chunk = self.chunk.take().expect("open");
        chunk.sink.sink().finish(defs, diag)?;
        self.events += chunk.events;
        self.units += chunk.units;
        self.bytes += self
            .written
            .last()
            .map(|p| {
                let export = self.format.export.as_ref().expect("an output format");
                (export.paths)(p).iter().map(|q| disk_size(q)).sum::<u64>()
            })
            .unwrap_or(0);
        Ok(())
    }

    /// Sends `e` to the open chunk, cutting a slice that runs past the chunk's end.
    fn forward(&mut self, defs: &Defs, diag: &mut Diagnostics, e: Event) -> Result<()> {
        let chunk = self.chunk.as_mut().expect("open chunk");
        let Some(end) = chunk.end else {
            chunk.held.push(e);
            return Ok(());
        };
        let e = match e {
            Event::Slice(mut s) if s.dur.is_some_and(|d| s.ts.saturating_add(d) > end) => {
                let stop = s.ts + s.dur.expect("timed");
                let mut rest = s.clone();
                let continued = s.args.iter().any(|a| a.key == self.marks.original_ts);
                self.mark(&mut s, if continued { "both" } else { "end" });
                s.dur = Some(end - s.ts);
                self.mark(&mut rest, "start");
                rest.ts = end;
                rest.dur = Some(stop - end);
                self.carried.push(rest);
                diag.record(&SPLIT_SLICE_CUT, Location::Nowhere);
                Event::Slice(s)
            }
            Event::Flow(f) => {
                if f.role == FlowRole::Start {
                    chunk.flows.insert(f.id);
                } else if !chunk.flows.contains(&f.id) {
                    diag.record(&SPLIT_FLOW_CUT, Location::Nowhere);
                    return Ok(());
                }
                Event::Flow(f)
            }
            e => e,
        };
        if let Event::Counter(c) = &e {
            self.counters.insert(c.counter, *c);
        }
        let chunk = self.chunk.as_mut().expect("open chunk");
        chunk.events += 1;
        chunk.sink.sink().event(defs, diag, e)
    }

    /// Marks a part of a cut slice; the original times are those of the whole slice.
    fn mark(&self, s: &mut Slice, how: &str) {
        if !s.args.iter().any(|a| a.key == self.marks.original_ts) {
            set_arg(&mut s.args, self.marks.original_ts, Value::Int(s.ts));
            if let Some(d) = s.dur {
                set_arg(&mut s.args, self.marks.original_dur, Value::Int(d));
            }
        }
        set_arg(&mut s.args, self.marks.split, Value::str(how));
    }

    /// Bytes a chunk may reach before it is cut, in units (by size).
    fn units_per_chunk(&self, target: u64) -> u64 {
        let per_unit = if self.units > 0 && self.bytes > 0 {
            self.bytes as f64 / self.units as f64
        } else {
            2.0
        };
        // a margin for events larger than the average so far
        ((target as f64 * 0.9 / per_unit) as u64).max(1)
    }

    /// What `e` adds to the open chunk's size, in units of about a byte before calibration
    /// (the bytes per unit of the chunks written correct it per format): a bare event, its
    /// arguments, and for a sample the stack nodes the chunk has not used yet with their names
    /// (a chunk's frames are written once in it; deep new stacks of long C++ or Julia names
    /// would otherwise make a chunk far larger than its event count says).
    fn weigh(&mut self, defs: &Defs, e: &Event) -> u64 {
        let Some(chunk) = self.chunk.as_mut() else {
            return 1;
        };
        let mut units = 100
            + 40 * match e {
                Event::Slice(s) => s.args.len() as u64,
                Event::Instant(i) => i.args.len() as u64,
                _ => 0,
            };
        if let Event::Sample(Sample { stack: Some(s), .. }) = e {
            let mut cur = Some(*s);
            while let Some(id) = cur {
                if !chunk.stack_nodes.insert(id) {
                    break;
                }
                let node = defs.stacks.node(id);
                let name = node.map_or(0, |n| defs.str(defs.stacks.frame(n.frame).name).len());
                units += 40 + name as u64;
                cur = node.and_then(|n| n.parent);
            }
        }
        chunk.units += units;
        units
    }
}

impl Sink for Splitter<'_> {
    fn event(&mut self, defs: &Defs, diag: &mut Diagnostics, e: Event) -> Result<()> {
        let ts = e.ts();
        let origin = *self.origin.get_or_insert(ts);
        match self.by {
            SplitBy::Duration(d) => {
                while let Some(end) = self.chunk.as_ref().and_then(|c| c.end) {
                    if ts < end {
                        break;
                    }
                    self.close(defs, diag, end)?;
                    if !self.carried.is_empty() {
                        self.open(defs, diag, end, Some(end.saturating_add(d)))?;
                    }
                }
                if self.chunk.is_none() {
                    let k = (ts - origin).div_euclid(d);
                    let start = origin + k * d;
                    self.open(defs, diag, start, Some(start.saturating_add(d)))?;
                }
                self.forward(defs, diag, e)
            }
            SplitBy::Size(target) => {
                let limit = self.units_per_chunk(target);
                if let Some(c) = &self.chunk {
                    let last = c.held.last().map(|h| h.ts());
                    // cut only between different times, so no part is empty
                    if c.units >= limit && last.is_some_and(|l| ts > l) {
                        self.close(defs, diag, ts)?;
                    }
                }
                if self.chunk.is_none() {
                    self.open(defs, diag, ts, None)?;
                }
                self.weigh(defs, &e);
                self.forward(defs, diag, e)
            }
        }
    }

    fn finish(&mut self, defs: &Defs, diag: &mut Diagnostics) -> Result<()> {
        if self.chunk.is_none() {
            // an empty trace still makes one (empty) chunk
            self.open(defs, diag, 0, Some(i64::MAX))?;
        }
        self.close(defs, diag, i64::MAX)?;
        // pieces past the last event's chunk (by duration): chunks of their own
        while !self.carried.is_empty() {
            let start = self.carried[0].ts;
            let end = match self.by {
                SplitBy::Duration(d) => start.saturating_add(d),
                SplitBy::Size(_) => i64::MAX,
            };
            self.open(defs, diag, start, Some(end))?;
            self.close(defs, diag, end)?;
        }
        self.committed = true;
        Ok(())
    }
}

impl Drop for Splitter<'_> {
    /// A failed conversion leaves no chunk behind.
    fn drop(&mut self) {
        if !self.committed {
            self.chunk = None;
            for p in &self.written {
                if let Some(export) = self.format.export.as_ref() {
                    for q in (export.paths)(p) {
                        let _ = std::fs::remove_file(&q).or_else(|_| std::fs::remove_dir_all(&q));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_durations_and_sizes() {
        assert_eq!(
            SplitBy::parse("10s").unwrap(),
            SplitBy::Duration(10_000_000_000)
        );
        assert_eq!(SplitBy::parse("250us").unwrap(), SplitBy::Duration(250_000));
        assert_eq!(SplitBy::parse("100M").unwrap(), SplitBy::Size(100 << 20));
        assert_eq!(SplitBy::parse("1GiB").unwrap(), SplitBy::Size(1 << 30));
        for bad in ["100", "0s", "-1s", "abc", "10 apples"] {
            assert!(SplitBy::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn numbers_before_the_extension() {
        let f = crate::formats::by_name("chrome").unwrap();
        assert_eq!(
            numbered(Path::new("d/a.json.gz"), f, 3),
            Path::new("d/a.003.json.gz")
        );
        assert_eq!(
            numbered(Path::new("a.json"), f, 12),
            Path::new("a.012.json")
        );
        assert_eq!(numbered(Path::new("trace"), f, 1), Path::new("trace.001"));
    }
}
