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
use crate::error::Result;
use crate::event::Event;
use crate::model::Value;
use crate::sink::Sink;

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

/// A [`Sink`] adapter that forwards everything to `inner` in the total order, at `finish`.
pub struct Sorter<S> {
    inner: S,
    buf: Vec<(OrderKey, Event)>,
    bytes: usize,
    budget: usize,
    runs: Vec<File>,
    seq: u64,
    scratch: Vec<u8>,
}

impl<S: Sink> Sorter<S> {
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
            scratch: Vec::new(),
        }
    }

    /// How many runs went to disk so far.
    pub fn spilled_runs(&self) -> usize {
        self.runs.len()
    }

    pub fn into_inner(self) -> S {
        self.inner
    }

    fn spill(&mut self) -> Result<()> {
        self.buf.sort_unstable_by_key(|(k, _)| *k);
        let mut w = BufWriter::with_capacity(1 << 20, tempfile::tempfile()?);
        for (k, ev) in self.buf.drain(..) {
            self.scratch.clear();
            codec::put_i64(&mut self.scratch, k.ts);
            self.scratch.push(k.class);
            codec::put_i64(&mut self.scratch, k.neg_dur);
            codec::put_u64(&mut self.scratch, k.seq);
            codec::encode(&ev, &mut self.scratch);
            w.write_all(&(self.scratch.len() as u32).to_le_bytes())?;
            w.write_all(&self.scratch)?;
        }
        let mut f = w.into_inner().map_err(|e| e.into_error())?;
        f.seek(SeekFrom::Start(0))?;
        self.runs.push(f);
        self.bytes = 0;
        Ok(())
    }
}

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

impl<S: Sink> Sink for Sorter<S> {
    fn event(&mut self, _defs: &mut Defs, event: Event) -> Result<()> {
        let key = OrderKey::of(&event, self.seq);
        self.seq += 1;
        self.bytes += approx_size(&event);
        self.buf.push((key, event));
        if self.bytes >= self.budget {
            self.spill()?;
        }
        Ok(())
    }

    fn finish(&mut self, defs: &mut Defs) -> Result<()> {
        self.buf.sort_unstable_by_key(|(k, _)| *k);
        if self.runs.is_empty() {
            for (_, ev) in std::mem::take(&mut self.buf) {
                self.inner.event(defs, ev)?;
            }
            return self.inner.finish(defs);
        }
        // k-way merge: the runs on disk and the last run still in memory.
        let mut readers: Vec<RunReader> = std::mem::take(&mut self.runs)
            .into_iter()
            .map(|f| RunReader {
                r: BufReader::with_capacity(256 << 10, f),
                rec: Vec::new(),
            })
            .collect();
        let mut heads: Vec<Option<Event>> = Vec::with_capacity(readers.len() + 1);
        let mut heap = BinaryHeap::new();
        for (i, r) in readers.iter_mut().enumerate() {
            match r.next()? {
                Some((k, ev)) => {
                    heap.push(Reverse((k, i)));
                    heads.push(Some(ev));
                }
                None => heads.push(None),
            }
        }
        let mem_idx = readers.len();
        let mut mem = std::mem::take(&mut self.buf).into_iter();
        if let Some((k, ev)) = mem.next() {
            heap.push(Reverse((k, mem_idx)));
            heads.push(Some(ev));
        } else {
            heads.push(None);
        }
        while let Some(Reverse((_, i))) = heap.pop() {
            let ev = heads[i].take().expect("head present");
            self.inner.event(defs, ev)?;
            let next = if i == mem_idx {
                mem.next()
            } else {
                readers[i].next()?
            };
            if let Some((k, ev)) = next {
                heads[i] = Some(ev);
                heap.push(Reverse((k, i)));
            }
        }
        self.inner.finish(defs)
    }
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

    fn run(budget: usize) -> (Vec<Event>, usize) {
        let mut defs = Defs::new();
        let mut s = Sorter::with_budget(MemSink::default(), budget);
        for e in events() {
            s.event(&mut defs, e).unwrap();
        }
        let runs = s.spilled_runs();
        s.finish(&mut defs).unwrap();
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
