//! The reorder stage: puts an unsorted event stream into the one total order every exporter
//! relies on, in memory up to a budget and by sorted runs spilled to temporary files beyond it.
//!
//! The order: by timestamp; at equal timestamps slices first, longer before shorter (so a parent
//! comes before a child that starts with it); then instants, flow points, counters, samples; then
//! arrival order. Same input, same output.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};

use crate::codec::{self, Decoder};
use crate::defs::Defs;
use crate::diag::Diagnostics;
use crate::error::Result;
use crate::event::Event;
use crate::model::Value;
use crate::sink::Stage;

/// The sort key of an event in the total order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct OrderKey {
    pub ts: i64,
    pub class: u8,
    /// Negated duration: longer slices first. Open slices count as infinitely long.
    pub neg_dur: i64,
    pub seq: u64,
}

impl OrderKey {
    pub fn of(ev: &Event, seq: u64) -> OrderKey {
        let (class, neg_dur) = match ev {
            Event::Slice(s) => (0, s.dur.map_or(i64::MIN, |d| d.saturating_neg())),
            Event::Instant(_) => (1, 0),
            Event::Flow(_) => (2, 0),
            Event::Counter(_) => (3, 0),
            Event::Sample(_) => (4, 0),
        };
        OrderKey {
            ts: ev.ts(),
            class,
            neg_dur,
            seq,
        }
    }
}

/// Approximate heap + inline size of an event, for the memory budget.
fn approx_size(ev: &Event) -> usize {
    let args = match ev {
        Event::Slice(s) => &s.args,
        Event::Instant(i) => &i.args,
        _ => return std::mem::size_of::<(OrderKey, Event)>(),
    };
    let mut n = std::mem::size_of::<(OrderKey, Event)>()
        + args.capacity() * std::mem::size_of::<crate::model::Arg>();
    for a in args {
        if let Value::Str(s) | Value::Json(s) = &a.value {
            n += s.len() + 16;
        }
    }
    n
}

/// Default memory budget of a [`Sorter`]: 256 MiB of buffered events.
pub const DEFAULT_BUDGET: usize = 256 << 20;

/// A [`Stage`] that forwards everything to `inner` in the total order, at `finish`.
///
/// Several inputs can be merged into one timeline: call [`Sorter::begin_input`] before each
/// input's events and [`Sorter::set_offsets`] before `finish`; each input's events are then moved
/// by its offset (clock alignment) while being merged. Runs never mix inputs, so an offset known
/// only at the end keeps every run sorted.
pub struct Sorter<S> {
    inner: S,
    buf: Vec<(OrderKey, u32, Event)>,
    bytes: usize,
    budget: usize,
    runs: Vec<Spilled>,
    seq: u64,
    input: u32,
    inputs_begun: u32,
    first_ts: Vec<Option<i64>>,
    offsets: Vec<i64>,
    /// The run being written in the background while events keep arriving (at most one).
    spilling: Option<std::thread::JoinHandle<Result<SpillDone>>>,
    /// An emptied buffer back from the spill thread, refilled next: growing a fresh vector
    /// (moving it at each doubling and zeroing new pages) cost a tenth of a Chrome conversion.
    spare: Vec<Item>,
}

/// An event in the buffer: its key and its input.
type Item = (OrderKey, u32, Event);

/// What a background spill gives back: the runs it wrote and its buffer, empty, for reuse.
type SpillDone = (Vec<Spilled>, Vec<Item>);

impl<S: Stage> Sorter<S> {
    pub fn new(inner: S) -> Self {
        Self::with_budget(inner, DEFAULT_BUDGET)
    }

    /// A sorter that spills to disk once its buffer passes `budget` bytes.
    pub fn with_budget(inner: S, budget: usize) -> Self {
        Sorter {
            inner,
            buf: Vec::new(),
            bytes: 0,
            budget: budget.max(1),
            runs: Vec::new(),
            seq: 0,
            input: 0,
            inputs_begun: 0,
            first_ts: vec![None],
            offsets: Vec::new(),
            spilling: None,
            spare: Vec::new(),
        }
    }

    /// Call before each input's events (also the first): events from now on belong to the
    /// next input. Events pushed before any call belong to input 0.
    pub fn begin_input(&mut self) {
        if self.inputs_begun > 0 {
            self.input += 1;
            self.first_ts.push(None);
        }
        self.inputs_begun += 1;
    }

    /// The earliest timestamp of each input so far (`None`: no timed event).
    pub fn first_ts(&self) -> &[Option<i64>] {
        &self.first_ts
    }

    /// Moves input `i`'s events by `offsets[i]` ns when they are merged (missing = 0).
    pub fn set_offsets(&mut self, offsets: Vec<i64>) {
        self.offsets = offsets;
    }

    /// How many runs went to disk so far.
    pub fn spilled_runs(&self) -> usize {
        self.runs.len()
    }

    pub fn into_inner(self) -> S {
        self.inner
    }

    /// Hands the buffer to a background thread that sorts it and writes it as runs (one per
    /// input), after the previous one is done: so at most two buffers exist at a time, and the
    /// spill threshold is half the budget.
    fn spill(&mut self) -> Result<()> {
        self.collect_spill()?;
        // the next buffer: the one the previous spill emptied, else one as large as this one
        let next = match std::mem::take(&mut self.spare) {
            v if v.capacity() > 0 => v,
            _ => Vec::with_capacity(self.buf.len()),
        };
        let buf = std::mem::replace(&mut self.buf, next);
        self.bytes = 0;
        self.spilling = Some(std::thread::spawn(move || write_runs(buf)));
        Ok(())
    }

    /// Waits for the background spill, if any, and keeps its runs.
    fn collect_spill(&mut self) -> Result<()> {
        if let Some(h) = self.spilling.take() {
            let (runs, spare) = h.join().map_err(|_| {
                crate::Error::Unsupported("internal: the spill thread panicked".into())
            })??;
            self.runs.extend(runs);
            self.spare = spare;
        }
        Ok(())
    }
}

/// Sorts `buf` by (input, key): one contiguous sorted segment per input.
fn sort_by_input(buf: &mut [Item]) {
    buf.sort_unstable_by_key(|(k, i, _)| (*i, *k));
}

/// Sorts a buffer and writes one run file per input; gives the buffer back empty.
fn write_runs(mut buf: Vec<Item>) -> Result<SpillDone> {
    sort_by_input(&mut buf);
    let mut runs = Vec::new();
    let mut scratch = Vec::new();
    let mut start = 0;
    while start < buf.len() {
        let input = buf[start].1;
        let end = start
            + buf[start..]
                .iter()
                .take_while(|(_, i, _)| *i == input)
                .count();
        let mut w = BufWriter::with_capacity(1 << 20, tempfile::tempfile()?);
        for (k, _, ev) in &buf[start..end] {
            scratch.clear();
            codec::put_i64(&mut scratch, k.ts);
            scratch.push(k.class);
            codec::put_i64(&mut scratch, k.neg_dur);
            codec::put_u64(&mut scratch, k.seq);
            codec::encode(ev, &mut scratch);
            w.write_all(&(scratch.len() as u32).to_le_bytes())?;
            w.write_all(&scratch)?;
        }
        let mut f = w.into_inner().map_err(|e| e.into_error())?;
        f.seek(SeekFrom::Start(0))?;
        runs.push((f, input));
        start = end;
    }
    buf.clear();
    Ok((runs, buf))
}

/// A run written to a temporary file, and the input it belongs to.
type Spilled = (File, u32);

/// Reads one spilled run back, record by record.
struct RunReader {
    r: BufReader<File>,
    rec: Vec<u8>,
}

impl RunReader {
    fn next(&mut self) -> Result<Option<(OrderKey, Event)>> {
        let mut len = [0u8; 4];
        match self.r.read_exact(&mut len) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
            Err(e) => return Err(e.into()),
        }
        self.rec.resize(u32::from_le_bytes(len) as usize, 0);
        self.r.read_exact(&mut self.rec)?;
        let mut d = Decoder::new(&self.rec);
        let ts = d.i64()?;
        let class = d.u64()? as u8;
        let neg_dur = d.i64()?;
        let seq = d.u64()?;
        let ev = d.event()?;
        Ok(Some((
            OrderKey {
                ts,
                class,
                neg_dur,
                seq,
            },
            ev,
        )))
    }
}

/// A sorted source in the final merge: a run on disk or a segment of the last buffer.
enum Run {
    Disk(RunReader),
    Memory(std::vec::IntoIter<(OrderKey, u32, Event)>),
}

impl Run {
    fn next(&mut self) -> Result<Option<(OrderKey, Event)>> {
        match self {
            Run::Disk(r) => r.next(),
            Run::Memory(it) => Ok(it.next().map(|(k, _, e)| (k, e))),
        }
    }
}

impl<S: Stage> Stage for Sorter<S> {
    fn push(&mut self, _: &mut Defs, _: &mut Diagnostics, event: Event) -> Result<()> {
        let key = OrderKey::of(&event, self.seq);
        self.seq += 1;
        if !matches!(&event, Event::Sample(s) if s.ts.is_none()) {
            let f = &mut self.first_ts[self.input as usize];
            *f = Some(f.map_or(key.ts, |t: i64| t.min(key.ts)));
        }
        self.bytes += approx_size(&event);
        self.buf.push((key, self.input, event));
        if self.bytes >= self.budget / 2 {
            self.spill()?;
        }
        Ok(())
    }

    fn end(&mut self, defs: &mut Defs, diag: &mut Diagnostics) -> Result<()> {
        self.collect_spill()?;
        let mut buf = std::mem::take(&mut self.buf);
        sort_by_input(&mut buf);
        let offsets = std::mem::take(&mut self.offsets);
        if self.runs.is_empty() && self.input == 0 {
            let off = offsets.first().copied().unwrap_or(0);
            for (_, _, mut ev) in buf {
                if off != 0 {
                    ev.shift(off);
                }
                self.inner.push(defs, diag, ev)?;
            }
            return self.inner.end(defs, diag);
        }
        // The k-way merge (reading and decoding runs) runs on another thread and hands events
        // over in batches, while this thread feeds them to the sinks behind.
        let mut runs: Vec<(Run, u32)> = std::mem::take(&mut self.runs)
            .into_iter()
            .map(|(f, input)| {
                let r = RunReader {
                    r: BufReader::with_capacity(256 << 10, f),
                    rec: Vec::new(),
                };
                (Run::Disk(r), input)
            })
            .collect();
        while let Some(&(_, input, _)) = buf.first() {
            let n = buf.iter().take_while(|(_, i, _)| *i == input).count();
            let rest = buf.split_off(n);
            runs.push((Run::Memory(buf.into_iter()), input));
            buf = rest;
        }
        let (tx, rx) = std::sync::mpsc::sync_channel::<Result<Vec<Event>>>(4);
        let merger = std::thread::spawn(move || {
            if let Err(e) = merge(runs, &offsets, &tx) {
                let _ = tx.send(Err(e));
            }
        });
        let mut result = Ok(());
        for batch in rx.iter() {
            match batch {
                Ok(events) => {
                    for ev in events {
                        if let Err(e) = self.inner.push(defs, diag, ev) {
                            result = Err(e);
                            break;
                        }
                    }
                }
                Err(e) => result = Err(e),
            }
            if result.is_err() {
                break;
            }
        }
        drop(rx);
        let _ = merger.join();
        result?;
        self.inner.end(defs, diag)
    }
}

/// Merges sorted runs, each moved by its input's offset, and sends the events in batches.
fn merge(
    mut runs: Vec<(Run, u32)>,
    offsets: &[i64],
    tx: &std::sync::mpsc::SyncSender<Result<Vec<Event>>>,
) -> Result<()> {
    const BATCH: usize = 4096;
    let offset = |input: u32| offsets.get(input as usize).copied().unwrap_or(0);
    let shifted = |mut k: OrderKey, input: u32| {
        k.ts = k.ts.saturating_add(offset(input));
        k
    };
    let mut heads: Vec<Option<Event>> = Vec::with_capacity(runs.len());
    let mut heap = BinaryHeap::new();
    for (i, (run, input)) in runs.iter_mut().enumerate() {
        match run.next()? {
            Some((k, ev)) => {
                heap.push(Reverse((shifted(k, *input), i)));
                heads.push(Some(ev));
            }
            None => heads.push(None),
        }
    }
    let mut batch = Vec::with_capacity(BATCH);
    while let Some(Reverse((_, i))) = heap.pop() {
        let mut ev = heads[i].take().expect("head present");
        let input = runs[i].1;
        let off = offset(input);
        if off != 0 {
            ev.shift(off);
        }
        batch.push(ev);
        if batch.len() == BATCH
            && tx
                .send(Ok(std::mem::replace(&mut batch, Vec::with_capacity(BATCH))))
                .is_err()
        {
            // the receiver stopped (an error downstream)
            return Ok(());
        }
        if let Some((k, ev)) = runs[i].0.next()? {
            heads[i] = Some(ev);
            heap.push(Reverse((shifted(k, input), i)));
        }
    }
    if !batch.is_empty() {
        let _ = tx.send(Ok(batch));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Instant, Slice};
    use crate::mem::MemSink;
    use crate::model::TrackId;
    use crate::strings::StrId;

    fn events() -> Vec<Event> {
        let mut v = Vec::new();
        for i in 0..500i64 {
            let ts = (i * 7919) % 101;
            v.push(Event::Slice(Slice::new(
                TrackId(0),
                ts,
                i % 5,
                StrId(i as u32 % 3),
            )));
            v.push(Event::Instant(Instant {
                track: TrackId(0),
                ts,
                name: StrId(1),
                cat: None,
                args: vec![],
                stack: None,
                color: None,
            }));
        }
        v
    }

    #[test]
    fn inputs_are_merged_with_offsets() {
        for budget in [usize::MAX, 500] {
            let (mut defs, mut diag) = (Defs::new(), Diagnostics::default());
            let mut s = Sorter::with_budget(MemSink::default(), budget);
            let slice = |ts| Event::Slice(Slice::new(TrackId(0), ts, 1, StrId(0)));
            s.begin_input();
            for ts in [30, 10, 20] {
                s.push(&mut defs, &mut diag, slice(ts)).unwrap();
            }
            s.begin_input();
            for ts in [1005, 1000, 1015] {
                s.push(&mut defs, &mut diag, slice(ts)).unwrap();
            }
            assert_eq!(s.first_ts(), &[Some(10), Some(1000)]);
            // align the second input's start with the first's
            s.set_offsets(vec![0, -990]);
            s.end(&mut defs, &mut diag).unwrap();
            let ts: Vec<i64> = s.into_inner().events.iter().map(|e| e.ts()).collect();
            assert_eq!(ts, vec![10, 10, 15, 20, 25, 30], "budget {budget}");
        }
    }

    fn run(budget: usize) -> (Vec<Event>, usize) {
        let (mut defs, mut diag) = (Defs::new(), Diagnostics::default());
        let mut s = Sorter::with_budget(MemSink::default(), budget);
        for e in events() {
            s.push(&mut defs, &mut diag, e).unwrap();
        }
        let runs = s.spilled_runs();
        s.end(&mut defs, &mut diag).unwrap();
        (s.into_inner().events, runs)
    }

    #[test]
    fn spilling_gives_the_same_order_as_memory() {
        let (a, runs_a) = run(usize::MAX);
        let (b, runs_b) = run(2_000);
        assert_eq!(runs_a, 0);
        assert!(runs_b > 5);
        assert_eq!(a, b);
        // total order: ts ascending, slices first and longer first at equal ts
        for w in a.windows(2) {
            let (ka, kb) = (OrderKey::of(&w[0], 0), OrderKey::of(&w[1], 0));
            assert!((ka.ts, ka.class, ka.neg_dur) <= (kb.ts, kb.class, kb.neg_dur));
        }
    }
}
