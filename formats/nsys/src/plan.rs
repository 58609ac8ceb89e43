//! Streams: one SQL query per kind of row, each returning rows in the IR's total order, merged
//! by [`crate::merge`]. A table whose rows are already in time order (most nsys exports) is
//! read as stored; otherwise SQLite sorts it (spilling to temporary files). Which of the two
//! is decided on the stream's own reader thread, by [`is_time_ordered`].

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

    /// The SQL to run on `conn`: the scan when the driving table is in order.
    pub fn sql(&self, conn: &Connection, orders: &Orders) -> &str {
        match &self.check {
            Some(c) if orders.is_time_ordered(conn, c) => &self.scan,
            _ => &self.sort,
        }
    }
}

/// Which tables are stored in time order, found once per table and time column and shared by
/// the reader threads (the first to ask checks; the others wait for its answer).
#[derive(Default)]
pub struct Orders {
    cells: std::sync::Mutex<FxHashMap<OrderOf, Arc<OnceLock<bool>>>>,
}

/// A table and its time column.
type OrderOf = (String, &'static str);

impl Orders {
    /// Whether `c.table` is in order; a table that cannot be read is taken as unordered (the
    /// sorting query will report the problem).
    pub fn is_time_ordered(&self, conn: &Connection, c: &OrderCheck) -> bool {
        let cell = {
            let mut cells = self.cells.lock().unwrap_or_else(|p| p.into_inner());
            cells
                .entry((c.table.name.clone(), c.ts))
                .or_default()
                .clone()
        };
        *cell.get_or_init(|| is_time_ordered(conn, &c.table, c.ts, c.end).unwrap_or(false))
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

/// Whether `table`'s rows, in rowid order, are in the IR order: `ts` ascending and, at equal
/// `ts`, `end` descending with NULL (an open range) first. One scan of two columns, much
/// cheaper than the sort it saves. Any value that is not an integer answers "no".
pub fn is_time_ordered(
    conn: &Connection,
    table: &Table,
    ts: &str,
    end: Option<&str>,
) -> Result<bool> {
    if !table.has(ts) {
        return Ok(false);
    }
    let end_expr = match end {
        Some(e) => table.col(e),
        None => "NULL".into(),
    };
    let sql = format!(
        "SELECT {}, {end_expr} FROM {}",
        table.col(ts),
        table.sql_name()
    );
    let at = Location::Row {
        table: table.name.clone(),
        rowid: 0,
    };
    let err = |e| sqlite_error(at.clone(), "cannot read", e);
    let mut stmt = conn.prepare(&sql).map_err(err)?;
    let mut rows = stmt.query([]).map_err(err)?;
    // (ts, end) with an open end as +inf; ordered iff ts rises, or ts ties and end falls.
    let mut prev: Option<(i64, i64)> = None;
    while let Some(row) = rows.next().map_err(err)? {
        let ValueRef::Integer(t) = row.get_ref(0).map_err(err)? else {
            return Ok(false);
        };
        let e = match row.get_ref(1).map_err(err)? {
            ValueRef::Null => i64::MAX,
            ValueRef::Integer(e) => e,
            _ => return Ok(false),
        };
        if let Some((pt, pe)) = prev {
            if t < pt || (t == pt && e > pe) {
                return Ok(false);
            }
        }
        prev = Some((t, e));
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
