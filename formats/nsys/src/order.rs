//! How a table is stored against time order, found once per table and shared by the reader
//! threads: in order (a plain scan will do), close to it (a scan reordered in a small window), or
//! not (SQLite sorts).

use std::sync::{Arc, OnceLock};

use rusqlite::types::ValueRef;
use rusqlite::Connection;
use rustc_hash::FxHashMap;
use tracex_ir::Result;

use crate::db::Table;
use crate::scan::{ScanRows, ScanSpec};
use crate::shuffle::Ranks;

/// The table whose storage order decides whether a query must sort.
#[derive(Clone, Debug)]
pub struct OrderCheck {
    pub table: Table,
    pub ts: &'static str,
    pub end: Option<&'static str>,
}

/// How a table's rows are stored, against the order of a time column (and an end column).
pub enum Order {
    Sorted,
    Near(Arc<NearlySorted>),
    /// Far from time order, with integer keys: every rowid in the queries' order
    /// ([`crate::shuffle`] puts the rows in it).
    Shuffled(Arc<Ranks>),
    /// With a time or end that is not an integer: SQLite sorts.
    Unsorted,
}

/// A table stored close to time order (rows written thread after thread): every rowid in
/// the queries' order, and how many rows a scan must hold back to give them in that order.
pub struct NearlySorted {
    pub schedule: Vec<i64>,
    pub depth: usize,
}

/// Rows a reader may hold back to reorder a table (beyond it, SQLite sorts): a few MB.
const MAX_DEPTH: usize = 1 << 14;

/// Which tables are stored in time order, found once per table and time column and shared by
/// the reader threads (the first to ask checks; the others wait for its answer).
#[derive(Default)]
pub struct Orders {
    cells: std::sync::Mutex<FxHashMap<OrderOf, Arc<OnceLock<Arc<Order>>>>>,
    /// The rows whose keys are being sorted (about 40 bytes a row for the time of the sort):
    /// the readers of the big tables start together, and all their sorts at once were the
    /// import's peak memory. The first scan, which finds most tables in order, runs without it.
    sorting: SortRoom,
}

/// Rows whose keys may be held for sorting at once ([`SortRoom`]): two 1M-row tables, about
/// 80 MB. Sorting one table after the other had one core idle for 150 ms while the merge
/// waited (an export of 1M kernels and 1M API calls not in time order).
const SORT_ROWS: u64 = 2 << 20;

/// How many rows' keys are held for sorting; a table waits while its rows would take the
/// total past [`SORT_ROWS`] (one bigger than that runs alone).
#[derive(Default)]
struct SortRoom {
    rows: std::sync::Mutex<u64>,
    freed: std::sync::Condvar,
}

impl SortRoom {
    /// Waits for room for `rows` rows; the room is given back when the guard is dropped.
    fn take(&self, rows: u64) -> SortGuard<'_> {
        let mut held = self.rows.lock().unwrap_or_else(|p| p.into_inner());
        while *held > 0 && *held + rows > SORT_ROWS {
            held = self.freed.wait(held).unwrap_or_else(|p| p.into_inner());
        }
        *held += rows;
        SortGuard { room: self, rows }
    }
}

struct SortGuard<'a> {
    room: &'a SortRoom,
    rows: u64,
}

impl Drop for SortGuard<'_> {
    fn drop(&mut self) {
        let mut held = self.room.rows.lock().unwrap_or_else(|p| p.into_inner());
        *held -= self.rows;
        self.room.freed.notify_all();
    }
}

/// A table, its time column and its end column.
type OrderOf = (String, &'static str, Option<&'static str>);

impl Orders {
    /// How `c.table` is stored; a table that cannot be read is taken as unordered (the sorting
    /// query will report the problem).
    pub fn order(&self, conn: &Connection, c: &OrderCheck) -> Arc<Order> {
        let cell = {
            let mut cells = self.cells.lock().unwrap_or_else(|p| p.into_inner());
            cells
                .entry((c.table.name.clone(), c.ts, c.end))
                .or_default()
                .clone()
        };
        cell.get_or_init(|| {
            let order = storage_order(conn, &c.table, c.ts, c.end, &self.sorting);
            Arc::new(order.unwrap_or(Order::Unsorted))
        })
        .clone()
    }

    /// Whether `c.table` is stored in time order.
    pub fn is_time_ordered(&self, conn: &Connection, c: &OrderCheck) -> bool {
        matches!(*self.order(conn, c), Order::Sorted)
    }
}

/// The sort key of a row, in the order of the queries' `ORDER BY`: `ts`; then, with an end
/// column, an open range (NULL end) first and longer ranges first ([`range_order`]); then rowid.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    ts: i64,
    closed: bool,
    neg_end: std::cmp::Reverse<i64>,
    rowid: i64,
}

/// How `table`'s rows, in rowid order, stand against the IR order: `ts` ascending and, at equal
/// `ts`, `end` descending with NULL (an open range) first. One scan of two columns, much
/// cheaper than the sort it saves, which stops at the first row out of order. A table out of
/// order but close to it gets a second scan that sorts the keys in memory (32 bytes a row, for
/// the time of the sort) and keeps the rowids in order (8 bytes a row): SQLite's sorter took a
/// sixth of such an import. A table far from order gets the same, for [`crate::shuffle`]. Any
/// `ts` or `end` that is not an integer (or NULL end) gives [`Order::Unsorted`]: SQLite sorts.
/// The second scan and the sort take room in `sorting`, so that few tables at a time hold
/// their keys.
fn storage_order(
    conn: &Connection,
    table: &Table,
    ts: &str,
    end: Option<&str>,
    sorting: &SortRoom,
) -> Result<Order> {
    if !table.has(ts) {
        return Ok(Order::Unsorted);
    }
    let end_expr = match end {
        Some(e) => table.col(e),
        None => "NULL".into(),
    };
    let sql = format!(
        "SELECT rowid, {}, {end_expr} FROM {}",
        table.col(ts),
        table.sql_name()
    );
    let spec = ScanSpec::new(table, &[ts, end.unwrap_or("")]);
    let scan = |f: &mut dyn FnMut(Key) -> bool| {
        let mut stmt = None;
        let doing = (table.name.as_str(), "cannot read");
        let mut rows = ScanRows::open(conn, (&sql, &[]), Some(&spec), &mut stmt, doing)?;
        scan_keys(&mut rows, f)
    };
    // the first scan stops at the first row that sorts before the previous one: most tables
    // are in order and are read to the end; a table out of order is known after a few rows,
    // and the second scan below reads its keys (and counts its breaks) anyway
    let mut prev: Option<Key> = None;
    let mut ordered = true;
    let whole = scan(&mut |k| {
        ordered = prev.is_none_or(|p| p <= k);
        prev = Some(k);
        ordered
    })?;
    if !whole {
        return Ok(Order::Unsorted);
    }
    if ordered {
        return Ok(Order::Sorted);
    }
    // Sized from the count of the b-tree's cells, which decodes no record (vectors grown by
    // doubling held up to twice the keys at the import's peak); a scan that reads another
    // number of rows saw the table change.
    let count = crate::scan::row_count(conn, table)?;
    let _room = sorting.take(count);
    let count = usize::try_from(count).unwrap_or(usize::MAX);
    // the keys, with positions in storage order instead of rowids (the same order), and the
    // rows that sort before the previous one
    let mut keys = Keys::with_capacity(count);
    let mut rowids: Vec<i64> = Vec::with_capacity(count);
    let mut breaks = 0usize;
    let mut prev: Option<Key> = None;
    let whole = scan(&mut |mut k| {
        breaks += usize::from(prev.is_some_and(|p| k < p));
        prev = Some(k);
        rowids.push(k.rowid);
        k.rowid = rowids.len() as i64 - 1;
        keys.push(k);
        true
    })?;
    if !whole || rowids.len() != count {
        return Ok(Order::Unsorted); // changed under us
    }
    let rows = rowids.len();
    let order = keys.sorted_positions();
    // rows read but not yet handed on, at the worst moment
    let mut read = 0usize;
    let mut depth = 0usize;
    for (sent, &at) in order.iter().enumerate() {
        read = read.max(at as usize + 1);
        depth = depth.max(read - sent);
    }
    if depth > MAX_DEPTH || breaks > rows / 8 {
        let ranks = Ranks::of_rows(&rowids, &order);
        return Ok(Order::Shuffled(Arc::new(ranks)));
    }
    let schedule = order.iter().map(|&at| rowids[at as usize]).collect();
    Ok(Order::Near(Arc::new(NearlySorted { schedule, depth })))
}

/// The keys of a table's rows (their `rowid` the position in storage order), packed in 16
/// bytes while they fit ([`pack`]): sorting packed keys compares and moves half the bytes, and
/// the sort of a shuffled table's keys ran alone at the start of its import.
enum Keys {
    Packed(Vec<u128>),
    Full(Vec<Key>),
}

impl Keys {
    fn with_capacity(n: usize) -> Keys {
        Keys::Packed(Vec::with_capacity(n))
    }

    fn push(&mut self, k: Key) {
        if let Keys::Packed(packed) = self {
            match pack(&k) {
                Some(p) => return packed.push(p),
                None => *self = Keys::Full(packed.iter().map(|&p| unpack(p)).collect()),
            }
        }
        if let Keys::Full(keys) = self {
            keys.push(k);
        }
    }

    /// The positions of the rows in key order.
    fn sorted_positions(self) -> Vec<u32> {
        match self {
            Keys::Packed(mut packed) => {
                packed.sort_unstable();
                packed.iter().map(|&p| p as u32).collect()
            }
            Keys::Full(mut keys) => {
                keys.sort_unstable();
                keys.iter().map(|k| k.rowid as u32).collect()
            }
        }
    }
}

/// Longest closed range [`pack`] takes.
const PACKED_DUR: i64 = (1 << 31) - 1;

/// `k` as a number that sorts as `k` does, where its position fits 32 bits and a closed
/// range's length fits 31: the biased time above, then an open range (0) before a closed one
/// (1), longer ranges first, and the position. `None` for any other key.
fn pack(k: &Key) -> Option<u128> {
    let at = u32::try_from(k.rowid).ok()?;
    let time = u128::from((k.ts as u64) ^ (1 << 63)) << 64;
    let range = match k.closed {
        false => 0,
        true => {
            let dur = k.neg_end.0.checked_sub(k.ts)?;
            if !(0..=PACKED_DUR).contains(&dur) {
                return None;
            }
            1 << 63 | ((PACKED_DUR - dur) as u128) << 32
        }
    };
    Some(time | range | u128::from(at))
}

/// The key [`pack`] packed.
fn unpack(p: u128) -> Key {
    let ts = ((p >> 64) as u64 ^ (1 << 63)) as i64;
    let closed = (p >> 63) & 1 == 1;
    let end = match closed {
        false => 0,
        true => ts + (PACKED_DUR - ((p >> 32) as i64 & PACKED_DUR)),
    };
    Key {
        ts,
        closed,
        neg_end: std::cmp::Reverse(end),
        rowid: i64::from(p as u32),
    }
}

/// Hands the keys of `stmt`'s rows (rowid, ts, end) to `f` until it returns false; false when
/// a value is not an integer (or a NULL end).
fn scan_keys(rows: &mut ScanRows, f: &mut dyn FnMut(Key) -> bool) -> Result<bool> {
    while let Some(row) = rows.next()? {
        let (ValueRef::Integer(rowid), ValueRef::Integer(ts)) = (row.get(0), row.get(1)) else {
            return Ok(false);
        };
        let (closed, end) = match row.get(2) {
            ValueRef::Null => (false, 0),
            ValueRef::Integer(e) => (true, e),
            _ => return Ok(false),
        };
        let key = Key {
            ts,
            closed,
            neg_end: std::cmp::Reverse(end),
            rowid,
        };
        if !f(key) {
            break;
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(ts: i64, end: Option<i64>, at: i64) -> Key {
        Key {
            ts,
            closed: end.is_some(),
            neg_end: std::cmp::Reverse(end.unwrap_or(0)),
            rowid: at,
        }
    }

    /// Tables take room for their rows' keys up to the limit, a table bigger than the limit
    /// takes it alone, and room given back lets a waiting table go on.
    #[test]
    fn sort_room_holds_up_to_its_rows() {
        let room = SortRoom::default();
        let held = || *room.rows.lock().unwrap();
        let a = room.take(SORT_ROWS / 2);
        let b = room.take(SORT_ROWS / 2);
        assert_eq!(held(), SORT_ROWS);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            s.spawn(|| {
                let c = room.take(1);
                tx.send(()).unwrap();
                drop(c);
            });
            // the third waits while the room is full
            assert!(rx
                .recv_timeout(std::time::Duration::from_millis(100))
                .is_err());
            drop(a);
            rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap();
        });
        drop(b);
        assert_eq!(held(), 0);
        let big = room.take(3 * SORT_ROWS);
        assert_eq!(held(), 3 * SORT_ROWS);
        drop(big);
        assert_eq!(held(), 0);
    }

    /// Packed keys sort as the keys do, and unpack to them.
    #[test]
    fn packed_keys_sort_as_keys() {
        let mut keys = Vec::new();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for at in 0..5000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // a few times, so that ties are common; negative times; ranges up to the limit
            let ts = (x % 50) as i64 * 1_000 - 20_000;
            let end = match x % 7 {
                0 => None,
                1 => Some(ts + PACKED_DUR),
                2 => Some(ts),
                _ => Some(ts + (x >> 40) as i64 % 3_000),
            };
            keys.push(key(ts, end, at));
        }
        let mut packed: Vec<u128> = keys.iter().map(|k| pack(k).unwrap()).collect();
        for (k, &p) in keys.iter().zip(&packed) {
            assert!(unpack(p) == *k);
        }
        keys.sort_unstable();
        packed.sort_unstable();
        assert!(keys.iter().zip(&packed).all(|(k, &p)| unpack(p) == *k));
        // what does not fit stays a full key
        assert_eq!(pack(&key(5, Some(5 + PACKED_DUR + 1), 0)), None);
        assert_eq!(pack(&key(5, Some(4), 0)), None);
        assert_eq!(pack(&key(5, None, 1 << 32)), None);
        assert!(pack(&key(i64::MIN, None, 0)) < pack(&key(i64::MAX, None, 0)));
    }

    /// A key that does not fit turns the packed keys into full ones, in the same order.
    #[test]
    fn keys_that_do_not_fit_are_sorted_whole() {
        let all = [
            key(30, Some(40), 0),
            key(10, None, 1),
            key(10, Some(10 + PACKED_DUR + 5), 2),
            key(10, Some(12), 3),
            key(-4, Some(1), 4),
        ];
        let mut keys = Keys::with_capacity(all.len());
        for k in all {
            keys.push(k);
        }
        assert!(matches!(keys, Keys::Full(_)));
        assert_eq!(keys.sorted_positions(), vec![4, 1, 2, 3, 0]);
        let mut keys = Keys::with_capacity(all.len());
        for k in all.iter().filter(|k| k.rowid != 2) {
            keys.push(*k);
        }
        assert!(matches!(keys, Keys::Packed(_)));
        assert_eq!(keys.sorted_positions(), vec![4, 1, 3, 0]);
    }
}
