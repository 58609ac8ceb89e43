//! A queue between one producer thread and the merge: rows (integers, NULLs, text) are encoded
//! into segments, kept in memory up to [`MEMORY`] bytes and appended to a temporary file beyond,
//! and read back in order. The producer never waits for the merge and memory stays bounded
//! whatever the lag, so one producer can feed several streams that the merge consumes at
//! different paces (the nvtx-kernel pass feeds its projections and the kernel launches of the
//! join it shares with the flows) without a deadlock; and the merge can wait for the next row of
//! a spool without holding the producer up.
//!
//! Segments stay in memory while the merge keeps up, which is when it waits for them: on the
//! 1M-kernel benchmark the pass wrote each of its 4,000 segments to the file and the merge read
//! it back, a write and a read system call on the way of the rows the merge was waiting for.
//!
//! The reader waits for rows rather than being told how far the producer has got: the merge
//! decodes a stream's next row when it needs it, and decoding names things (tracks, processes,
//! strings) in the order it meets them, so a row handed over whenever the producer happened to
//! be ready would number them differently from one run to the next.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::sync::{Condvar, Mutex};

use rusqlite::types::{Value as SqlValue, ValueRef};
use tracex_ir::io::temp_file_error;
use tracex_ir::{Error, Location, Result};

use crate::batch::{Batch, Packed};

const NULL: u8 = 0;
const INT: u8 = 1;
const TEXT: u8 = 2;

/// Bytes of published rows a spool keeps in memory; what comes while this many wait for the
/// reader goes to the file.
const MEMORY: usize = 8 << 20;

/// Published rows, in order.
enum Segment {
    Memory(Vec<u8>),
    /// The next `len` bytes of the file, from where the reader has got to.
    File {
        len: u64,
    },
}

/// What the producer has made available.
#[derive(Default)]
struct State {
    segments: VecDeque<Segment>,
    /// Bytes of the memory segments.
    in_memory: usize,
    /// A spent memory segment for the producer to fill again.
    spare: Option<Vec<u8>>,
    done: bool,
    failed: Option<Failure>,
}

/// Why a producer stopped early, as readers report it: where the input is wrong, when that is
/// what stopped it.
#[derive(Clone, Debug)]
pub struct Failure {
    at: Option<Location>,
    why: String,
}

impl Failure {
    pub fn of(e: &Error) -> Failure {
        match e {
            Error::Invalid { location, message } => Failure {
                at: Some(location.clone()),
                why: message.clone(),
            },
            other => Failure::other(other.to_string()),
        }
    }

    pub fn other(why: impl Into<String>) -> Failure {
        Failure {
            at: None,
            why: why.into(),
        }
    }

    fn error(self) -> Error {
        let message = format!("the nvtx-kernel pass stopped: {}", self.why);
        match self.at {
            Some(at) => Error::invalid(at, message),
            None => Error::Library(message),
        }
    }
}

pub struct Spool {
    file: tempfile::NamedTempFile,
    columns: usize,
    /// Bytes kept in memory ([`MEMORY`]).
    memory: usize,
    state: Mutex<State>,
    ready: Condvar,
}

/// What a reader gets next.
pub enum Next {
    Rows(Batch),
    End,
}

impl Spool {
    pub fn new(columns: usize) -> Result<Spool> {
        Spool::with_memory(columns, MEMORY)
    }

    fn with_memory(columns: usize, memory: usize) -> Result<Spool> {
        Ok(Spool {
            file: tempfile::NamedTempFile::new()
                .map_err(|e| temp_file_error(e, "to queue rows for the merge"))?,
            columns,
            memory,
            state: Mutex::new(State::default()),
            ready: Condvar::new(),
        })
    }

    pub fn columns(&self) -> usize {
        self.columns
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Ends the queue as failed (when no writer could be made).
    pub fn fail(&self, why: Failure) {
        let mut st = self.state();
        st.done = true;
        st.failed = Some(why);
        self.ready.notify_all();
    }

    pub fn writer(&self) -> Result<SpoolWriter<'_>> {
        Ok(SpoolWriter {
            spool: self,
            file: self.file.reopen()?,
            rows: Vec::new(),
            finished: false,
        })
    }

    pub fn reader(&self) -> Result<SpoolReader<'_>> {
        Ok(SpoolReader {
            spool: self,
            file: self.file.reopen()?,
            read: 0,
            buf: Vec::new(),
        })
    }
}

pub struct SpoolWriter<'a> {
    spool: &'a Spool,
    file: File,
    /// Rows written since the last publish.
    rows: Vec<u8>,
    finished: bool,
}

impl SpoolWriter<'_> {
    /// Appends one row of `Spool::columns` values (integers, NULLs and text only), in memory:
    /// [`publish`](Self::publish) is what may write.
    pub fn row(&mut self, values: &[SqlValue]) {
        for v in values {
            match v {
                SqlValue::Integer(i) => {
                    self.rows.push(INT);
                    self.rows.extend_from_slice(&i.to_le_bytes());
                }
                SqlValue::Text(t) => {
                    self.rows.push(TEXT);
                    self.rows.extend_from_slice(&(t.len() as u32).to_le_bytes());
                    self.rows.extend_from_slice(t.as_bytes());
                }
                _ => self.rows.push(NULL),
            }
        }
    }

    /// Makes the rows written so far readable: in memory while the reader keeps up, in the file
    /// otherwise.
    pub fn publish(&mut self) -> Result<()> {
        if self.rows.is_empty() {
            return Ok(());
        }
        // when the rows fit in memory: a buffer to go on writing into
        let next = {
            let mut st = self.spool.state();
            let fits = st.in_memory + self.rows.len() <= self.spool.memory;
            fits.then(|| st.spare.take().unwrap_or_default())
        };
        let segment = match next {
            Some(next) => Segment::Memory(std::mem::replace(&mut self.rows, next)),
            None => {
                // the reader's position in the file is its own: appends go to the end
                self.file.write_all(&self.rows)?;
                let len = self.rows.len() as u64;
                self.rows.clear();
                Segment::File { len }
            }
        };
        let mut st = self.spool.state();
        if let Segment::Memory(rows) = &segment {
            st.in_memory += rows.len();
        }
        st.segments.push_back(segment);
        self.spool.ready.notify_all();
        Ok(())
    }

    /// Publishes the rest and ends the queue; `failed` tells readers why it ended early.
    pub fn finish(mut self, failed: Option<Failure>) {
        let published = self.publish();
        let mut st = self.spool.state();
        st.done = true;
        st.failed = failed.or_else(|| published.err().map(|e| Failure::other(e.to_string())));
        self.finished = true;
        self.spool.ready.notify_all();
    }
}

impl Drop for SpoolWriter<'_> {
    fn drop(&mut self) {
        if !self.finished {
            let mut st = self.spool.state();
            st.done = true;
            st.failed
                .get_or_insert_with(|| Failure::other("the producer stopped"));
            self.spool.ready.notify_all();
        }
    }
}

pub struct SpoolReader<'a> {
    spool: &'a Spool,
    file: File,
    /// Bytes of the file read so far.
    read: u64,
    /// Bytes read but not decoded yet (the start of a row).
    buf: Vec<u8>,
}

/// Bytes read from the file at a time: what the reader holds of it, whatever the lag. Small enough
/// that the rows of one chunk fit blocks the allocator reuses (a megabyte made every chunk's
/// rows a fresh mapping, faulted in and grown by copying).
const CHUNK: u64 = 1 << 16;

impl SpoolReader<'_> {
    /// The next rows or the end; waits for the producer when there is nothing new.
    pub fn next(&mut self) -> Result<Next> {
        loop {
            let segment = {
                let mut st = self.spool.state();
                while st.segments.is_empty() && !st.done {
                    st = self.spool.ready.wait(st).unwrap_or_else(|p| p.into_inner());
                }
                match st.segments.pop_front() {
                    Some(Segment::File { len }) if len > CHUNK => {
                        // the rest stays first in line
                        st.segments.push_front(Segment::File { len: len - CHUNK });
                        Segment::File { len: CHUNK }
                    }
                    Some(Segment::Memory(rows)) => {
                        st.in_memory -= rows.len();
                        Segment::Memory(rows)
                    }
                    Some(s) => s,
                    None => {
                        return match st.failed.clone() {
                            Some(why) => Err(why.error()),
                            None => Ok(Next::End),
                        };
                    }
                }
            };
            let (rows, used) = match segment {
                Segment::Memory(rows) if self.buf.is_empty() => {
                    let (batch, used) = decode(&rows, self.spool.columns);
                    self.buf.extend_from_slice(&rows[used..]);
                    self.give_back(rows);
                    (batch, 0)
                }
                Segment::Memory(rows) => {
                    self.buf.extend_from_slice(&rows);
                    self.give_back(rows);
                    decode(&self.buf, self.spool.columns)
                }
                Segment::File { len } => {
                    let start = self.buf.len();
                    self.buf.resize(start + len as usize, 0);
                    self.file.seek(SeekFrom::Start(self.read))?;
                    self.file.read_exact(&mut self.buf[start..])?;
                    self.read += len;
                    decode(&self.buf, self.spool.columns)
                }
            };
            self.buf.drain(..used);
            if rows.is_empty() {
                continue; // a row longer than what came: read on
            }
            return Ok(Next::Rows(rows));
        }
    }

    /// Hands a decoded memory segment back for the producer to fill again.
    fn give_back(&self, mut rows: Vec<u8>) {
        rows.clear();
        let mut st = self.spool.state();
        if st.spare.is_none() {
            st.spare = Some(rows);
        }
    }
}

/// Decodes the whole rows at the start of `b`: their cells and the bytes they took.
fn decode(b: &[u8], columns: usize) -> (Batch, usize) {
    // a value takes at least one byte, most of them nine (an integer)
    let mut rows = Batch::with_capacity(b.len() / 9 + columns);
    // where the row being decoded starts, in `b` and in the batch's texts
    let (mut done, mut done_texts) = (0, (0, 0));
    'rows: loop {
        let mut pos = done;
        for _ in 0..columns {
            let Some(&tag) = b.get(pos) else {
                break 'rows;
            };
            pos += 1;
            match tag {
                INT => {
                    let Some(raw) = b.get(pos..pos + 8) else {
                        break 'rows;
                    };
                    let mut le = [0u8; 8];
                    le.copy_from_slice(raw);
                    rows.cells.push(Packed::Int(i64::from_le_bytes(le)));
                    pos += 8;
                }
                TEXT => {
                    let Some(raw) = b.get(pos..pos + 4) else {
                        break 'rows;
                    };
                    let mut le = [0u8; 4];
                    le.copy_from_slice(raw);
                    let n = u32::from_le_bytes(le) as usize;
                    let Some(text) = b.get(pos + 4..pos + 4 + n) else {
                        break 'rows;
                    };
                    rows.push_ref(ValueRef::Text(text));
                    pos += 4 + n;
                }
                _ => rows.cells.push(Packed::Null),
            }
        }
        (done, done_texts) = (pos, (rows.bytes.len(), rows.spans.len()));
    }
    // the cells and texts of a row cut off by the end of `b`
    let whole = rows.cells.len() / columns.max(1) * columns;
    rows.cells.truncate(whole);
    rows.bytes.truncate(done_texts.0);
    rows.spans.truncate(done_texts.1);
    (rows, done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_arrive_in_order_across_threads() {
        let spool = Spool::new(3).unwrap();
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut w = spool.writer().unwrap();
                for i in 0..10_000i64 {
                    w.row(&[
                        SqlValue::Integer(i),
                        SqlValue::Null,
                        SqlValue::Text(format!("r{i}")),
                    ]);
                    if i % 1000 == 999 {
                        w.publish().unwrap();
                    }
                }
                w.finish(None);
            });
            let mut r = spool.reader().unwrap();
            let (mut next, mut batches) = (0i64, 0);
            while let Next::Rows(v) = r.next().unwrap() {
                assert!(!v.is_empty());
                batches += 1;
                for row in v.to_rows(3) {
                    assert_eq!(row[0], SqlValue::Integer(next));
                    assert_eq!(row[1], SqlValue::Null);
                    assert_eq!(row[2], SqlValue::Text(format!("r{next}")));
                    next += 1;
                }
            }
            assert_eq!(next, 10_000);
            assert!(batches >= 2);
        });
    }

    /// Every row back in order when the reader starts only after the producer has finished:
    /// what did not fit the memory went through the file, in pieces of [`CHUNK`] bytes, and a
    /// row longer than that comes whole.
    #[test]
    fn rows_past_the_memory_go_through_the_file_in_order() {
        let spool = Spool::with_memory(2, 1000).unwrap();
        let long = "x".repeat(3 * CHUNK as usize);
        let text = |i: i64| match i % 997 {
            0 => long.clone(),
            _ => format!("r{i}"),
        };
        let mut w = spool.writer().unwrap();
        for i in 0..20_000i64 {
            w.row(&[SqlValue::Integer(i), SqlValue::Text(text(i))]);
            if i % 7 == 6 {
                w.publish().unwrap();
            }
        }
        w.finish(None);
        let (memory, total) = {
            let st = spool.state();
            let memory = st
                .segments
                .iter()
                .filter(|s| matches!(s, Segment::Memory(_)));
            (memory.count(), st.segments.len())
        };
        assert!(
            memory > 0 && total > memory,
            "{memory} in memory of {total}"
        );
        let mut r = spool.reader().unwrap();
        let mut next = 0i64;
        while let Next::Rows(v) = r.next().unwrap() {
            for row in v.to_rows(2) {
                assert_eq!(row[0], SqlValue::Integer(next));
                assert_eq!(row[1], SqlValue::Text(text(next)));
                next += 1;
            }
        }
        assert_eq!(next, 20_000);
        assert!(r.read > 1_000_000, "{} bytes through the file", r.read);
    }

    #[test]
    fn a_producer_that_stops_early_is_an_error() {
        let spool = Spool::new(1).unwrap();
        drop(spool.writer().unwrap());
        assert!(spool.reader().unwrap().next().is_err());
    }
}
