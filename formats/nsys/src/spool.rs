//! A queue on disk between one producer thread and the merge: rows (integers, NULLs, text) are
//! appended to a temporary file and read back in order. The producer never waits for the merge
//! and memory stays the same whatever the lag, so one producer can feed several streams that the
//! merge consumes at different paces (the nvtx-kernel pass feeds its projections and the kernel
//! launches of the join it shares with the flows) without a deadlock; and the merge can wait for
//! the next row of a spool without holding the producer up.
//!
//! The reader waits for rows rather than being told how far the producer has got: the merge
//! decodes a stream's next row when it needs it, and decoding names things (tracks, processes,
//! strings) in the order it meets them, so a row handed over whenever the producer happened to
//! be ready would number them differently from one run to the next.

use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::sync::{Condvar, Mutex};

use rusqlite::types::{Value as SqlValue, ValueRef};
use tracex_ir::io::temp_file_error;
use tracex_ir::{Error, Location, Result};

use crate::batch::{Batch, Packed};

const NULL: u8 = 0;
const INT: u8 = 1;
const TEXT: u8 = 2;

/// What the producer has made available.
#[derive(Default)]
struct State {
    /// Bytes of complete rows written.
    bytes: u64,
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
        Ok(Spool {
            file: tempfile::NamedTempFile::new()
                .map_err(|e| temp_file_error(e, "to queue rows for the merge"))?,
            columns,
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
            out: BufWriter::with_capacity(1 << 16, self.file.reopen()?),
            bytes: 0,
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
    out: BufWriter<File>,
    bytes: u64,
    finished: bool,
}

impl SpoolWriter<'_> {
    /// Appends one row of `Spool::columns` values (integers, NULLs and text only).
    pub fn row(&mut self, values: &[SqlValue]) -> Result<()> {
        let mut b = [0u8; 9];
        for v in values {
            match v {
                SqlValue::Integer(i) => {
                    b[0] = INT;
                    b[1..].copy_from_slice(&i.to_le_bytes());
                    self.out.write_all(&b)?;
                    self.bytes += 9;
                }
                SqlValue::Text(t) => {
                    self.out.write_all(&[TEXT])?;
                    self.out.write_all(&(t.len() as u32).to_le_bytes())?;
                    self.out.write_all(t.as_bytes())?;
                    self.bytes += 5 + t.len() as u64;
                }
                _ => {
                    self.out.write_all(&[NULL])?;
                    self.bytes += 1;
                }
            }
        }
        Ok(())
    }

    /// Makes the rows written so far readable.
    pub fn publish(&mut self) -> Result<()> {
        self.out.flush()?;
        let mut st = self.spool.state();
        st.bytes = self.bytes;
        self.spool.ready.notify_all();
        Ok(())
    }

    /// Publishes the rest and ends the queue; `failed` tells readers why it ended early.
    pub fn finish(mut self, failed: Option<Failure>) {
        let flushed = self.out.flush();
        let mut st = self.spool.state();
        st.bytes = self.bytes;
        st.done = true;
        st.failed = failed.or_else(|| flushed.err().map(|e| Failure::other(e.to_string())));
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
    /// Bytes of the file read so far (into `buf` or decoded).
    read: u64,
    /// Bytes read but not decoded yet (the start of a row).
    buf: Vec<u8>,
}

/// Bytes read from the spool at a time: the reader's memory, whatever the lag. Small enough
/// that the rows of one chunk fit blocks the allocator reuses (a megabyte made every chunk's
/// rows a fresh mapping, faulted in and grown by copying).
const CHUNK: u64 = 1 << 16;

impl SpoolReader<'_> {
    /// The next rows or the end; waits for the producer when there is nothing new.
    pub fn next(&mut self) -> Result<Next> {
        loop {
            let (bytes, done, failed) = {
                let mut st = self.spool.state();
                while st.bytes == self.read && !st.done {
                    st = self.spool.ready.wait(st).unwrap_or_else(|p| p.into_inner());
                }
                (st.bytes, st.done, st.failed.clone())
            };
            if bytes > self.read {
                let len = (bytes - self.read).min(CHUNK) as usize;
                let start = self.buf.len();
                self.buf.resize(start + len, 0);
                self.file.seek(SeekFrom::Start(self.read))?;
                self.file.read_exact(&mut self.buf[start..])?;
                self.read += len as u64;
                let (rows, used) = decode(&self.buf, self.spool.columns);
                self.buf.drain(..used);
                if rows.is_empty() {
                    continue; // a row longer than a chunk: read on
                }
                return Ok(Next::Rows(rows));
            }
            return match (done, failed) {
                (true, Some(why)) => Err(why.error()),
                _ => Ok(Next::End),
            };
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
                    ])
                    .unwrap();
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

    #[test]
    fn a_producer_that_stops_early_is_an_error() {
        let spool = Spool::new(1).unwrap();
        drop(spool.writer().unwrap());
        assert!(spool.reader().unwrap().next().is_err());
    }
}
