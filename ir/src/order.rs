//! The reorder stage: puts an unsorted event stream into the one total order every exporter
//! relies on, in memory up to a budget and by sorted runs spilled to temporary files beyond it.
//!
//! The order: by timestamp; at equal timestamps slices first, longer before shorter (so a parent
//! comes before a child that starts with it); then instants, flow points, counters, samples; then
//! arrival order. Same input, same output.

use std::cmp::Reverse;
use std::collections::binary_heap::{BinaryHeap, PeekMut};
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::codec::{self, Decoder};
use crate::defs::Defs;
use crate::diag::Diagnostics;
use crate::error::Result;
use crate::event::Event;
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
        let ts = ev.ts();
        let class = match ev {
            Event::Slice(s) => return OrderKey::slice(ts, s.dur, seq),
            Event::Flow(_) => return OrderKey::flow(ts, seq),
            Event::Instant(_) => 1,
            Event::Counter(_) => 3,
            Event::Sample(_) => 4,
        };
        OrderKey {
            ts,
            class,
            neg_dur: 0,
            seq,
        }
    }

    /// The key of a slice at `ts` lasting `dur` (`None`: never ended), arrived `seq`th.
    pub fn slice(ts: i64, dur: Option<i64>, seq: u64) -> OrderKey {
        OrderKey {
            ts,
            class: 0,
            neg_dur: dur.map_or(i64::MIN, |d| d.saturating_neg()),
            seq,
        }
    }

    /// The key of a flow point at `ts`, arrived `seq`th.
    pub fn flow(ts: i64, seq: u64) -> OrderKey {
        OrderKey {
            ts,
            class: 2,
            neg_dur: 0,
            seq,
        }
    }

    /// The key of an event from its encoding ([`codec::encode`] with time base `base`), the
    /// same as [`OrderKey::of`] the decoded event.
    pub fn of_encoded(ev: &[u8], seq: u64, base: i64) -> Result<OrderKey> {
        let (tag, ts, dur) = Decoder::with_base(ev, base).time_fields()?;
        let (class, neg_dur) = match tag {
            0 => (0, dur.map_or(i64::MIN, |d| d.saturating_neg())),
            1 => (1, 0),
            3 => (2, 0),
            2 => (3, 0),
            _ => (4, 0),
        };
        Ok(OrderKey {
            ts: ts.unwrap_or(i64::MIN),
            class,
            neg_dur,
            seq,
        })
    }
}

/// Lowers `first`, an input's earliest time (which inputs are lined up on), to `ev`'s time: a
/// sample without a time is no input's start.
pub fn note_start(first: &mut Option<i64>, ev: &Event) {
    if !matches!(ev, Event::Sample(s) if s.ts.is_none()) {
        let ts = ev.ts();
        *first = Some(first.map_or(ts, |t| t.min(ts)));
    }
}

/// Default memory budget of a [`Sorter`]: 256 MiB of buffered events.
pub const DEFAULT_BUDGET: usize = 256 << 20;

/// The first runs spill at this buffer size, far below the budget: a small buffer is sorted and
/// written on the other core while the importer goes on, stays in cache and reuses warm pages,
/// where one big buffer left most of the sorting to the end, on the importer's thread.
const FIRST_RUN: usize = 16 << 20;

/// Later runs grow with what is already on disk (a sixteenth of it), so that the number of runs,
/// and of files open in the final merge, grows with the logarithm of the input.
const RUN_GROWTH: usize = 16;

/// A buffered event: its place in the order and where its encoding lies in the buffer's bytes,
/// in 32 bytes. Sorting these instead of the events themselves moves a third of the bytes, and
/// encoded events take a third of the memory of `Event`s with their heap. (With the order key
/// and the input as fields of their own, entries took 48 bytes, three times the encoded events
/// of a GPU merge, and a quarter of its page faults.)
#[derive(Clone, Copy)]
struct Entry {
    ts: i64,
    neg_dur: i64,
    /// The key's class in the top [`CLASS_BITS`] bits, its arrival number below.
    tail: u64,
    /// The encoding's offset in the buffer's bytes (the low [`AT_BITS`] bits) and its length
    /// above (or [`LONG`], for a length the buffer keeps aside).
    pos: u64,
}

const CLASS_BITS: u32 = 3;
const SEQ_MASK: u64 = u64::MAX >> CLASS_BITS;
const AT_BITS: u32 = 40;
const AT_MASK: u64 = (1 << AT_BITS) - 1;
/// The length field's largest value, which says the length is kept aside.
const LONG: u64 = u64::MAX >> AT_BITS;
/// The most bytes a buffer holds before it spills: what an entry's offset can address.
const MAX_BUFFER: usize = 1 << (AT_BITS - 1);

impl Entry {
    fn new(key: OrderKey, at: usize, len: usize) -> Entry {
        debug_assert!(key.class < 1 << CLASS_BITS && key.seq <= SEQ_MASK);
        Entry {
            ts: key.ts,
            neg_dur: key.neg_dur,
            tail: (u64::from(key.class) << (64 - CLASS_BITS)) | (key.seq & SEQ_MASK),
            pos: (at as u64) | ((len as u64).min(LONG) << AT_BITS),
        }
    }

    fn key(&self) -> OrderKey {
        OrderKey {
            ts: self.ts,
            class: (self.tail >> (64 - CLASS_BITS)) as u8,
            neg_dur: self.neg_dur,
            seq: self.tail & SEQ_MASK,
        }
    }

    fn at(&self) -> usize {
        (self.pos & AT_MASK) as usize
    }

    /// The total order: that of the entries' keys.
    fn order(&self, other: &Entry) -> std::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}

/// Entries are sorted in chunks of this many, each on the helper thread as soon as it is full,
/// while the import goes on: at the end only the last, partly filled one is left to sort, where
/// the sort of the whole last buffer was a sixth of the 20k-launch GPU merge's end, with the
/// other core idle during most of the import.
const CHUNK: usize = 1 << 14;

fn sort_entries(entries: &mut [Entry]) {
    entries.sort_unstable_by(Entry::order);
}

/// Entries of one input's events, in arrival order while filling, then sorted: a chunk never
/// mixes inputs (a new input's first event hands the chunk filling on), so its entries need
/// not say which input they belong to.
#[derive(Default)]
struct Chunk {
    input: u32,
    entries: Vec<Entry>,
}

/// Events buffered in memory: encoded back to back ([`codec`]), their entries beside in
/// chunks of [`CHUNK`].
#[derive(Default)]
struct Buffer {
    bytes: Vec<u8>,
    /// Chunks handed on (full, or at the end of their input), each sorted, back from the helper.
    sorted: Vec<Chunk>,
    /// The chunk filling, in arrival order.
    filling: Chunk,
    /// Entries in every chunk: those sorted, filling, and with the helper.
    count: usize,
    /// Emptied chunks, filled again: their pages are touched once.
    spare: Vec<Vec<Entry>>,
    /// The lengths of encodings too long for an entry's length field, by offset.
    long: FxHashMap<usize, usize>,
}

impl Buffer {
    /// Bytes held, for the budget.
    fn size(&self) -> usize {
        self.bytes.len() + self.count * std::mem::size_of::<Entry>()
    }

    /// Buffers an event of the input the chunk filling is for (see [`Buffer::ended_chunk`]).
    fn push(&mut self, key: OrderKey, ev: &Event, base: i64) {
        let at = self.bytes.len();
        codec::encode(ev, base, &mut self.bytes);
        let len = self.bytes.len() - at;
        if len as u64 >= LONG {
            self.long.insert(at, len);
        }
        if self.filling.entries.capacity() == 0 {
            self.filling.entries = self
                .spare
                .pop()
                .unwrap_or_else(|| Vec::with_capacity(CHUNK));
        }
        self.filling.entries.push(Entry::new(key, at, len));
        self.count += 1;
    }

    /// The chunk filling, when it is full.
    fn full_chunk(&mut self) -> Option<Chunk> {
        (self.filling.entries.len() >= CHUNK).then(|| self.take_filling())
    }

    /// The chunk filling, when it holds another input's entries than `input`'s; the chunk
    /// filling is `input`'s from then on.
    fn ended_chunk(&mut self, input: u32) -> Option<Chunk> {
        if self.filling.input == input {
            return None;
        }
        let ended = (!self.filling.entries.is_empty()).then(|| self.take_filling());
        self.filling.input = input;
        ended
    }

    fn take_filling(&mut self) -> Chunk {
        Chunk {
            input: self.filling.input,
            entries: std::mem::take(&mut self.filling.entries),
        }
    }

    /// Sorts the chunk filling and hands every chunk on, each sorted.
    fn sorted_chunks(&mut self) -> Vec<Chunk> {
        let mut last = self.take_filling();
        sort_entries(&mut last.entries);
        let mut chunks = std::mem::take(&mut self.sorted);
        chunks.push(last);
        chunks
    }

    fn encoded(&self, e: &Entry) -> &[u8] {
        let at = e.at();
        let len = match e.pos >> AT_BITS {
            LONG => self.long[&at],
            len => len as usize,
        };
        &self.bytes[at..at + len]
    }

    /// Room for a buffer that spills at `size` bytes, reserved before the first event: address
    /// space only, as pages are touched when written. A buffer grown by doubling instead moved
    /// its bytes at each step into pages touched for the first time, and the sorter's page
    /// faults were a third of all those of the 20k-launch GPU merge.
    fn reserve_for(&mut self, size: usize) {
        // (a sorter told to never spill is given its first run's room)
        let size = size.min(FIRST_RUN);
        self.bytes.reserve(size);
    }

    /// An empty buffer with room for as many bytes as this one holds (its entries' chunks are
    /// made as they fill).
    fn sized_like(&self) -> Buffer {
        Buffer {
            bytes: Vec::with_capacity(self.bytes.len()),
            ..Buffer::default()
        }
    }

    fn clear(&mut self) {
        self.bytes.clear();
        for chunk in self.sorted.drain(..) {
            let mut entries = chunk.entries;
            entries.clear();
            self.spare.push(entries);
        }
        self.filling.entries.clear();
        self.long.clear();
        self.count = 0;
    }
}

/// The helper thread that sorts full chunks of entries while events keep arriving; chunks come
/// back in the order they went.
struct ChunkSorter {
    to: std::sync::mpsc::Sender<Chunk>,
    back: std::sync::mpsc::Receiver<Chunk>,
    /// Chunks with the helper.
    out: usize,
}

impl ChunkSorter {
    /// The helper, or `None` where no thread can be had (each chunk is then sorted on the
    /// importing thread as it fills).
    fn start() -> Option<ChunkSorter> {
        let (to, rx) = std::sync::mpsc::channel::<Chunk>();
        let (tx, back) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("tracex sort".into())
            .spawn(move || {
                for mut chunk in rx {
                    sort_entries(&mut chunk.entries);
                    if tx.send(chunk).is_err() {
                        return;
                    }
                }
            })
            .ok()?;
        Some(ChunkSorter { to, back, out: 0 })
    }

    /// Hands `chunk` over; gives it back where the helper is gone.
    fn sort(&mut self, chunk: Chunk) -> std::result::Result<(), Chunk> {
        self.to.send(chunk).map_err(|e| e.0)?;
        self.out += 1;
        Ok(())
    }

    /// Moves the chunks sorted so far (all of them, waiting for the rest, at `all`) to `into`.
    fn collect(&mut self, into: &mut Vec<Chunk>, all: bool) -> Result<()> {
        while self.out > 0 {
            let chunk = match all {
                true => self.back.recv().map_err(|_| {
                    crate::Error::Unsupported("internal: the sort thread stopped".into())
                })?,
                false => match self.back.try_recv() {
                    Ok(chunk) => chunk,
                    Err(_) => break,
                },
            };
            self.out -= 1;
            into.push(chunk);
        }
        Ok(())
    }
}

/// A [`Stage`] that forwards everything to `inner` in the total order, at `finish`.
///
/// Several inputs can be merged into one timeline: call [`Sorter::begin_input`] before each
/// input's events and [`Sorter::set_offsets`] before `finish`; each input's events are then moved
/// by its offset (clock alignment) while being merged. Runs never mix inputs, so an offset known
/// only at the end keeps every run sorted.
pub struct Sorter<S> {
    inner: S,
    buf: Buffer,
    budget: usize,
    runs: Vec<Spilled>,
    /// Buffer bytes spilled so far, which size the next run.
    spilled: usize,
    /// The size of the first runs ([`FIRST_RUN`]; smaller in tests).
    first_run: usize,
    seq: u64,
    input: u32,
    inputs_begun: u32,
    first_ts: Vec<Option<i64>>,
    /// The time events are encoded against ([`codec`]): the first one's.
    base: Option<i64>,
    offsets: Vec<i64>,
    /// The run being written in the background while events keep arriving (at most one).
    spilling: Option<std::thread::JoinHandle<Result<SpillDone>>>,
    /// An emptied buffer back from the spill thread, refilled next: growing a fresh one (moving
    /// it at each doubling and zeroing new pages) cost a tenth of a Chrome conversion.
    spare: Option<Buffer>,
    /// Sorts the buffer's full chunks as they fill (started with the first).
    chunks: Option<ChunkSorter>,
}

/// What a background spill gives back: the runs it wrote and its buffer, empty, for reuse.
type SpillDone = (Vec<Spilled>, Buffer);

impl<S: Stage> Sorter<S> {
    pub fn new(inner: S) -> Self {
        Self::with_budget(inner, DEFAULT_BUDGET)
    }

    /// A sorter that spills to disk once its buffer passes `budget` bytes.
    pub fn with_budget(inner: S, budget: usize) -> Self {
        Sorter {
            inner,
            buf: Buffer::default(),
            budget: budget.max(1),
            runs: Vec::new(),
            spilled: 0,
            first_run: FIRST_RUN,
            seq: 0,
            input: 0,
            inputs_begun: 0,
            first_ts: vec![None],
            base: None,
            offsets: Vec::new(),
            spilling: None,
            spare: None,
            chunks: None,
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

    /// The buffer size at which the next run spills: at most half the budget, as two buffers
    /// exist at a time.
    fn threshold(&self) -> usize {
        let most = (self.budget / 2).min(MAX_BUFFER);
        (self.spilled / RUN_GROWTH)
            .max(self.first_run)
            .min(most)
            .max(1)
    }

    /// Hands the buffer to a background thread that sorts it and writes it as runs (one per
    /// input), after the previous one is done: so at most two buffers exist at a time.
    fn spill(&mut self) -> Result<()> {
        self.collect_chunks()?;
        self.collect_spill()?;
        self.spilled += self.buf.size();
        let next = self.spare.take().unwrap_or_else(|| self.buf.sized_like());
        let buf = std::mem::replace(&mut self.buf, next);
        self.spilling = Some(std::thread::spawn(move || write_runs(buf)));
        Ok(())
    }

    /// Hands a full chunk of the buffer to the helper that sorts it (or sorts it here, where no
    /// helper can be had).
    fn sort_chunk(&mut self, mut chunk: Chunk) -> Result<()> {
        if self.chunks.is_none() {
            self.chunks = ChunkSorter::start();
        }
        if let Some(helper) = &mut self.chunks {
            match helper.sort(chunk) {
                Ok(()) => return helper.collect(&mut self.buf.sorted, false),
                Err(back) => chunk = back,
            }
        }
        sort_entries(&mut chunk.entries);
        self.buf.sorted.push(chunk);
        Ok(())
    }

    /// Waits for the chunks of the buffer still with the helper.
    fn collect_chunks(&mut self) -> Result<()> {
        match &mut self.chunks {
            Some(helper) => helper.collect(&mut self.buf.sorted, true),
            None => Ok(()),
        }
    }

    /// Waits for the background spill, if any, and keeps its runs.
    fn collect_spill(&mut self) -> Result<()> {
        if let Some(h) = self.spilling.take() {
            let (runs, spare) = h.join().map_err(|_| {
                crate::Error::Unsupported("internal: the spill thread panicked".into())
            })??;
            self.runs.extend(runs);
            self.spare = Some(spare);
        }
        Ok(())
    }
}

/// Sorts a buffer and writes one run file per input; gives the buffer back empty. The chunks
/// the helper sorted are merged, not sorted again.
fn write_runs(mut buf: Buffer) -> Result<SpillDone> {
    let chunks = buf.sorted_chunks();
    let mut next = vec![0usize; chunks.len()];
    // by input, then in the total order
    let place = |c: usize, i: usize| Some((chunks[c].input, chunks[c].entries.get(i)?.key()));
    let mut heap: BinaryHeap<Reverse<((u32, OrderKey), usize)>> = (0..chunks.len())
        .filter_map(|c| Some(Reverse((place(c, 0)?, c))))
        .collect();
    let mut runs = Vec::new();
    let mut run: Option<(BufWriter<File>, u32)> = None;
    let mut seq = Vec::new();
    while let Some(mut top) = heap.peek_mut() {
        let Reverse(((input, _), c)) = *top;
        let e = &chunks[c].entries[next[c]];
        next[c] += 1;
        match place(c, next[c]) {
            Some(n) => *top = Reverse((n, c)),
            None => {
                PeekMut::pop(top);
            }
        }
        if run.as_ref().is_none_or(|(_, i)| *i != input) {
            if let Some(done) = run.take() {
                runs.push(finish_run(done)?);
            }
            run = Some((BufWriter::with_capacity(1 << 20, run_file()?), input));
        }
        let (w, _) = run.as_mut().expect("a run is open");
        // the rest of the key is the event's own (OrderKey::of), rebuilt when read back
        seq.clear();
        codec::put_u64(&mut seq, e.key().seq);
        let event = buf.encoded(e);
        let len = u32::try_from(seq.len() + event.len()).map_err(|_| {
            crate::Error::Unsupported("an event of more than 4 GiB cannot be reordered".into())
        })?;
        w.write_all(&len.to_le_bytes())?;
        w.write_all(&seq)?;
        w.write_all(event)?;
    }
    if let Some(done) = run {
        runs.push(finish_run(done)?);
    }
    buf.sorted = chunks;
    buf.clear();
    Ok((runs, buf))
}

/// A run written: its file, rewound, and its input.
fn finish_run((w, input): (BufWriter<File>, u32)) -> Result<Spilled> {
    let mut f = w.into_inner().map_err(|e| e.into_error())?;
    f.seek(SeekFrom::Start(0))?;
    Ok((f, input))
}

/// A new temporary file for a run, or an error that names the directory it could not be made in.
fn run_file() -> Result<File> {
    tempfile::tempfile().map_err(|e| crate::io::temp_file_error(e, "to sort events").into())
}

/// A run written to a temporary file, and the input it belongs to.
type Spilled = (File, u32);

/// Reads one spilled run back, record by record: the merge reads each record's order key
/// ([`OrderKey::of_encoded`]) and copies the event's bytes out when it is the next in order.
struct RunReader {
    r: BufReader<File>,
    /// The time base of the events ([`codec`]).
    base: i64,
    /// The current record, when it was cut by the read buffer's end and copied out.
    rec: Vec<u8>,
    /// Where the current record's event lies: in the read buffer (its length with the header,
    /// and the event's offset) or in `rec` from the offset.
    cur: Option<Current>,
}

#[derive(Clone, Copy)]
enum Current {
    Buffered { len: usize, event: usize },
    Copied { event: usize },
}

impl RunReader {
    /// The order key of the next record, which stays current until [`RunReader::take`].
    fn peek(&mut self) -> Result<Option<OrderKey>> {
        // A record lying whole in the read buffer is read where it lies; only one cut by the
        // buffer's end is copied out first (the copy was a tenth of the merge thread).
        let buffered = self.r.fill_buf()?;
        if buffered.is_empty() {
            self.cur = None;
            return Ok(None);
        }
        if let Some(head) = buffered.get(..4) {
            let len = u32::from_le_bytes(head.try_into().expect("4 bytes")) as usize;
            if let Some(rec) = buffered.get(4..4 + len) {
                let (key, event) = record_key(rec, self.base)?;
                self.cur = Some(Current::Buffered {
                    len: 4 + len,
                    event: 4 + event,
                });
                return Ok(Some(key));
            }
        }
        let mut len = [0u8; 4];
        self.r.read_exact(&mut len)?;
        self.rec.resize(u32::from_le_bytes(len) as usize, 0);
        self.r.read_exact(&mut self.rec)?;
        let (key, event) = record_key(&self.rec, self.base)?;
        self.cur = Some(Current::Copied { event });
        Ok(Some(key))
    }

    /// Appends the current record's event to `out` and moves past it.
    fn take(&mut self, out: &mut Vec<u8>) -> Result<()> {
        match self.cur.take() {
            Some(Current::Buffered { len, event }) => {
                // the buffer is as `peek` left it: filling a buffer that is not empty reads nothing
                out.extend_from_slice(&self.r.fill_buf()?[event..len]);
                self.r.consume(len);
            }
            Some(Current::Copied { event }) => out.extend_from_slice(&self.rec[event..]),
            None => {}
        }
        Ok(())
    }
}

/// A run record: the event's arrival number, then the event, from which the rest of its order
/// key follows (decoding the key's time and duration a second time was a tenth of the merge).
/// Gives the key and where the event starts in the record.
fn record_key(rec: &[u8], base: i64) -> Result<(OrderKey, usize)> {
    let mut d = Decoder::new(rec);
    let seq = d.u64()?;
    let event = d.position();
    Ok((OrderKey::of_encoded(&rec[event..], seq, base)?, event))
}

/// A sorted source in the final merge: a run on disk or one of the last buffer's chunks (the
/// chunks share its bytes).
enum Run {
    Disk(RunReader),
    Memory {
        buf: Arc<Buffer>,
        /// Of the buffer's sorted chunks.
        chunk: usize,
        entries: std::ops::Range<usize>,
        /// The entry whose key was given last.
        cur: usize,
    },
}

impl Run {
    /// The order key of the run's next event, which stays current until [`Run::take`].
    fn peek(&mut self) -> Result<Option<OrderKey>> {
        match self {
            Run::Disk(r) => r.peek(),
            Run::Memory {
                buf,
                chunk,
                entries,
                cur,
            } => Ok(entries.next().map(|i| {
                *cur = i;
                buf.sorted[*chunk].entries[i].key()
            })),
        }
    }

    /// Appends the current event's encoding to `out`.
    fn take(&mut self, out: &mut Vec<u8>) -> Result<()> {
        match self {
            Run::Disk(r) => r.take(out),
            Run::Memory {
                buf, chunk, cur, ..
            } => {
                out.extend_from_slice(buf.encoded(&buf.sorted[*chunk].entries[*cur]));
                Ok(())
            }
        }
    }
}

/// Events in the merged order, still encoded: the merge thread only compares keys and copies
/// bytes, and the thread that hands the events on decodes them (decoding, most of it the
/// arguments, was half of the merge thread while the other thread waited for it).
#[derive(Default)]
struct Merged {
    bytes: Vec<u8>,
    /// Each event's end in `bytes` and the time shift of its input.
    events: Vec<(usize, i64)>,
}

impl Merged {
    fn clear(&mut self) {
        self.bytes.clear();
        self.events.clear();
    }

    /// Decodes the events (written against the time base `base`) in order and hands each to `f`.
    fn each(&self, base: i64, mut f: impl FnMut(Event) -> Result<()>) -> Result<()> {
        let mut start = 0;
        for &(end, shift) in &self.events {
            let mut ev = Decoder::with_base(&self.bytes[start..end], base).event()?;
            if shift != 0 {
                ev.shift(shift);
            }
            f(ev)?;
            start = end;
        }
        Ok(())
    }
}

impl<S: Stage> Stage for Sorter<S> {
    fn push(&mut self, _: &mut Defs, _: &mut Diagnostics, event: Event) -> Result<()> {
        let key = OrderKey::of(&event, self.seq);
        self.seq += 1;
        note_start(&mut self.first_ts[self.input as usize], &event);
        // a sample without a time sorts at i64::MIN: not a base
        let base = match self.base {
            Some(b) => b,
            None => {
                self.buf.reserve_for(self.threshold());
                *self
                    .base
                    .insert(if key.ts == i64::MIN { 0 } else { key.ts })
            }
        };
        if let Some(chunk) = self.buf.ended_chunk(self.input) {
            self.sort_chunk(chunk)?;
        }
        self.buf.push(key, &event, base);
        if let Some(chunk) = self.buf.full_chunk() {
            self.sort_chunk(chunk)?;
        }
        if self.buf.size() >= self.threshold() {
            self.spill()?;
        }
        Ok(())
    }

    fn end(&mut self, defs: &mut Defs, diag: &mut Diagnostics) -> Result<()> {
        // the last buffer's last chunk is sorted here while the helper sorts the full ones it
        // still has (waiting for those first left this thread idle for up to a millisecond of
        // the 20k-launch GPU merge), and while the last spill may still be writing
        let mut last = self.buf.take_filling();
        sort_entries(&mut last.entries);
        self.collect_chunks()?;
        self.chunks = None;
        let mut buf = std::mem::take(&mut self.buf);
        buf.sorted.push(last);
        self.collect_spill()?;
        self.spare = None;
        let offsets = std::mem::take(&mut self.offsets);
        let base = self.base.unwrap_or(0);
        // The k-way merge (reading the buffer and the runs) runs on another thread and hands
        // encoded events over in batches, which this thread decodes and feeds to the sinks behind.
        let mut runs: Vec<(Run, u32)> = std::mem::take(&mut self.runs)
            .into_iter()
            .map(|(f, input)| {
                let r = RunReader {
                    r: BufReader::with_capacity(256 << 10, f),
                    base,
                    rec: Vec::new(),
                    cur: None,
                };
                (Run::Disk(r), input)
            })
            .collect();
        // each sorted chunk is a run of its input's
        let chunks: Vec<(usize, usize, u32)> = (buf.sorted.iter().enumerate())
            .filter(|(_, c)| !c.entries.is_empty())
            .map(|(i, c)| (i, c.entries.len(), c.input))
            .collect();
        let buf = Arc::new(buf);
        for (chunk, len, input) in chunks {
            let buf = Arc::clone(&buf);
            runs.push((
                Run::Memory {
                    buf,
                    chunk,
                    entries: 0..len,
                    cur: 0,
                },
                input,
            ));
        }
        drop(buf);
        let (tx, rx) = std::sync::mpsc::sync_channel::<Result<Merged>>(4);
        // batches go back emptied, to be filled again
        let (back, spare) = std::sync::mpsc::channel::<Merged>();
        let merger = std::thread::spawn(move || {
            if let Err(e) = merge(runs, &offsets, &tx, &spare) {
                let _ = tx.send(Err(e));
            }
        });
        let mut result = Ok(());
        for batch in rx.iter() {
            result = batch.and_then(|mut merged| {
                merged.each(base, |ev| self.inner.push(defs, diag, ev))?;
                merged.clear();
                let _ = back.send(merged);
                Ok(())
            });
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

/// Merges the runs by key and sends the events, encoded, in batches (reusing those that come
/// back on `spare`).
fn merge(
    mut runs: Vec<(Run, u32)>,
    offsets: &[i64],
    tx: &std::sync::mpsc::SyncSender<Result<Merged>>,
    spare: &std::sync::mpsc::Receiver<Merged>,
) -> Result<()> {
    // the first batches are small, so that the thread behind starts at once; each next one is
    // twice as large, up to BATCH
    const BATCH: usize = 4096;
    const FIRST_BATCH: usize = 256;
    let mut full = FIRST_BATCH;
    let offset = |input: u32| offsets.get(input as usize).copied().unwrap_or(0);
    let shifted = |mut k: OrderKey, input: u32| {
        k.ts = k.ts.saturating_add(offset(input));
        k
    };
    let mut heap = BinaryHeap::with_capacity(runs.len());
    for (i, (run, input)) in runs.iter_mut().enumerate() {
        if let Some(k) = run.peek()? {
            heap.push(Reverse((shifted(k, *input), i)));
        }
    }
    let mut batch = Merged::default();
    // The run just taken from usually holds the next event too (runs of one input rarely
    // interleave): its next key replaces the top in place, one sift down instead of a pop and
    // a push.
    while let Some(mut top) = heap.peek_mut() {
        let Reverse((_, i)) = *top;
        let (run, input) = &mut runs[i];
        run.take(&mut batch.bytes)?;
        batch.events.push((batch.bytes.len(), offset(*input)));
        match run.peek()? {
            Some(k) => *top = Reverse((shifted(k, *input), i)),
            None => {
                PeekMut::pop(top);
            }
        }
        if batch.events.len() == full {
            full = (full * 2).min(BATCH);
            let next = spare.try_recv().unwrap_or_default();
            if tx.send(Ok(std::mem::replace(&mut batch, next))).is_err() {
                // the receiver stopped (an error downstream)
                return Ok(());
            }
        }
    }
    if !batch.events.is_empty() {
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

    /// The key read from an encoding is the key of the event, for every kind of event.
    #[test]
    fn keys_of_encoded_events() {
        use crate::event::{CounterValue, FlowBind, FlowId, FlowPoint, FlowRole, Num, Sample};
        use crate::model::CounterId;
        let mut open = Slice::new(TrackId(3), -5, 0, StrId(1));
        open.dur = None;
        let kinds = [
            Event::Slice(Slice::new(
                TrackId(300),
                1_712_195_495_519_689_047,
                41_321,
                StrId(2),
            )),
            Event::Slice(open),
            events().remove(1),
            Event::Counter(CounterValue {
                counter: CounterId(9),
                ts: 77,
                value: Num::Float(0.5),
            }),
            Event::Flow(FlowPoint {
                id: FlowId(1 << 40),
                role: FlowRole::End,
                track: TrackId(200),
                ts: i64::MAX,
                bind: FlowBind::Next,
                name: None,
                cat: None,
            }),
            Event::Sample(Sample {
                track: TrackId(1),
                ts: None,
                stack: None,
                weight: 1,
                cpu: None,
                name: None,
            }),
            Event::Sample(Sample {
                track: TrackId(1),
                ts: Some(i64::MIN + 1),
                stack: None,
                weight: 3,
                cpu: Some(2),
                name: None,
            }),
        ];
        for (seq, ev) in kinds.iter().enumerate() {
            for base in [0, 1_712_195_495_000_000_000, -3] {
                let mut b = Vec::new();
                codec::encode(ev, base, &mut b);
                let seq = seq as u64 * 1000;
                let key = OrderKey::of_encoded(&b, seq, base).unwrap();
                assert_eq!(key, OrderKey::of(ev, seq), "{ev:?}");
            }
        }
        assert!(OrderKey::of_encoded(&[9], 0, 0).is_err());
        assert!(OrderKey::of_encoded(&[0, 1], 0, 0).is_err());
    }

    /// An entry gives back the key it was made with, and entries sort as their keys do.
    #[test]
    fn entries_keep_their_keys_and_their_order() {
        let mut keys = Vec::new();
        for ts in [i64::MIN, -1, 0, 7, i64::MAX] {
            for class in 0..5 {
                for neg_dur in [i64::MIN, -3, 0] {
                    for seq in [0, 1, SEQ_MASK] {
                        keys.push(OrderKey {
                            ts,
                            class,
                            neg_dur,
                            seq,
                        });
                    }
                }
            }
        }
        let entries: Vec<Entry> = (keys.iter().enumerate())
            .map(|(i, &k)| Entry::new(k, i * 1000, i))
            .collect();
        for (i, (e, k)) in entries.iter().zip(&keys).enumerate() {
            assert_eq!(e.key(), *k);
            assert_eq!(e.at(), i * 1000);
            for (f, l) in entries.iter().zip(&keys) {
                assert_eq!(e.order(f), k.cmp(l), "{k:?} against {l:?}");
            }
        }
    }

    /// An event whose encoding is longer than an entry's length field can say comes back whole,
    /// from memory and from a spilled run.
    #[test]
    fn an_event_too_long_for_its_entry_comes_back_whole() {
        use crate::model::{Arg, Value};
        let mut long = Slice::new(TrackId(1), 5, 1, StrId(0));
        long.args.push(Arg {
            key: StrId(1),
            value: Value::Str("x".repeat(LONG as usize + 10).into()),
        });
        for budget in [usize::MAX, 1000] {
            let (mut defs, mut diag) = (Defs::new(), Diagnostics::default());
            let mut s = Sorter::with_budget(MemSink::default(), budget);
            let short = |ts| Event::Slice(Slice::new(TrackId(1), ts, 1, StrId(0)));
            for e in [short(9), Event::Slice(long.clone()), short(1)] {
                s.push(&mut defs, &mut diag, e).unwrap();
            }
            s.end(&mut defs, &mut diag).unwrap();
            let events = s.into_inner().events;
            assert_eq!(events, [short(1), Event::Slice(long.clone()), short(9)]);
        }
    }

    /// The first buffer is reserved before its first event and not moved as it fills up to
    /// its spill, so that each of its pages is touched once.
    #[test]
    fn the_first_buffer_fills_in_place_up_to_its_spill() {
        let (mut defs, mut diag) = (Defs::new(), Diagnostics::default());
        let mut s = Sorter::with_budget(MemSink::default(), usize::MAX);
        s.first_run = 1 << 20;
        let slice = |ts| Event::Slice(Slice::new(TrackId(7), ts, 3, StrId(1)));
        s.push(&mut defs, &mut diag, slice(0)).unwrap();
        let at = s.buf.bytes.as_ptr();
        let mut ts = 0;
        while s.spilled_runs() == 0 && s.buf.size() + 100 < s.first_run {
            ts += 1;
            s.push(&mut defs, &mut diag, slice(ts)).unwrap();
            // entries go in chunks made at their full size (none between a full one and the
            // next event)
            assert!(matches!(s.buf.filling.entries.capacity(), 0 | CHUNK));
        }
        assert!(ts > 10_000, "{ts} events");
        assert_eq!(s.buf.bytes.as_ptr(), at, "the buffer moved");
        // a sorter that never spills is given its first run's room, not its budget
        let mut never = Sorter::with_budget(MemSink::default(), usize::MAX);
        never.first_run = usize::MAX;
        never.push(&mut defs, &mut diag, slice(0)).unwrap();
        assert!((FIRST_RUN..2 * FIRST_RUN).contains(&never.buf.bytes.capacity()));
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
    fn runs_start_small_and_grow_with_what_is_spilled() {
        let (mut defs, mut diag) = (Defs::new(), Diagnostics::default());
        let mut s = Sorter::with_budget(MemSink::default(), usize::MAX);
        s.first_run = 100;
        let mut pushed = 0;
        for _ in 0..40 {
            for e in events() {
                s.push(&mut defs, &mut diag, e).unwrap();
                pushed += 1;
            }
        }
        s.collect_spill().unwrap();
        let (runs, spilled) = (s.spilled_runs(), s.spilled);
        // a run of the first size holds a few events: equal runs would be thousands
        assert!(spilled > 100 * 1000, "{spilled} bytes spilled");
        let most = RUN_GROWTH as f64 * (1.0 + (spilled as f64 / 100.0).ln()) + 2.0;
        assert!(
            runs > RUN_GROWTH && (runs as f64) < most,
            "{runs} runs, at most {most}"
        );
        s.end(&mut defs, &mut diag).unwrap();
        let out = s.into_inner().events;
        assert_eq!(out.len(), pushed);
        let mut memory = Sorter::with_budget(MemSink::default(), usize::MAX);
        for _ in 0..40 {
            for e in events() {
                memory.push(&mut defs, &mut diag, e).unwrap();
            }
        }
        assert_eq!(memory.spilled_runs(), 0);
        memory.end(&mut defs, &mut diag).unwrap();
        assert!(out == memory.into_inner().events, "not the order of memory");
    }

    #[test]
    fn records_cut_by_the_read_buffer_or_larger_than_it_come_back_whole() {
        // argument texts from a few bytes to past the run reader's 256 KiB buffer, so that
        // records lie whole in it, straddle its end, or exceed it
        let events: Vec<Event> = (0..120i64)
            .map(|i| {
                let len = (i as usize * 7_919) % (300 << 10);
                Event::Instant(Instant {
                    track: TrackId(0),
                    ts: (i * 37) % 50,
                    name: StrId(1),
                    cat: None,
                    args: vec![crate::model::Arg {
                        key: StrId(2),
                        value: crate::model::Value::Str("x".repeat(len).into()),
                    }],
                    stack: None,
                    color: None,
                })
            })
            .collect();
        let sorted = |first_run: usize| {
            let (mut defs, mut diag) = (Defs::new(), Diagnostics::default());
            let mut s = Sorter::with_budget(MemSink::default(), usize::MAX);
            s.first_run = first_run;
            for e in events.iter().cloned() {
                s.push(&mut defs, &mut diag, e).unwrap();
            }
            s.collect_spill().unwrap();
            let runs = s.spilled_runs();
            s.end(&mut defs, &mut diag).unwrap();
            (s.into_inner().events, runs)
        };
        let (memory, none) = sorted(usize::MAX);
        let (spilled, runs) = sorted(1 << 20);
        assert_eq!(none, 0);
        assert!(runs > 3, "{runs} runs");
        assert!(memory == spilled, "spilled records differ from memory");
    }

    /// The last buffer, sorted in chunks on the helper thread as they fill and its last one at
    /// the end, comes out in the total order.
    #[test]
    fn a_last_buffer_sorted_in_chunks_gives_the_total_order() {
        let all: Vec<Event> = (0..60).flat_map(|_| events()).collect();
        assert!(all.len() > 2 * CHUNK && all.len() % CHUNK != 0);
        let (mut defs, mut diag) = (Defs::new(), Diagnostics::default());
        let mut s = Sorter::with_budget(MemSink::default(), usize::MAX);
        s.first_run = usize::MAX;
        for e in all.clone() {
            s.push(&mut defs, &mut diag, e).unwrap();
        }
        s.end(&mut defs, &mut diag).unwrap();
        assert_eq!(s.spilled_runs(), 0);
        let mut expected: Vec<(OrderKey, Event)> = (all.into_iter().enumerate())
            .map(|(seq, e)| (OrderKey::of(&e, seq as u64), e))
            .collect();
        expected.sort_by_key(|(k, _)| *k);
        let expected: Vec<Event> = expected.into_iter().map(|(_, e)| e).collect();
        assert!(s.into_inner().events == expected);
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
