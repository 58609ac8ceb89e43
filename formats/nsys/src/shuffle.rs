//! Rows of a table stored far from time order, put in order by tracex instead of SQLite's
//! sorter. SQLite sorts whole records and decodes them again at every comparison: on an export
//! whose rows are shuffled, that sort took most of the import's CPU. Here the order is known
//! before the rows are read (the key scan of [`crate::order`] gives every rowid its rank), so
//! no comparison of rows is needed: the scan's rows are encoded and appended to one of a few
//! parts by rank range (a distribution sort), and each part is then read back whole, its rows
//! put in rank order and handed on. Parts grow in memory up to [`PART_BUFFER`] bytes and go on
//! to a temporary file beyond it. Memory: 4 bytes a rowid, the parts' buffers, and one part's
//! rows at a time.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom, Write};

use rusqlite::types::ValueRef;
use tracex_ir::io::temp_file_error;
use tracex_ir::Result;

use crate::idmap::IdMap;
use crate::scan::ScanRow;

/// Rows per part at least, and parts at most: a million rows make 16 parts of 64k rows.
const PART_ROWS: usize = 1 << 16;
const MAX_PARTS: usize = 64;
/// Bytes a part keeps in memory before they go to its file.
const PART_BUFFER: usize = 1 << 18;

/// The rank of every rowid in the order the rows are wanted.
pub struct Ranks {
    len: usize,
    by_rowid: IdMap,
}

impl Ranks {
    /// `schedule`: every rowid, in the order wanted (the tests' reference for [`Ranks::of_rows`]).
    #[cfg(test)]
    pub fn new(schedule: impl ExactSizeIterator<Item = i64> + Clone) -> Ranks {
        Ranks {
            len: schedule.len(),
            by_rowid: IdMap::new(schedule.enumerate().map(|(r, id)| (id, r as u32)), 2),
        }
    }

    /// The ranks of the rows whose rowids are `rowids` (in storage order) when they are wanted
    /// in `order` (positions into `rowids`, each once). Built in storage order, with one
    /// scattered write a row: [`Ranks::new`] over `rowids[order[r]]` reads and writes at random
    /// in three passes, which at a million rows missed the cache at every step, at the start of
    /// a shuffled table's import.
    pub fn of_rows(rowids: &[i64], order: &[u32]) -> Ranks {
        let mut rank_at = vec![0u32; rowids.len()];
        for (rank, &at) in order.iter().enumerate() {
            rank_at[at as usize] = rank as u32;
        }
        Ranks {
            len: order.len(),
            by_rowid: IdMap::new(rowids.iter().copied().zip(rank_at.iter().copied()), 2),
        }
    }

    /// How many rowids have a rank.
    pub fn len(&self) -> usize {
        self.len
    }

    fn of(&self, rowid: i64) -> Option<u32> {
        self.by_rowid.get(rowid)
    }
}

/// One rank range: rows encoded (rank, then cells), in memory and then in a file.
#[derive(Default)]
struct Part {
    buf: Vec<u8>,
    file: Option<File>,
}

/// Rows distributed by rank, then read back in order.
pub struct Shuffle<'r> {
    ranks: &'r Ranks,
    columns: usize,
    part_rows: usize,
    /// [`PART_BUFFER`], smaller in tests.
    part_buffer: usize,
    parts: Vec<Part>,
}

impl<'r> Shuffle<'r> {
    pub fn new(ranks: &'r Ranks, columns: usize) -> Shuffle<'r> {
        let part_rows = PART_ROWS.max(ranks.len().div_ceil(MAX_PARTS));
        Shuffle::with_parts(ranks, columns, part_rows, PART_BUFFER)
    }

    fn with_parts(
        ranks: &'r Ranks,
        columns: usize,
        part_rows: usize,
        part_buffer: usize,
    ) -> Shuffle<'r> {
        let n = ranks.len();
        let parts = (0..n.div_ceil(part_rows).max(1))
            .map(|_| Part::default())
            .collect();
        Shuffle {
            ranks,
            columns,
            part_rows,
            part_buffer,
            parts,
        }
    }

    /// Takes one row of the scan (column 0 its rowid); false when the rowid has no rank (the
    /// table changed under the reader).
    pub fn push(&mut self, row: &ScanRow) -> Result<bool> {
        let Some(rank) = self.ranks.of(row.rowid()) else {
            return Ok(false);
        };
        let part = &mut self.parts[rank as usize / self.part_rows];
        part.buf.extend_from_slice(&rank.to_le_bytes());
        // the cells' length, known once they are written: the part's sort then need not
        // walk them (that walk was a fifth of the drain's instructions)
        let len_at = part.buf.len();
        part.buf.extend_from_slice(&[0; 4]);
        for i in 0..self.columns {
            encode(row.get(i), &mut part.buf);
        }
        let len = u32::try_from(part.buf.len() - len_at - 4)
            .map_err(|_| tracex_ir::Error::Library("a row too long to reorder".into()))?;
        part.buf[len_at..len_at + 4].copy_from_slice(&len.to_le_bytes());
        if part.buf.len() >= self.part_buffer {
            let file = match &mut part.file {
                Some(f) => f,
                None => part.file.insert(
                    tempfile::tempfile()
                        .map_err(|e| temp_file_error(e, "to reorder rows by time"))?,
                ),
            };
            file.write_all(&part.buf)?;
            part.buf.clear();
        }
        Ok(true)
    }

    /// Hands every row on in rank order (rows of one rank in scan order), as `columns` cells;
    /// `f` returns false to stop.
    pub fn drain(self, mut f: impl FnMut(&[ValueRef]) -> bool) -> Result<()> {
        // one part's buffers, reused by the next: new ones for every part were two fifths of
        // the page faults of a shuffled export's import (each part's memory purged by the
        // allocator after it, then faulted in again)
        let (mut bytes, mut sorted, mut scratch) = (Vec::new(), Vec::new(), Scratch::default());
        for (p, part) in self.parts.into_iter().enumerate() {
            bytes.clear();
            if let Some(mut file) = part.file {
                file.seek(SeekFrom::Start(0))?;
                BufReader::new(file).read_to_end(&mut bytes)?;
            }
            bytes.extend_from_slice(&part.buf);
            drop(part.buf);
            let ranks = p * self.part_rows..(p + 1) * self.part_rows;
            sort_part(&bytes, ranks, &mut scratch, &mut sorted);
            let mut row = vec![ValueRef::Null; self.columns];
            let mut at = 0;
            while at < sorted.len() {
                for cell in row.iter_mut() {
                    (*cell, at) = decode(&sorted, at);
                }
                if !f(&row) {
                    return Ok(());
                }
            }
        }
        Ok(())
    }
}

/// What [`sort_part`] works in, kept from one part to the next: each row's slot among the
/// part's ranks and where its cells are; where each rank's rows go.
#[derive(Default)]
struct Scratch {
    rows: Vec<(usize, usize, usize)>,
    place: Vec<usize>,
}

/// The rows of one part (each its rank, the length of its cells, then the cells), their
/// cells put in rank order into `out` (rows of one rank in the order given). Rows are moved,
/// not visited in rank order: a part is bigger than the cache, and reading its rows in rank
/// order missed it at every row (half of the drain's time); writes in rank order do not wait
/// for memory.
fn sort_part(
    bytes: &[u8],
    ranks: std::ops::Range<usize>,
    Scratch { rows, place }: &mut Scratch,
    out: &mut Vec<u8>,
) {
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
    // each row's place among the part's ranks and where its cells are
    rows.clear();
    let mut at = 0;
    while at < bytes.len() {
        let rank = u32_at(at) as usize;
        let start = at + 8;
        at = start + u32_at(at + 4) as usize;
        rows.push((rank - ranks.start, start, at));
    }
    // where each rank's rows go: the bytes of the ranks before it
    place.clear();
    place.resize(ranks.len() + 1, 0);
    for &(slot, start, end) in rows.iter() {
        place[slot + 1] += end - start;
    }
    for i in 1..place.len() {
        place[i] += place[i - 1];
    }
    out.clear();
    out.resize(place[ranks.len()], 0);
    for &(slot, start, end) in rows.iter() {
        let to = place[slot];
        out[to..to + end - start].copy_from_slice(&bytes[start..end]);
        place[slot] += end - start;
    }
}

const NULL: u8 = 0;
const INT: u8 = 1;
const REAL: u8 = 2;
const TEXT: u8 = 3;
const BLOB: u8 = 4;

fn put_varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[inline]
fn get_varint(b: &[u8], mut at: usize) -> (u64, usize) {
    // most cells are small integers: one byte
    let first = b[at];
    if first < 0x80 {
        return (u64::from(first), at + 1);
    }
    let (mut v, mut shift) = (0u64, 0);
    loop {
        let byte = b[at];
        at += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return (v, at);
        }
        shift += 7;
    }
}

/// One cell: a tag, then an integer as a zigzag varint (timestamps take 5 bytes, most cells
/// one), a real as 8 bytes, text and blobs with their length.
fn encode(v: ValueRef, out: &mut Vec<u8>) {
    match v {
        ValueRef::Null => out.push(NULL),
        ValueRef::Integer(i) => {
            out.push(INT);
            put_varint(((i << 1) ^ (i >> 63)) as u64, out);
        }
        ValueRef::Real(f) => {
            out.push(REAL);
            out.extend_from_slice(&f.to_le_bytes());
        }
        ValueRef::Text(t) | ValueRef::Blob(t) => {
            out.push(if matches!(v, ValueRef::Text(_)) {
                TEXT
            } else {
                BLOB
            });
            put_varint(t.len() as u64, out);
            out.extend_from_slice(t);
        }
    }
}

fn decode(b: &[u8], at: usize) -> (ValueRef<'_>, usize) {
    let tag = b[at];
    let at = at + 1;
    match tag {
        INT => {
            let (z, at) = get_varint(b, at);
            (ValueRef::Integer((z >> 1) as i64 ^ -((z & 1) as i64)), at)
        }
        REAL => {
            let f = f64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"));
            (ValueRef::Real(f), at + 8)
        }
        TEXT | BLOB => {
            let (len, at) = get_varint(b, at);
            let end = at + len as usize;
            // text as SQLite gave it (rusqlite hands it over unchecked): the reader of the
            // cell decodes it lossily
            let v = match tag {
                TEXT => ValueRef::Text(&b[at..end]),
                _ => ValueRef::Blob(&b[at..end]),
            };
            (v, end)
        }
        _ => (ValueRef::Null, at),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::types::Value as SqlValue;

    #[test]
    fn cells_survive_the_encoding() {
        let cells = [
            ValueRef::Null,
            ValueRef::Integer(0),
            ValueRef::Integer(-1),
            // the largest one-byte varint (zigzag 127) and the smallest two-byte one
            ValueRef::Integer(-64),
            ValueRef::Integer(64),
            ValueRef::Integer(i64::MIN),
            ValueRef::Integer(i64::MAX),
            ValueRef::Integer(1_700_000_000_123),
            ValueRef::Real(-2.5),
            ValueRef::Text(b"k\xc3\xa9rnel"),
            ValueRef::Blob(&[0, 255, 7]),
        ];
        let mut b = Vec::new();
        for c in cells {
            encode(c, &mut b);
        }
        let mut at = 0;
        for c in cells {
            let (v, next) = decode(&b, at);
            assert_eq!(v, c);
            at = next;
        }
        assert_eq!(at, b.len());
    }

    /// Rows in many parts, most of them through files, come out in schedule order, rows of one
    /// rowid (a join's) in scan order, every cell as read.
    #[test]
    fn rows_come_out_in_schedule_order_through_files() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE T (a, b)").unwrap();
        for i in 0..200i64 {
            let b = match i % 3 {
                0 => SqlValue::Text(format!("t{i}")),
                1 => SqlValue::Real(i as f64 / 4.0),
                _ => SqlValue::Null,
            };
            conn.execute(
                "INSERT INTO T VALUES (?1, ?2)",
                rusqlite::params![i * 7 % 200, b],
            )
            .unwrap();
        }
        // the schedule: rowids by `a` descending; rowid 5 comes twice from the query
        let schedule: Vec<i64> = conn
            .prepare("SELECT rowid FROM T ORDER BY a DESC")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let sql =
            "SELECT rowid, a, b FROM T UNION ALL SELECT rowid, -1, 'again' FROM T WHERE rowid = 5";
        let mut stmt = conn.prepare(sql).unwrap();
        let mut rows = stmt.query([]).unwrap();
        let ranks = Ranks::new(schedule.iter().copied());
        let mut shuffle = Shuffle::with_parts(&ranks, 3, 7, 40);
        while let Some(r) = rows.next().unwrap() {
            assert!(shuffle.push(&ScanRow::Sql(r)).unwrap());
        }
        assert!(shuffle.parts.iter().filter(|p| p.file.is_some()).count() > 20);
        let mut got = Vec::new();
        shuffle
            .drain(|row| {
                got.push(row.iter().map(|&c| crate::db::owned(c)).collect::<Vec<_>>());
                true
            })
            .unwrap();
        let mut want: Vec<Vec<SqlValue>> = conn
            .prepare("SELECT rowid, a, b FROM T ORDER BY a DESC")
            .unwrap()
            .query_map([], |r| (0..3).map(|i| r.get(i)).collect())
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let five = want
            .iter()
            .position(|r| r[0] == SqlValue::Integer(5))
            .unwrap();
        let again = vec![5.into(), (-1).into(), SqlValue::Text("again".into())];
        want.insert(five + 1, again);
        assert_eq!(got, want);
        // a rowid the schedule does not have
        let ranks = Ranks::new([1, 2].into_iter());
        let mut shuffle = Shuffle::new(&ranks, 1);
        let mut stmt = conn.prepare("SELECT rowid FROM T WHERE rowid = 3").unwrap();
        let mut rows = stmt.query([]).unwrap();
        assert!(!shuffle
            .push(&ScanRow::Sql(rows.next().unwrap().unwrap()))
            .unwrap());
    }

    #[test]
    fn ranks_dense_and_sparse() {
        let dense = Ranks::new([5, 3, 4].into_iter());
        assert_eq!(
            (dense.of(3), dense.of(4), dense.of(5), dense.of(6)),
            (Some(1), Some(2), Some(0), None)
        );
        let sparse = Ranks::new([1 << 40, 7, -3].into_iter());
        assert_eq!(
            (
                sparse.of(7),
                sparse.of(-3),
                sparse.of(1 << 40),
                sparse.of(8)
            ),
            (Some(1), Some(2), Some(0), None)
        );
        assert_eq!(Ranks::new([].into_iter()).of(0), None);
    }

    /// Ranks from storage order and wanted order are those of the schedule they make.
    #[test]
    fn ranks_of_rows_are_the_schedules() {
        for rowids in [vec![3, 4, 5, 9, 10], vec![-3, 7, 1 << 40]] {
            let n = rowids.len() as u32;
            let order: Vec<u32> = (0..n).map(|r| (r * 2 + 1) % n).collect();
            let of_rows = Ranks::of_rows(&rowids, &order);
            let schedule = Ranks::new(order.iter().map(|&at| rowids[at as usize]));
            assert_eq!(of_rows.len(), schedule.len());
            for id in rowids.iter().copied().chain([0, 8, 11]) {
                assert_eq!(of_rows.of(id), schedule.of(id), "{id}");
            }
        }
    }
}
