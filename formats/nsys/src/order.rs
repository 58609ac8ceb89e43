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
    /// Held while one table's keys are sorted (40 bytes a row for the time of the sort): the
    /// readers of the big tables start together, and their sorts at once were the import's
    /// peak memory. The first scan, which finds most tables in order, runs without it.
    sorting: std::sync::Mutex<()>,
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
/// The second scan and the sort hold `sorting`, so that one table at a time holds its keys.
pub fn storage_order(
    conn: &Connection,
    table: &Table,
    ts: &str,
    end: Option<&str>,
    sorting: &std::sync::Mutex<()>,
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
    let _one_at_a_time = sorting.lock().unwrap_or_else(|p| p.into_inner());
    // Sized from SQLite's count of the b-tree's cells, which reads pages but decodes no record
    // (vectors grown by doubling held up to twice the keys at the import's peak); a scan that
    // reads another number of rows saw the table change.
    let count: usize = conn
        .query_row(
            &format!("SELECT count(*) FROM {}", table.sql_name()),
            [],
            |r| r.get(0),
        )
        .unwrap_or(0);
    // the keys, with positions in storage order instead of rowids (the same order), and the
    // rows that sort before the previous one
    let mut keys: Vec<Key> = Vec::with_capacity(count);
    let mut rowids: Vec<i64> = Vec::with_capacity(count);
    let mut breaks = 0usize;
    let mut prev: Option<Key> = None;
    let whole = scan(&mut |mut k| {
        breaks += usize::from(prev.is_some_and(|p| k < p));
        prev = Some(k);
        rowids.push(k.rowid);
        k.rowid = keys.len() as i64;
        keys.push(k);
        true
    })?;
    if !whole || keys.len() != count {
        return Ok(Order::Unsorted); // changed under us
    }
    let rows = keys.len();
    keys.sort_unstable();
    // rows read but not yet handed on, at the worst moment
    let mut read = 0usize;
    let mut depth = 0usize;
    for (sent, k) in keys.iter().enumerate() {
        read = read.max(k.rowid as usize + 1);
        depth = depth.max(read - sent);
    }
    if depth > MAX_DEPTH || breaks > rows / 8 {
        let ranks = Ranks::new(keys.iter().map(|k| rowids[k.rowid as usize]));
        return Ok(Order::Shuffled(Arc::new(ranks)));
    }
    let schedule = keys.iter().map(|k| rowids[k.rowid as usize]).collect();
    Ok(Order::Near(Arc::new(NearlySorted { schedule, depth })))
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
