//! Streams: one SQL query per kind of row, each returning rows in the IR's total order, merged
//! by [`crate::merge`]. A table whose rows are already in time order (most nsys exports) is
//! read as stored; one stored close to time order (thread after thread) is read as stored and
//! reordered by tracex in a small window; otherwise SQLite sorts it (spilling to temporary
//! files). Which is decided on the stream's own reader thread, by [`storage_order`].

use std::sync::{Arc, OnceLock};

use rusqlite::types::{Value as SqlValue, ValueRef};
use rusqlite::Connection;
use rustc_hash::FxHashMap;
use tracex_ir::{Location, Result, StrId};

use crate::catalogue::{CpuTable, GpuTable, How, InstantTable};
use crate::db::{sqlite_error, Schema, Table};
use crate::diag::record_rows;
use crate::join::LaunchJoin;
use crate::options::{Activities, Activity};
use crate::spool::Spool;
use tracex_ir::{Defs, Diagnostics};

/// How the rows of a stream become events.
#[derive(Clone, Debug)]
pub enum Kind {
    /// CUDA runtime/driver API calls.
    CudaApi,
    /// Other CPU-side ranges on thread tracks (OS runtime, cuBLAS, MPI, ...).
    Cpu(Box<CpuPlan>),
    /// GPU work on stream tracks.
    Gpu(&'static GpuTable),
    /// CUDA event completions (instants on stream tracks).
    CudaEvent,
    /// Flow starts: an API call that launched GPU work of table `src`.
    Launch {
        src: u8,
    },
    /// NVTX push/pop ranges; `emit` false when they are read only for `nvtx-kernel`.
    NvtxPushPop {
        emit: bool,
    },
    NvtxStartEnd,
    NvtxMark,
    /// NVTX ranges projected onto GPU time (`nvtx-kernel`).
    Projection,
    Sample,
    Sched,
    GpuMetric,
    MemoryUsage,
    /// Rows shown as instants on a process track (page faults, memory pools, nsys diagnostics).
    Instant(&'static InstantTable),
}

/// The argument columns of one CPU table as present in the file, with their keys interned.
#[derive(Clone, Debug)]
pub struct CpuPlan {
    pub spec: &'static CpuTable,
    pub args: Vec<(StrId, How)>,
    pub has_chain: bool,
}

/// The table whose storage order decides whether a query must sort.
#[derive(Clone, Debug)]
pub struct OrderCheck {
    pub table: Table,
    pub ts: &'static str,
    pub end: Option<&'static str>,
}

/// A query in two forms: a plain scan (when its driving table is stored in time order) and
/// one with `ORDER BY`.
#[derive(Clone, Debug)]
pub struct Query {
    pub scan: String,
    pub sort: String,
    pub check: Option<OrderCheck>,
    pub params: Vec<SqlValue>,
}

impl Query {
    /// `sql(sorted)` for both cases; the order of `table`'s `ts` (and `end`) decides.
    pub fn ordered(
        table: &Table,
        ts: &'static str,
        end: Option<&'static str>,
        sql: impl Fn(bool) -> String,
    ) -> Query {
        Query {
            scan: sql(true),
            sort: sql(false),
            check: Some(OrderCheck {
                table: table.clone(),
                ts,
                end,
            }),
            params: Vec::new(),
        }
    }

    /// Columns `cols` (after the rowid) of `table` in time order of its column `ts`.
    pub fn columns_by_time(table: &Table, ts: &'static str, cols: &[&str]) -> Query {
        let select = format!(
            "SELECT rowid, {} FROM {}",
            table.select_list(cols),
            table.sql_name()
        );
        Query::by_time(table, ts, select)
    }

    /// `select` (a query without ORDER BY) in time order of one column `ts` of `table`.
    pub fn by_time(table: &Table, ts: &'static str, select: String) -> Query {
        let keys = format!("{}, rowid", table.col(ts));
        Query::ordered(table, ts, None, |sorted| {
            format!("{select}{}", order_by(sorted, &keys))
        })
    }

    /// The SQL to run on `conn`: the scan when the driving table is in order, else the sort.
    pub fn sql(&self, conn: &Connection, orders: &Orders) -> &str {
        match &self.check {
            Some(c) if orders.is_time_ordered(conn, c) => &self.scan,
            _ => &self.sort,
        }
    }

    /// How to read the rows in order on `conn`: [`Query::sql`], or the scan reordered.
    pub fn plan(&self, conn: &Connection, orders: &Orders) -> Plan<'_> {
        let Some(c) = &self.check else {
            return Plan::Sql(&self.sort);
        };
        match &*orders.order(conn, c) {
            Order::Sorted => Plan::Sql(&self.scan),
            Order::Near(near) => Plan::Reorder(&self.scan, near.clone()),
            Order::Unsorted => Plan::Sql(&self.sort),
        }
    }
}

/// How a reader reads a query's rows in order.
pub enum Plan<'a> {
    /// This SQL gives them in order.
    Sql(&'a str),
    /// This scan gives them nearly in order: a reader keeps [`NearlySorted::depth`] rows at
    /// most, to hand them on in the order of [`NearlySorted::schedule`].
    Reorder(&'a str, Arc<NearlySorted>),
}

/// How a table's rows are stored, against the order of a time column (and an end column).
pub enum Order {
    Sorted,
    Near(Arc<NearlySorted>),
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
            Arc::new(storage_order(conn, &c.table, c.ts, c.end).unwrap_or(Order::Unsorted))
        })
        .clone()
    }

    /// Whether `c.table` is stored in time order.
    pub fn is_time_ordered(&self, conn: &Connection, c: &OrderCheck) -> bool {
        matches!(*self.order(conn, c), Order::Sorted)
    }
}

/// Where a stream's rows come from.
pub enum Source {
    /// A query, run on the stream's own reader thread.
    Query(Query),
    /// A spool that a producer thread writes (the nvtx-kernel pass).
    Spool(Arc<Spool>),
    /// The launch join, run on the stream's own reader thread.
    Join(LaunchJoin),
}

/// One stream feeding the merge.
pub struct StreamDef {
    /// For error locations.
    pub table: String,
    pub source: Source,
    pub kind: Kind,
    /// Skip a row whose rowid equals the previous row's (a join that matched twice).
    pub unique_rowid: bool,
}

impl StreamDef {
    pub fn new(table: &Table, query: Query, kind: Kind) -> StreamDef {
        StreamDef {
            table: table.name.clone(),
            source: Source::Query(query),
            kind,
            unique_rowid: false,
        }
    }

    /// The launches of `join`.
    pub fn joined(join: LaunchJoin, kind: Kind) -> StreamDef {
        StreamDef {
            table: join.api_table().name.clone(),
            source: Source::Join(join),
            kind,
            unique_rowid: false,
        }
    }

    /// A stream read from `spool`.
    pub fn spooled(table: &str, spool: Arc<Spool>, kind: Kind) -> StreamDef {
        StreamDef {
            table: table.to_string(),
            source: Source::Spool(spool),
            kind,
            unique_rowid: false,
        }
    }
}

/// `" ORDER BY ..."` for a table not stored in time order, else nothing: a full scan returns
/// rows in rowid order, which the caller has checked to be time order.
pub fn order_by(sorted: bool, keys: &str) -> String {
    if sorted {
        String::new()
    } else {
        format!(" ORDER BY {keys}")
    }
}

/// The usual sort keys: `start`, then open ranges, then longer ranges first, then rowid.
pub fn range_order(t: &Table, alias: &str) -> String {
    format!(
        "{a}{s}, {a}{e} IS NOT NULL, {a}{e} DESC, {a}rowid",
        a = alias,
        s = t.col("start"),
        e = t.col("end")
    )
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
/// cheaper than the sort it saves. A table out of order but close to it gets a second scan
/// that sorts the keys in memory (32 bytes a row, for the time of the sort) and keeps the
/// rowids in order (8 bytes a row): SQLite's sorter took a sixth of such an import. Any `ts`
/// or `end` that is not an integer (or NULL end) gives [`Order::Unsorted`]: SQLite sorts.
pub fn storage_order(
    conn: &Connection,
    table: &Table,
    ts: &str,
    end: Option<&str>,
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
    let at = Location::Row {
        table: table.name.clone(),
        rowid: 0,
    };
    let err = |e| sqlite_error(at.clone(), "cannot read", e);
    let mut stmt = conn.prepare(&sql).map_err(err)?;
    let mut scan = |f: &mut dyn FnMut(Key) -> bool| scan_keys(&mut stmt, &err, f);
    // rows that sort before the previous one
    let mut breaks = 0usize;
    let mut rows = 0usize;
    let mut prev: Option<Key> = None;
    let whole = scan(&mut |k| {
        breaks += usize::from(prev.is_some_and(|p| k < p));
        prev = Some(k);
        rows += 1;
        true
    })?;
    if !whole || breaks > rows / 8 {
        return Ok(Order::Unsorted);
    }
    if breaks == 0 {
        return Ok(Order::Sorted);
    }
    // the keys, with positions in storage order instead of rowids (the same order)
    let mut keys: Vec<Key> = Vec::with_capacity(rows);
    let mut rowids: Vec<i64> = Vec::with_capacity(rows);
    let whole = scan(&mut |mut k| {
        rowids.push(k.rowid);
        k.rowid = keys.len() as i64;
        keys.push(k);
        true
    })?;
    if !whole || keys.len() != rows {
        return Ok(Order::Unsorted); // changed under us
    }
    keys.sort_unstable();
    // rows read but not yet handed on, at the worst moment
    let mut read = 0usize;
    let mut depth = 0usize;
    for (sent, k) in keys.iter().enumerate() {
        read = read.max(k.rowid as usize + 1);
        depth = depth.max(read - sent);
    }
    if depth > MAX_DEPTH {
        return Ok(Order::Unsorted);
    }
    let schedule = keys.iter().map(|k| rowids[k.rowid as usize]).collect();
    Ok(Order::Near(Arc::new(NearlySorted { schedule, depth })))
}

/// Hands the keys of `stmt`'s rows (rowid, ts, end) to `f` until it returns false; false when
/// a value is not an integer (or a NULL end).
fn scan_keys(
    stmt: &mut rusqlite::Statement,
    err: &dyn Fn(rusqlite::Error) -> tracex_ir::Error,
    f: &mut dyn FnMut(Key) -> bool,
) -> Result<bool> {
    let mut rows = stmt.query([]).map_err(err)?;
    while let Some(row) = rows.next().map_err(err)? {
        let (ValueRef::Integer(rowid), ValueRef::Integer(ts)) =
            (row.get_ref(0).map_err(err)?, row.get_ref(1).map_err(err)?)
        else {
            return Ok(false);
        };
        let (closed, end) = match row.get_ref(2).map_err(err)? {
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

/// Whether `t` has the columns tracex needs; counts the rows of an unusable table.
pub fn usable(
    t: &Table,
    needed: &[&str],
    diag: &mut Diagnostics,
    conn: &Connection,
) -> Result<bool> {
    let missing = t.missing(needed);
    if missing.is_empty() {
        return Ok(true);
    }
    let (n, first) = rows_where(conn, t, "1")?;
    record_rows(
        diag,
        &crate::diag::TABLE_UNUSABLE,
        &t.name,
        (n.max(1), first),
        Some(format!("{} has no column {}", t.name, missing.join(", "))),
    );
    Ok(false)
}

/// What the modules that plan streams work with: the file, the definitions, the streams so far.
pub struct Setup<'a> {
    pub conn: &'a Connection,
    pub schema: &'a Schema,
    pub defs: &'a mut Defs,
    pub diag: &'a mut Diagnostics,
    pub streams: Vec<StreamDef>,
}

impl Setup<'_> {
    /// Table `name` when `activity` is among `activities` and the file has it with the
    /// `needed` columns (an unusable one is counted).
    pub fn wanted(
        &mut self,
        activities: Activities,
        (activity, name): (Activity, &str),
        needed: &[&str],
    ) -> Result<Option<Table>> {
        if !activities.contains(activity) {
            return Ok(None);
        }
        let Some(t) = self.schema.table(name) else {
            return Ok(None);
        };
        Ok(usable(&t, needed, self.diag, self.conn)?.then_some(t))
    }
}

/// How many rows of `table` match `filter` (SQL), and the rowid of the first one.
pub fn rows_where(conn: &Connection, table: &Table, filter: &str) -> Result<(u64, i64)> {
    let name = table.sql_name();
    // a bare count(*) counts the b-tree's cells without decoding a row, and min(rowid) is one
    // seek: together about a quarter of the cost of one query that filters (1M rows: 30 ms
    // against 130 ms)
    let sql = match filter {
        "1" => format!(
            "SELECT (SELECT count(*) FROM {name}), (SELECT coalesce(min(rowid), 0) FROM {name})"
        ),
        _ => format!("SELECT count(*), coalesce(min(rowid), 0) FROM {name} WHERE {filter}"),
    };
    conn.query_row(&sql, [], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))
        .map(|(n, first)| (n.max(0) as u64, first))
        .map_err(|e| {
            sqlite_error(
                Location::Row {
                    table: table.name.clone(),
                    rowid: 0,
                },
                "cannot count rows",
                e,
            )
        })
}

/// The number of rows of a table (for progress and accounting).
pub fn row_count(conn: &Connection, table: &Table) -> Result<u64> {
    rows_where(conn, table, "1").map(|(n, _)| n)
}
