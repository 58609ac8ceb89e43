//! Streams: one SQL query per kind of row, each returning rows in the IR's total order, merged
//! by [`crate::merge`]. A table whose rows are already in time order (most nsys exports) is
//! read as stored; one stored close to time order (thread after thread) is read as stored and
//! reordered by tracex in a small window; otherwise SQLite sorts it (spilling to temporary
//! files). Which is decided on the stream's own reader thread, by [`crate::order::Orders`].

use std::sync::Arc;

use rusqlite::types::Value as SqlValue;
use rusqlite::Connection;
use tracex_ir::{Result, StrId};

use crate::catalogue::{CpuTable, GpuTable, How, InstantTable};
use crate::db::{Schema, Table};
use crate::diag::record_rows;
use crate::join::LaunchJoin;
use crate::options::{Activities, Activity};
use crate::order::{NearlySorted, Order, OrderCheck, Orders};
use crate::scan::ScanSpec;
use crate::shuffle::Ranks;
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

/// A query in two forms: a plain scan (when its driving table is stored in time order) and
/// one with `ORDER BY`.
#[derive(Clone, Debug)]
pub struct Query {
    pub scan: String,
    pub sort: String,
    pub check: Option<OrderCheck>,
    pub params: Vec<SqlValue>,
    /// The scan as the page reader runs it, when it is a plain one ([`crate::pages`]).
    pub spec: Option<ScanSpec>,
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
            spec: None,
        }
    }

    /// With `spec`: the scan is `SELECT rowid, <spec's columns> FROM <spec's table>` (and its
    /// filter), which the page reader may run instead of SQLite.
    pub fn with_spec(mut self, spec: ScanSpec) -> Query {
        self.spec = Some(spec);
        self
    }

    /// The page reader's form of `sql`, when `sql` is this query's scan and it has one.
    pub fn spec_for(&self, sql: &str) -> Option<&ScanSpec> {
        self.spec
            .as_ref()
            .filter(|_| std::ptr::eq(sql, self.scan.as_str()))
    }

    /// Columns `cols` (after the rowid) of `table` in time order of its column `ts`.
    pub fn columns_by_time(table: &Table, ts: &'static str, cols: &[&str]) -> Query {
        let select = format!(
            "SELECT rowid, {} FROM {}",
            table.select_list(cols),
            table.sql_name()
        );
        Query::by_time(table, ts, select).with_spec(ScanSpec::new(table, cols))
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
            Order::Shuffled(ranks) => Plan::Shuffle(&self.scan, ranks.clone()),
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
    /// This scan gives them far from order: a reader puts them in the order of the schedule
    /// (the rank of every rowid) through [`crate::shuffle`].
    Shuffle(&'a str, Arc<Ranks>),
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
    let (n, first) = crate::scan::rows(conn, t)?;
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
